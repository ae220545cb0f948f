// The storm lab's page without a browser: its state and URL (src/page/state.ts) and what its worker
// computes (src/page/compute.ts, the module the worker runs), in Node; and the same figures as the
// CLI (`node dist/cli/main.js`, built by the suite's global setup) on the same parameters.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MAP_OPTIONS } from '../src/cli/map.js';
import { stormFigures, storm as stormScenario } from '../src/cli/scenarios/storm.js';
import {
  answer,
  checkView,
  HERD_MAX_POINTS,
  herdView,
  mapOptions,
  mapView,
  readMapFile,
  stormView,
} from '../src/page/compute.js';
import {
  checkHerd,
  checkMap,
  checkStorm,
  DEFAULT_STACK,
  defaultState,
  HERD_NUMBERS,
  type HerdParams,
  herdCommand,
  MAP_CHOICES,
  MAP_LISTS,
  MAP_NUMBERS,
  type MapInputs,
  type MapParams,
  mapArgs,
  nearestStop,
  PAGE_MAX_MAP_RUNS,
  readHash,
  STORM_CHOICES,
  STORM_FLAGS,
  STORM_NUMBERS,
  type StormInputs,
  type StormParams,
  stormArgs,
  writeHash,
} from '../src/page/state.js';
import { renderChartSvg } from '../src/sim/plot.js';
import { runStorm } from '../src/sim/storm.js';
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
    expect(readHash('#view=weather&nonsense=1&clients=300')).toEqual({
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

/** A short storm: 300 requests a second, a 10 s failover at second 5, 40 s simulated. */
const SHORT_STORM: StormParams = {
  policy: 'naive',
  server: 'none',
  breaker: false,
  manualRecovery: false,
  rps: 300,
  faultSeconds: 10,
  faultAtSeconds: 5,
  durationSeconds: 40,
  seed: 3,
};

/** A small map: one policy, both server settings, 2 loads by 2 trigger lengths, 2 seeds. */
const SMALL_MAP: MapParams = {
  policy: 'budget',
  server: 'both',
  trigger: 'capacity-loss',
  loads: [0.3, 0.9],
  triggers: [2, 10],
  seeds: 2,
  horizon: 30,
};

describe('the storm and the map in the URL', () => {
  it("writes the storm by its CLI flags and reads it back the same, and its defaults are the CLI's", () => {
    const storm = { ...defaultState().storm, policy: 'stormproof', breaker: 'on', rps: '800' };
    const state = { ...defaultState(), view: 'storm' as const, storm };
    const hash = writeHash(state);
    expect(hash).toBe(
      '#view=storm&policy=stormproof&server=none&breaker=on&manual-recovery=off&rps=800&fault-seconds=30&fault-at=10&duration=180&seed=1',
    );
    expect(readHash(hash)).toEqual(state);
    // Every storm input is an option of `stormproof sim storm`, with the same default and values.
    const cli = new Map(stormScenario.options.map((o) => [o.flag, o]));
    for (const f of [...STORM_CHOICES, ...STORM_FLAGS, ...STORM_NUMBERS]) {
      const option = cli.get(f.flag);
      expect(option, f.flag).toBeDefined();
      if ('values' in f) {
        expect(f.default, f.flag).toBe(option!.default);
        expect(f.values, f.flag).toEqual((option!.kind as { values: readonly string[] }).values);
      } else if ('default' in f) expect(f.default, f.flag).toBe(option!.default);
      else expect(option!.kind.type, f.flag).toBe('flag');
    }
  });

  it("writes the map by its CLI flags and reads it back the same; its choices are the CLI's", () => {
    const map = { ...defaultState().map, policy: 'a6', loads: '0.4,0.8', seeds: '2' };
    const state = { ...defaultState(), view: 'map' as const, map };
    const hash = writeHash(state);
    expect(hash).toBe(
      '#view=map&policy=a6&server=both&trigger=capacity-loss&loads=0.4%2C0.8&triggers=1%2C2%2C5%2C10%2C20%2C30&seeds=2&horizon=60',
    );
    expect(readHash(hash)).toEqual(state);
    const cli = new Map(MAP_OPTIONS.map((o) => [o.flag, o]));
    for (const f of [...MAP_CHOICES, ...MAP_LISTS, ...MAP_NUMBERS]) {
      const option = cli.get(f.flag);
      expect(option, f.flag).toBeDefined();
      if ('values' in f) {
        // One policy at a time: the CLI's 'all' is the full map, which the page reads from a file.
        const values = (option!.kind as { values: readonly string[] }).values.filter(
          (v) => v !== 'all',
        );
        expect(f.values, f.flag).toEqual(values);
      }
    }
  });

  it("reads only the view's own inputs: --seed and --policy of one view leave the others alone", () => {
    const state = readHash('#view=storm&policy=stormproof&seed=9&clients=5');
    expect(state.storm.policy).toBe('stormproof');
    expect(state.storm.seed).toBe('9');
    expect(state.herd).toEqual(defaultState().herd);
    expect(state.map).toEqual(defaultState().map);
    expect(readHash('#view=map&policy=breaker').map.policy).toBe('breaker');
  });

  it('checks the storm as `stormproof sim storm` does, and says where the page stops', () => {
    const inputs = (over: Partial<StormInputs>): StormInputs => ({
      ...defaultState().storm,
      ...over,
    });
    expect(checkStorm(defaultState().storm)).toEqual({
      params: {
        ...SHORT_STORM,
        rps: 4000,
        faultSeconds: 30,
        faultAtSeconds: 10,
        durationSeconds: 180,
        seed: 1,
      },
    });
    expect(checkStorm(inputs({ breaker: 'on' }))).toEqual({
      errors: { breaker: 'needs the stormproof policy (the naive stack has no breaker)' },
    });
    expect(checkStorm(inputs({ durationSeconds: '30' }))).toEqual({
      errors: {
        durationSeconds:
          'must be at least 40: the run ends before the failover does (it starts at 10 s and lasts 30 s)',
      },
    });
    expect(checkStorm(inputs({ rps: '50000', server: 'some', manualRecovery: 'yes' }))).toEqual({
      errors: {
        rps: 'must be a number from 1 to 20000, got 50000 (the page runs storms up to 20,000 requests/s for 600 s; `stormproof sim storm` takes more)',
        server: 'must be one of none, stormproof, all-or-nothing, got "some"',
        manualRecovery: 'must be on or off, got "yes"',
      },
    });
    expect(stormArgs({ ...SHORT_STORM, policy: 'stormproof', breaker: true })).toEqual(
      'sim storm --policy stormproof --server none --breaker --rps 300 --fault-seconds 10 --fault-at 5 --duration 40 --seed 3'.split(
        ' ',
      ),
    );
  });

  it("checks the map as `stormproof map` does, and keeps it to the page's size", () => {
    const inputs = (over: Partial<MapInputs>): MapInputs => ({ ...defaultState().map, ...over });
    expect(checkMap(defaultState().map)).toEqual({
      params: {
        policy: 'naive',
        server: 'both',
        trigger: 'capacity-loss',
        loads: [0.1, 0.2, 0.3, 0.5, 0.7, 0.9],
        triggers: [1, 2, 5, 10, 20, 30],
        seeds: 3,
        horizon: 60,
      },
    });
    expect(checkMap(inputs({ loads: '0.5, 0.5', triggers: '2,x' }))).toEqual({
      errors: {
        loads: 'must be comma-separated numbers from 0.01 to 10, none repeated, got "0.5, 0.5"',
        triggers: 'must be comma-separated numbers from 0 to 600, none repeated, got "2,x"',
      },
    });
    // 6 loads x 6 lengths x 2 kinds x 2 settings x 15 seeds = 2,160 runs.
    const big = checkMap(inputs({ trigger: 'both', seeds: '15' }));
    expect(big).toEqual({
      errors: {
        seeds: `make 2,160 runs (cells times seeds), and the page runs up to ${PAGE_MAX_MAP_RUNS.toLocaleString('en-US')}: fewer seeds, loads or trigger lengths, or \`stormproof map\` for more`,
      },
    });
    expect(mapArgs(SMALL_MAP).join(' ')).toBe(
      'map --policy budget --server both --trigger capacity-loss --loads 0.3,0.9 --triggers 2,10 --seeds 2 --horizon 30',
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

  it('answers each question with its id, and an error as an answer', async () => {
    expect(await answer({ id: 3, kind: 'check', stack: '[]' })).toMatchObject({
      id: 3,
      kind: 'check',
    });
    const herd = await answer({ id: 4, kind: 'herd', params: { ...DEFAULT_HERD, clients: 10 } });
    expect(herd).toMatchObject({ id: 4, kind: 'herd' });
    const broken = await answer({ id: 5, kind: 'herd', params: { ...DEFAULT_HERD, perSlot: 0 } });
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

describe("the worker's storm and map", () => {
  it('runs the storm as --plot does: the chosen run and the other policy, naive first, with progress', () => {
    const shares: number[] = [];
    const lives: string[] = [];
    const chosen = { ...SHORT_STORM, policy: 'stormproof' as const, server: 'stormproof' as const };
    const view = stormView(chosen, (done, live) => {
      shares.push(done);
      // The charts so far, drawn when asked: at the first second and at the end.
      if (done === shares[0] || done === 1) lives.push(live!());
    });
    expect(view.chosen).toBe(1);
    expect(view.figures.map((f) => [f.policy, f.server])).toEqual([
      ['naive', 'none'],
      ['stormproof', 'stormproof'],
    ]);
    // The progress callback changes nothing: the same figures as the model run on its own.
    expect(view.figures[1]).toEqual(stormFigures(runStorm({ ...chosen })));
    expect(shares.length).toBeGreaterThanOrEqual(2 * SHORT_STORM.durationSeconds - 2);
    expect(shares.every((x, i) => i === 0 || x >= shares[i - 1]!)).toBe(true);
    expect(shares.at(-1)).toBe(1);
    // Live, naive first as the report draws them: the chosen run goes first, the other waits.
    expect(lives).toHaveLength(2);
    expect(lives[0]).toContain('naive: 0 of 40 s simulated');
    expect(lives[0]).toContain('stormproof + stormproof/server: 1 of 40 s simulated');
    expect(lives[1]).toContain('naive: 40 of 40 s simulated');
    expect(lives[1]).toContain('stormproof + stormproof/server: 40 of 40 s simulated');
    expect(lives[1]!.match(/<g class="chart"/g)).toHaveLength(2);
    expect(lives[1]).toContain('data-series="failed"');
    // The report's sections: the comparison, stormproof on its own scale, the servers' protection.
    expect(view.sections.map((s) => s.heading)).toEqual([
      'naive versus stormproof + stormproof/server',
      "What the API servers' protection did",
    ]);
    const first = view.sections[0]!;
    expect(first.table!.head).toEqual(['', 'naive', 'stormproof + stormproof/server']);
    expect(first.table!.rows[0]![0]).toBe('normal load (requests/s)');
    expect(first.svg!.match(/<g class="chart"/g)).toHaveLength(2);
    expect(first.svg).toContain('data-series="offered"');
  });

  it('computes a small map run by run, with progress, and draws it with the map report', async () => {
    const shares: number[] = [];
    const view = await mapView(SMALL_MAP, (done) => shares.push(done));
    expect(shares).toHaveLength(16);
    expect(shares.at(-1)).toBe(1);
    expect(view.result.cells).toHaveLength(8);
    expect(view.sections.map((s) => s.heading)).toEqual([
      'capacity loss, without stormproof/server',
      'capacity loss, with stormproof/server',
    ]);
    for (const section of view.sections) {
      expect(section.figures).toHaveLength(1);
      expect(section.figures[0]!.match(/<rect class="cell"/g)).toHaveLength(4);
    }
    expect(view.intro[0]).toMatch(/^Model: 4 workers/);
    expect(mapOptions(SMALL_MAP)).toEqual({
      loads: [0.3, 0.9],
      triggerSeconds: [2, 10],
      triggerKinds: ['capacity-loss'],
      policies: ['budget'],
      seeds: 2,
      model: { horizonSeconds: 30 },
    });
  });

  it('reads a map file back into the same map, and says why a file is not one', async () => {
    const computed = await mapView({ ...SMALL_MAP, server: 'off', seeds: 1 });
    const read = readMapFile(
      JSON.stringify({ ...computed.result, report: 'x.html', wallSeconds: 1 }),
    );
    expect(read).toEqual({
      view: { ...computed, result: { ...computed.result, report: 'x.html', wallSeconds: 1 } },
    });
    expect(readMapFile('{')).toEqual({ error: expect.stringMatching(/^not valid JSON: /) });
    expect(readMapFile('{"scenario": "weather-api", "runs": []}')).toEqual({
      error:
        "this is a scenario's file (stormproof map --scenario weather-api), not a map; the page draws the sweep's map",
    });
    const broken = { ...computed.result, cells: [{ ...computed.result.cells[0], class: 'fine' }] };
    expect(readMapFile(JSON.stringify(broken))).toEqual({
      error: 'not a stormproof map --json file: cells[0] is not a cell of the map',
    });
    expect(readMapFile('[]')).toEqual({
      error: 'not a stormproof map --json file: it is not a JSON object',
    });
  });

  it('answers a storm, a map and a map file, reporting progress for the long ones', async () => {
    const heard: number[] = [];
    const stormAnswer = await answer({ id: 7, kind: 'storm', params: SHORT_STORM }, (d) =>
      heard.push(d),
    );
    expect(stormAnswer).toMatchObject({ id: 7, kind: 'storm' });
    expect(heard.at(-1)).toBe(1);
    const mapAnswer = await answer({ id: 8, kind: 'map', params: { ...SMALL_MAP, seeds: 1 } });
    expect(mapAnswer).toMatchObject({ id: 8, kind: 'map' });
    expect(await answer({ id: 9, kind: 'map-file', text: '[]' })).toEqual({
      id: 9,
      kind: 'error',
      message: 'not a stormproof map --json file: it is not a JSON object',
    });
    const wrong = await answer({
      id: 10,
      kind: 'storm',
      params: { ...SHORT_STORM, faultAtSeconds: 39 },
    });
    expect(wrong).toMatchObject({
      id: 10,
      kind: 'error',
      message: expect.stringContaining('faultSeconds'),
    });
  });
});

describe('the storm and the map: the same figures as the CLI', () => {
  const STORMS: readonly StormParams[] = [
    SHORT_STORM,
    { ...SHORT_STORM, policy: 'stormproof', breaker: true, server: 'stormproof' },
    { ...SHORT_STORM, manualRecovery: true, server: 'all-or-nothing', seed: 5 },
  ];
  for (const params of STORMS) {
    it(`storm ${stormArgs(params).slice(2).join(' ')}`, async () => {
      const view = stormView(params);
      const other: StormParams = {
        ...params,
        policy: params.policy === 'naive' ? 'stormproof' : 'naive',
        breaker: false,
        manualRecovery: false,
        server: 'none',
      };
      const [chosen, beside] = await Promise.all(
        [params, other].map((p) => cliJson([...stormArgs(p), '--json'])),
      );
      sameFields('the chosen run', view.figures[view.chosen]!, chosen!);
      sameFields('the other policy', view.figures[1 - view.chosen]!, beside!);
    });
  }

  const dir = mkdtempSync(join(tmpdir(), 'stormproof-page-map-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  for (const params of [
    SMALL_MAP,
    { ...SMALL_MAP, policy: 'naive', server: 'off', trigger: 'both' },
  ]) {
    it(`map ${mapArgs(params).slice(1).join(' ')}`, async () => {
      const [view, cli] = await Promise.all([
        mapView(params),
        cliJson([
          ...mapArgs(params),
          '--json',
          '--out',
          join(dir, 'map.html'),
          '--progress',
          'never',
        ]),
      ]);
      const { report, wallSeconds, ...figures } = cli as Record<string, unknown>;
      expect(report).toBe(join(dir, 'map.html'));
      expect(typeof wallSeconds).toBe('number');
      sameFields('map', view.result, figures);
    });
  }
});
