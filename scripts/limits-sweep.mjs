// The knee limit against the anchors' limiters, each in front of simulated backends of true
// concurrency C (1 to 100) and service time S (1, 20, 200 ms) at 2x and 5x their capacity, the
// real server engine on virtual time (src/sim/limits/run.ts). Per cell and contender: when the
// limit entered [C, 1.3 C + 1] for good, goodput, admitted p99 over S, and PASS when all three
// targets hold (within 3 s or 20 x S, at least 95 %, at most 2 S). The ports' cells at
// S = 1 ms and C >= 32 are skipped (millions of requests each, and none of them passes the
// cheaper cells). Run: npm run build && node scripts/limits-sweep.mjs

import {
  envoyGradientPort,
  failsafeGoPort,
  goZeroPort,
  vegasPort,
} from '../dist/sim/limits/ports.js';
import { bandEntryMs, runLimitCell } from '../dist/sim/limits/run.js';

/** Park-Miller, seeded: the ports' jitter repeats exactly. */
function rng(seed) {
  let s = seed;
  return () => {
    s = (s * 48271) % 2147483647;
    return (s - 1) / 2147483646;
  };
}
const contenders = {
  knee: () => ({ kind: 'knee' }),
  gradient2: () => ({ kind: 'gradient2' }),
  vegas: () => () => vegasPort({ random: rng(5) }),
  envoy: () => () => envoyGradientPort({ random: rng(5) }),
  gozero: () => () => goZeroPort(),
  failsafe: () => () => failsafeGoPort(),
};
const _rows = [];
for (const C of [1, 4, 10, 32, 100])
  for (const S of [1, 20, 200])
    for (const load of [2, 5]) {
      const line = [`C=${C} S=${S} ${load}x`];
      for (const [name, make] of Object.entries(contenders)) {
        if ((C * load) / S > 60 && S === 1 && C >= 32 && name !== 'knee') {
          line.push(`${name}: skipped`);
          continue;
        }
        const durationMs = Math.max(6000, 40 * S);
        const r = runLimitCell({
          limit: make(),
          concurrency: C,
          serviceMs: S,
          load,
          durationMs,
          measureFromMs: durationMs / 2,
          seed: 1,
        });
        const entry = bandEntryMs(r.trace, C, 1.3 * C + 1);
        const ok =
          entry !== undefined &&
          entry <= Math.max(3000, 20 * S) &&
          r.goodput >= 0.95 &&
          r.admittedP99 <= 2;
        line.push(
          `${name}: ${entry === undefined ? 'never' : `${(entry / 1000).toFixed(1)}s`} ${(r.goodput * 100).toFixed(0)}% ${r.admittedP99.toFixed(1)}S ${ok ? 'PASS' : 'miss'}`,
        );
      }
      console.log(line.join(' | '));
    }
