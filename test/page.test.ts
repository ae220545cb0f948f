// The storm lab's page without a browser: its state and URL (src/page/state.ts) and what its worker
// computes (src/page/compute.ts, the module the worker runs), in Node; and the same figures as the
// CLI (`node dist/cli/main.js`, built by the suite's global setup) on the same parameters.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { answer, checkView, HERD_MAX_POINTS, herdView } from '../src/page/compute.js';
import {
  checkHerd,
  DEFAULT_STACK,
  defaultState,
  HERD_NUMBERS,
  type HerdParams,
  herdCommand,
  nearestStop,
  readHash,
  writeHash,
} from '../src/page/state.js';
import { renderChartSvg } from '../src/sim/plot.js';
import { root, runCli } from './helpers/cli.js';

const DEFAULT_HERD: HerdParams = {
  clients: 2000,
  perSlot: 25,
  slotMs: 10,
  baseMs: 200,
  capMs: 5000,
  seed: 7,
  jitter: 'full',
  pushback: 'none',
};

describe('the page state in the URL', () => {
  it('writes every input of the view by its CLI flag, and reads it back the same', () => {
    const state = {
      ...defaultState(),
      herd: { ...defaultState().herd, clients: '5000', jitter: 'equal', pushback: 'spread' },
    };
    const hash = writeHash(state);
    expect(hash).toBe(
      '#view=herd&clients=5000&per-slot=25&slot-ms=10&base-ms=200&cap-ms=5000&seed=7&jitter=equal&pushback=spread',
    );
    expect(readHash(hash)).toEqual(state);
  });

  it('keeps a typed stack exactly, spaces, newlines and mistakes included', () => {
    const stack = '{\n  "layers": [ { "name": "a & b", "attempts": 3 } ]\n} # oops';
    const state = { ...defaultState(), view: 'check' as const, stack };
    const hash = writeHash(state);
    expect(hash.startsWith('#view=check&stack=')).toBe(true);
    expect(readHash(hash)).toEqual(state);
  });

  it('fills what a link leaves out with the defaults, and ignores what it does not know', () => {
    expect(readHash('')).toEqual(defaultState());
    expect(readHash('#view=storm&nonsense=1&clients=300')).toEqual({
      ...defaultState(),
      herd: { ...defaultState().herd, clients: '300' },
    });
    expect(defaultState().stack).toBe(DEFAULT_STACK);
  });

  it('checks the herd as the CLI does, naming each wrong input', () => {
    expect(checkHerd(defaultState().herd)).toEqual({ params: DEFAULT_HERD });
    expect(checkHerd({ ...defaultState().herd, clients: '1_000', baseMs: '1e2' })).toEqual({
      params: { ...DEFAULT_HERD, clients: 1000, baseMs: 100 },
    });
    const bad = checkHerd({
      ...defaultState().herd,
      clients: '2.5',
      perSlot: '0',
      capMs: 'soon',
      jitter: 'lots',
    });
    expect(bad).toEqual({
      errors: {
        clients: 'must be an integer, got "2.5"',
        perSlot: 'must be an integer from 1 to 2147483647, got 0',
        capMs: 'must be a number, got "soon"',
        jitter: 'must be one of none, full, equal, decorrelated, band, got "lots"',
      },
    });
  });

  it("puts each slider at the stop nearest its field's value, the defaults exactly", () => {
    for (const field of HERD_NUMBERS) {
      if (field.stops.length === 0) continue;
      expect(field.stops[nearestStop(field.stops, field.default)], field.key).toBe(field.default);
    }
    expect(nearestStop([1, 10, 100], 40)).toBe(1);
  });

  it('names the CLI command that prints the same figures', () => {
    expect(herdCommand(DEFAULT_HERD, 'none')).toBe(
      'stormproof sim herd --clients 2000 --per-slot 25 --slot-ms 10 --base-ms 200 --cap-ms 5000 --seed 7 --jitter none --pushback none --json',
    );
  });
});

describe("the page's worker", () => {
  it("runs the herd without jitter beside the chosen jitter, the storm story's figures", () => {
    const view = herdView(DEFAULT_HERD);
    expect(view.runs.map((r) => [r.jitter, r.figures])).toEqual([
      ['none', { calls: 81000, busiestSlot: 1975, doneAfterSeconds: 376.21 }],
      ['full', { calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 }],
    ]);
    for (const run of view.runs) {
      const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
      expect(sum(run.served)).toBe(DEFAULT_HERD.clients);
      expect(sum(run.served) + sum(run.failed)).toBe(run.figures.calls);
    }
    // Two charts in one picture, each with the offered, succeeded and failed lines.
    expect(view.svg.match(/<g class="chart"/g)).toHaveLength(2);
    expect(view.svg).toContain('jitter none: 81,000 calls, busiest 1,975, 376.21 s');
    expect(view.svg.match(/data-series="failed"/g)?.length).toBeGreaterThanOrEqual(2);
  });

  it("thins a long herd's lines to the busiest slot of each stretch, and still draws them", () => {
    const view = herdView({ ...DEFAULT_HERD, clients: 20_000, jitter: 'none' });
    const run = view.runs[0];
    expect(run.slots).toBeGreaterThan(HERD_MAX_POINTS);
    expect(run.slotsPerPoint).toBeGreaterThan(1);
    expect(run.offered).toHaveLength(Math.ceil(run.slots / run.slotsPerPoint));
    // The first point holds slot 0, where every client calls; the busiest later slot is kept too.
    expect(run.offered[0]).toBe(20_000);
    expect(Math.max(...run.offered.slice(1))).toBe(run.figures.busiestSlot);
    expect(view.svg).toContain(`busiest of ${run.slotsPerPoint}`);
  });

  it('draws a line of a million points (Math.min(...x) overflowed the stack of a Web Worker)', () => {
    const x = Array.from({ length: 1_000_000 }, (_, i) => i);
    const svg = renderChartSvg({
      kind: 'line',
      title: 'long',
      xLabel: 'x',
      yLabel: 'y',
      x,
      lines: [{ label: 'a', y: x.map((v) => v % 7) }],
    });
    expect(svg).toContain('<polyline class="series"');
  });

  it('compares full jitter with none when none is chosen', () => {
    const view = herdView({ ...DEFAULT_HERD, jitter: 'none' });
    expect(view.runs.map((r) => r.jitter)).toEqual(['none', 'full']);
  });

  it('draws an empty herd without failing', () => {
    const view = herdView({ ...DEFAULT_HERD, clients: 0 });
    expect(view.runs.map((r) => r.figures.calls)).toEqual([0, 0]);
    expect(view.svg).toContain('<svg');
  });

  it('checks a stack and draws the calls each layer receives', () => {
    const view = checkView(DEFAULT_STACK);
    expect(view.ok).toBe(true);
    if (!view.ok) return;
    expect(view.name).toBe('The weather API before the fix');
    expect(view.json.worstCaseBottomCalls).toBe(64);
    expect(view.json.layers.map((l) => l.worstCaseCallsReceived)).toEqual([1, 4, 16]);
    expect(view.svg.match(/<rect class="bar"/g)).toHaveLength(4);
    expect(view.svg).toContain('data-bar="the service"');
  });

  it('says why a stack is refused, as the CLI does', () => {
    expect(checkView('{')).toEqual({
      ok: false,
      error: expect.stringMatching(/^not valid JSON: /),
    });
    expect(checkView('{"layers": [{"name": "a", "atempts": 3}]}')).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^stack layers\[0\] has no field "atempts" \(did you mean "attempts"\?\); /,
      ),
    });
  });

  it('answers each question with its id, and an error as an answer', () => {
    expect(answer({ id: 3, kind: 'check', stack: '[]' })).toMatchObject({ id: 3, kind: 'check' });
    const herd = answer({ id: 4, kind: 'herd', params: { ...DEFAULT_HERD, clients: 10 } });
    expect(herd).toMatchObject({ id: 4, kind: 'herd' });
    const broken = answer({ id: 5, kind: 'herd', params: { ...DEFAULT_HERD, perSlot: 0 } });
    expect(broken).toMatchObject({
      id: 5,
      kind: 'error',
      message: expect.stringContaining('perSlot'),
    });
  });
});

/** Compares the page's figures with the CLI's JSON key by key, naming the key that differs. */
function sameFields(what: string, page: object, cli: object): void {
  const keys = [...new Set([...Object.keys(page), ...Object.keys(cli)])].sort();
  for (const key of keys) {
    expect((page as Record<string, unknown>)[key], `${what}: ${key}`).toStrictEqual(
      (cli as Record<string, unknown>)[key],
    );
  }
  expect(page, what).toStrictEqual(cli);
}

/** The CLI's `--json` output, parsed; fails on any other exit code than 0. */
async function cliJson(args: readonly string[]): Promise<object> {
  const ran = await runCli(args);
  expect(ran.code, `${args.join(' ')}: ${ran.stderr}`).toBe(0);
  return JSON.parse(ran.stdout);
}

describe('the same figures as the CLI', () => {
  const HERDS: readonly HerdParams[] = [
    DEFAULT_HERD,
    { ...DEFAULT_HERD, jitter: 'none', clients: 500, perSlot: 10 },
    { ...DEFAULT_HERD, jitter: 'equal', pushback: 'spread', seed: 3 },
    { ...DEFAULT_HERD, jitter: 'decorrelated', pushback: 'load-aware', slotMs: 5 },
    { ...DEFAULT_HERD, jitter: 'band', pushback: 'fixed', baseMs: 50, capMs: 2000 },
    // Above 100,000 clients 'auto' counts the herd: drawn as counts, from the same seed.
    { ...DEFAULT_HERD, clients: 200_000, perSlot: 2000, seed: 11 },
  ];
  for (const params of HERDS) {
    it(`herd ${herdCommand(params)}`, async () => {
      const view = herdView(params);
      for (const run of view.runs) {
        const command = herdCommand(params, run.jitter).split(' ').slice(1);
        sameFields(command.join(' '), run.figures, await cliJson(command));
      }
    });
  }

  const dir = mkdtempSync(join(tmpdir(), 'stormproof-page-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const STACKS: Readonly<Record<string, string>> = {
    'examples/stack.json': readFileSync(join(root, 'examples/stack.json'), 'utf8'),
    'a fixed stack': JSON.stringify({
      name: 'after the fix',
      layers: [
        { name: 'edge', attempts: 1, timeoutMs: 10_000 },
        {
          name: 'client',
          maxAttempts: 4,
          baseDelayMs: 100,
          maxDelayMs: 5000,
          jitter: 'full',
          budget: true,
          deadlineMs: 30_000,
          stormproof: true,
          breaker: { consecutiveFailures: 5, openMs: 5000 },
        },
      ],
    }),
    'a gRPC layer': JSON.stringify({
      layers: [
        { name: 'app', attempts: 3, jitter: { band: [0.5, 1.5] }, baseDelayMs: 10 },
        {
          name: 'gRPC client',
          grpc: {
            methodConfig: [
              {
                name: [{ service: 'weather.Forecast' }],
                retryPolicy: {
                  maxAttempts: 5,
                  initialBackoff: '0.1s',
                  maxBackoff: '1s',
                  backoffMultiplier: 2,
                  retryableStatusCodes: ['UNAVAILABLE'],
                },
              },
            ],
            retryThrottling: { maxTokens: 10, tokenRatio: 0.1 },
          },
          timeoutMs: 500,
        },
      ],
    }),
  };
  for (const [name, text] of Object.entries(STACKS)) {
    it(`check: ${name}`, async () => {
      const file = join(dir, `${name.replace(/\W+/g, '-')}.json`);
      writeFileSync(file, text);
      const view = checkView(text);
      expect(view.ok, view.ok ? '' : view.error).toBe(true);
      if (view.ok) sameFields(name, view.json, await cliJson(['check', file, '--json']));
    });
  }

  it('check: a stack the CLI refuses is refused with the same words', async () => {
    for (const text of [
      '{"layers": [{"name": "a", "attempts": 0}]}',
      '{"layers": [{"name": "a", "attempts": 2, "timeoutMs": 3000000000}]}',
      '{"layers": []}',
    ]) {
      const file = join(dir, 'refused.json');
      writeFileSync(file, text);
      const ran = await runCli(['check', file, '--json']);
      expect(ran.code, text).toBe(2);
      const view = checkView(text);
      expect(view.ok, text).toBe(false);
      if (!view.ok) expect(`stormproof check: ${file}: ${view.error}\n`).toBe(ran.stderr);
    }
  });
});
