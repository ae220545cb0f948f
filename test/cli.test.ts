// The `stormproof` program as users run it: `node dist/cli/main.js` (dist is built by the suite's
// global setup). Every scenario's --json with the storm story's figures, the storm lab and
// its report, the stack checker, usage errors (exit 2, naming the option), the progress bar and
// Ctrl-C (exit 130, no stack trace). What the program prints and returns is checked in this
// process (cli: the bin's own runProgram, from dist), what only a process shows in a process of
// its own (runCli), and both ways give the same for every kind of ending.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { placeOf } from '../src/cli/jobs.js';
import { ProgressBar, renderBar } from '../src/cli/progress.js';
import { HERD_AUTO_EXACT_MAX, type Job } from '../src/cli/runners.js';
import { HERD_EXACT_MAX_CLIENTS, HERD_EXACT_MAX_CLIENTS_NO_JITTER } from '../src/sim/herd.js';
import { root, runCli } from './helpers/cli.js';
import { CLIENT_LIBRARY_LAYER } from './helpers/fixtures.js';
import { runProgram as cli } from './helpers/program.js';

const dir = mkdtempSync(join(tmpdir(), 'stormproof-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function json(args: readonly string[]): Promise<unknown> {
  const r = await cli([...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

/** A small storm, so the storm tests take a fraction of a second. */
/** Every scenario of `stormproof sim`. */
const SCENARIO_NAMES = ['herd', 'budget', 'brooker', 'layers', 'storm', 'timers'];

const SMALL_STORM = ['--rps', '500', '--duration', '30', '--fault-at', '5', '--fault-seconds', '5'];

/**
 * The time bound of a test that runs storms or draws reports: seconds alone, but the tests of these
 * describes run at once, beside the suite's other files, on two shared cores.
 */
const HEAVY = { timeout: 60_000 };

describe.concurrent('stormproof sim <scenario> --json', () => {
  it("herd: the storm story's figures, without and with jitter", async () => {
    expect(await json(['sim', 'herd', '--jitter', 'none'])).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 376.21,
    });
    expect(await json(['sim', 'herd', '--jitter', 'full'])).toEqual({
      calls: 6487,
      busiestSlot: 205,
      doneAfterSeconds: 3.45,
    });
    expect(
      await json([
        'sim',
        'herd',
        '--clients',
        '2000',
        '--per-slot',
        '25',
        '--slot-ms',
        '10',
        '--base-ms',
        '200',
        '--cap-ms',
        '5000',
        '--seed',
        '7',
      ]),
    ).toEqual({ calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 });
  });

  it('herd --mode: exact and auto give the published figures, counted the same herd as counts', async () => {
    const published = { calls: 6487, busiestSlot: 205, doneAfterSeconds: 3.45 };
    expect(await json(['sim', 'herd', '--mode', 'exact'])).toEqual(published);
    expect(await json(['sim', 'herd', '--mode', 'auto'])).toEqual(published);
    const counted = (await json(['sim', 'herd', '--mode', 'counted'])) as typeof published;
    expect(counted).not.toEqual(published);
    expect(Math.abs(counted.calls / published.calls - 1)).toBeLessThan(0.05);
    // Without jitter both modes follow the one wave exactly.
    expect(await json(['sim', 'herd', '--jitter', 'none', '--mode', 'counted'])).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 376.21,
    });
  });

  it('budget: 4000 calls without a budget, 1109 with one', async () => {
    expect(await json(['sim', 'budget', '--requests', '1000'])).toEqual({
      withoutBudget: { calls: 4000 },
      withBudget: { calls: 1109 },
    });
  });

  it("brooker: each strategy's calls and time at 100 clients", async () => {
    expect(await json(['sim', 'brooker', '--clients', '100', '--runs', '100'])).toEqual({
      exponential: { calls: 1846.09, timeMs: 62615.36 },
      full: { calls: 795.87, timeMs: 4823.67 },
      equal: { calls: 812.86, timeMs: 6597.36 },
      decorrelated: { calls: 1002.22, timeMs: 4580.76 },
      none: { calls: 2418.13, timeMs: 2023.71 },
    });
    // 100 runs of five strategies: about 2 s alone, but these scenarios run at once, beside the
    // suite's other processes, on two shared cores. The figures are exact; only time varies.
  }, 60_000);

  it('layers: 64 calls for 3 x 4, 243 for 5 x 3, 4 when only the top retries', async () => {
    expect(await json(['sim', 'layers', '--layers', '3', '--attempts', '4'])).toMatchObject({
      bottomCalls: 64,
    });
    expect(await json(['sim', 'layers', '--layers', '5', '--attempts', '3'])).toMatchObject({
      bottomCalls: 243,
    });
    expect(await json(['sim', 'layers', '--retry-at', 'top'])).toEqual({
      bottomCalls: 4,
      callsPerLevel: [1, 4, 4, 4],
    });
  });

  it('timers: a spike of every device against a flat spread', HEAVY, async () => {
    expect(await json(['sim', 'timers'])).toEqual({
      aligned: { peakRps: 10_000 },
      offset: { peakRps: 10 },
      uniformRps: 10_000 / 1200,
    });
  });

  it('storm: the figures of one setup', HEAVY, async () => {
    for (const policy of ['naive', 'stormproof']) {
      const r = (await json(['sim', 'storm', '--policy', policy, ...SMALL_STORM])) as Record<
        string,
        unknown
      >;
      expect(r).toMatchObject({ policy, manualRecovery: false });
      expect(r.normalRps).toBeGreaterThan(400);
      expect(r.peakRpsAfterFailover).toBeGreaterThanOrEqual(r.normalRps as number);
      expect(r).toHaveProperty('recoveredAfterFaultSeconds');
      const recovered = r.recoveredAfterFaultSeconds;
      expect(recovered === null || typeof recovered === 'number').toBe(true);
    }
    const manual = (await json([
      'sim',
      'storm',
      '--manual-recovery',
      '--seed',
      '3',
      ...SMALL_STORM,
    ])) as Record<string, unknown>;
    expect(manual).toMatchObject({ policy: 'naive', manualRecovery: true });
  });

  it(
    'storm --server: the API servers protected by stormproof/server or all or nothing',
    HEAVY,
    async () => {
      for (const server of ['stormproof', 'all-or-nothing']) {
        const r = (await json(['sim', 'storm', '--server', server, ...SMALL_STORM])) as Record<
          string,
          unknown
        >;
        expect(r).toMatchObject({ policy: 'naive', server });
        expect(r).toHaveProperty('goodputRecoveredAfterFaultSeconds');
      }
      const text = await cli(['sim', 'storm', '--server', 'stormproof', ...SMALL_STORM]);
      expect(text.stdout).toContain('storm: naive + stormproof/server');
      expect(text.stdout).toContain('goodput back to 95% of demand');
      const bad = await cli(['sim', 'storm', '--server', 'fastify', ...SMALL_STORM]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--server/);
    },
  );

  it(
    'storm --breaker: a circuit breaker per partner instance, stormproof only',
    HEAVY,
    async () => {
      const args = ['sim', 'storm', '--policy', 'stormproof', ...SMALL_STORM];
      const plain = (await json(args)) as Record<string, unknown>;
      const guarded = (await json([...args, '--breaker'])) as Record<string, unknown>;
      expect(plain).toMatchObject({ policy: 'stormproof', breaker: false });
      expect(guarded).toMatchObject({ policy: 'stormproof', breaker: true });
      expect(guarded.failedUserRequests).not.toBe(plain.failedUserRequests);
      const text = await cli([...args, '--breaker']);
      expect(text.code).toBe(0);
      expect(text.stdout).toContain('storm: stormproof + breaker');
      expect(text.stdout).toMatch(/The breakers opened [\d,]+ times and refused [\d,]+ calls\./);
      const naive = await cli(['sim', 'storm', '--breaker', ...SMALL_STORM]);
      expect(naive.code).toBe(2);
      expect(naive.stderr).toBe(
        'stormproof sim storm: --breaker needs --policy stormproof (the naive stack has no breaker), got --policy naive (the default)\n',
      );
    },
  );
});

describe.concurrent('text output and charts', () => {
  it('prints a short table for people', async () => {
    const r = await cli(['sim', 'budget']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/without a budget\s+4,000\s+3,000/);
    expect(r.stdout).toMatch(/with RetryBudget\(\)\s+1,109\s+109/);
    const b = await cli(['sim', 'brooker', '--runs', '3']);
    expect(b.stdout).toMatch(/strategy\s+calls\s+time \(ms\)/);
    expect(
      b.stdout
        .split('\n')
        .filter((l) => /^\s+(exponential|full|equal|decorrelated|none)\s/.test(l)),
    ).toHaveLength(5);
  });

  it(
    '--plot writes a self-contained HTML page or an SVG picture for every scenario',
    HEAVY,
    async () => {
      const scenarios: Array<[string, string[], number]> = [
        ['herd', [], 2],
        ['budget', [], 2],
        ['brooker', ['--runs', '2'], 7],
        ['layers', [], 3],
        ['storm', SMALL_STORM, 3], // naive and stormproof side by side, stormproof on its own scale
        ['timers', [], 2],
      ];
      const runs = scenarios.flatMap(([name, args, charts]) =>
        ['html', 'svg'].map((ext) => ({
          name,
          args,
          charts,
          ext,
          file: join(dir, `plots/${name}.${ext}`),
        })),
      );
      const results = await Promise.all(
        runs.map((run) => cli(['sim', run.name, ...run.args, '--json', '--plot', run.file])),
      );
      for (const [i, { name, charts, ext, file }] of runs.entries()) {
        {
          const r = results[i]!;
          expect(r.code, `${name} ${r.stderr}`).toBe(0);
          expect(() => JSON.parse(r.stdout)).not.toThrow();
          expect(r.stderr).toBe(`chart written to ${file}\n`);
          const text = readFileSync(file, 'utf8');
          expect(text).not.toMatch(/<script|NaN/);
          expect(text.match(/class="chart"/g), `${name}.${ext}`).toHaveLength(charts);
          if (ext === 'html') expect(text.match(/<svg /g)).toHaveLength(charts);
        }
      }
    },
  );

  it('--plot of a long counted herd: a chart of the busiest slot of each span', HEAVY, async () => {
    // 100,000 clients without jitter, capped at 50 s: 2 * 10^7 slots, each one an array entry
    // before (15 s and 1.7 GB of arrays, then a stack overflow in the chart).
    const file = join(dir, 'long-herd.svg');
    const r = await cli([
      'sim',
      'herd',
      ...['--clients', '100000', '--jitter', 'none', '--cap-ms', '50000', '--mode', 'counted'],
      ...['--json', '--plot', file],
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      calls: 200_050_000,
      busiestSlot: 99_975,
      doneAfterSeconds: 199_601.01,
    });
    const svg = readFileSync(file, 'utf8');
    expect(svg).toMatch(/calls per 10 ms slot, the busiest of each 5\.12 s/);
    expect(svg.length).toBeLessThan(1_000_000);
  });

  it('the storm chart draws naive and stormproof side by side, fault shaded', HEAVY, async () => {
    const file = join(dir, 'storm.svg');
    const r = await cli(['sim', 'storm', '--policy', 'stormproof', ...SMALL_STORM, '--plot', file]);
    expect(r.code).toBe(0);
    const svg = readFileSync(file, 'utf8');
    expect(svg.indexOf('naive: ')).toBeLessThan(svg.indexOf('stormproof: '));
    expect(svg).toMatch(/naive: [\d,]+\/s after the failover, recovered /);
    // The failover is shaded in each chart: the two side by side and stormproof on its own scale.
    expect(svg.match(/class="band"/g)).toHaveLength(3);
    for (const s of ['offered', 'succeeded', 'failed']) expect(svg).toContain(`data-series="${s}"`);
  });
});

describe.concurrent('stormproof lab', () => {
  it('compares naive and stormproof, writes the report and says where', HEAVY, async () => {
    const out = join(dir, 'lab/storm-lab.html');
    const r = await cli(['lab', ...SMALL_STORM, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /naive\s+naive \+ stormproof\/server\s+naive \+ all-or-nothing shedder\s+stormproof\s+stormproof \+ stormproof\/server/,
    );
    expect(r.stdout).toMatch(/normal load \(requests\/s\)\s+[\d,]+\s+[\d,]+/);
    expect(r.stdout).toMatch(/peak load after the database was back\s+[\d,]+\s+[\d,]+/);
    expect(r.stdout).toMatch(/recovered after the database/);
    expect(r.stdout).toContain(`Report with the charts: ${out}`);
    const html = readFileSync(out, 'utf8');
    // The five runs side by side on one scale, stormproof on its own, then the servers' share.
    expect(html.match(/<svg /g)).toHaveLength(7);
    expect(html).toContain('What the API servers&#39; protection did');
    expect(html).toContain('The storm lab');
    expect(html).toContain('stormproof on its own scale');
    // Where stormproof's failed requests fall, in figures that add up to its total.
    const split = html.match(
      /Its ([\d,]+) failed user requests are the failover&#39;s own: ([\d,]+) ended while the database was down .*?, ([\d,]+) in the 5 s after it .*?, and ([\d,]+) later/,
    );
    expect(split, 'the explanation of the failed requests').not.toBeNull();
    const [total, down, after, later] = split!.slice(1).map((n) => Number(n.replaceAll(',', '')));
    expect(down! + after! + later!).toBe(total);
    expect(existsSync(`${out}.${r.code}.tmp`)).toBe(false);
  });

  it('takes --plot FILE as sim does, for the same report as --out', HEAVY, async () => {
    const out = join(dir, 'lab/plotted.html');
    const r = await cli(['lab', ...SMALL_STORM, '--plot', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { report: string }).report).toBe(out);
    expect(readFileSync(out, 'utf8')).toContain('The storm lab');
    const both = await cli(['lab', '--plot', out, '--out', join(dir, 'lab/other.html')]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--out .*other\.html and --plot .*plotted\.html name two files/);
  });

  it(
    '--json gives every setup and the report path; --manual-recovery adds one',
    HEAVY,
    async () => {
      const out = join(dir, 'lab/lab.svg');
      const r = (await json(['lab', ...SMALL_STORM, '--manual-recovery', '--out', out])) as Record<
        string,
        Record<string, unknown>
      >;
      const setups = [
        'naive',
        'naiveManualRecovery',
        'naiveServer',
        'naiveAllOrNothing',
        'stormproof',
        'stormproofServer',
      ];
      expect(Object.keys(r)).toEqual([...setups, 'report']);
      expect(r.naiveServer).toMatchObject({ policy: 'naive', server: 'stormproof' });
      expect(r.naiveAllOrNothing).toMatchObject({ policy: 'naive', server: 'all-or-nothing' });
      expect(r.stormproofServer).toMatchObject({ policy: 'stormproof', server: 'stormproof' });
      for (const key of setups) {
        expect(Object.keys(r[key]!)).toEqual(
          expect.arrayContaining([
            'normalRps',
            'peakRpsAfterFailover',
            'recoveredAfterFaultSeconds',
          ]),
        );
      }
      expect(r.report).toBe(out);
      expect(readFileSync(out, 'utf8').match(/class="chart"/g)).toHaveLength(8);
    },
  );
});

describe.concurrent('stormproof check', () => {
  it("the example stack: the storm story's 64 calls", async () => {
    const r = (await json(['check', 'examples/stack.json'])) as Record<string, unknown>;
    expect(r.worstCaseBottomCalls).toBe(64);
    expect(r.worstCaseLatencyMs).toBe(32_000);
    expect(r.warnings).toHaveLength(7);
    const text = await cli(['check', 'examples/stack.json']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'Worst case per user request: 64 calls at the bottom, latency 32,000 ms.',
    );
    expect(text.stdout).toContain('Warnings (7):');
  });

  it('--strict fails on warnings; a clean stack passes', async () => {
    expect((await cli(['check', 'examples/stack.json', '--strict'])).code).toBe(1);
    const clean = join(dir, 'clean.json');
    writeFileSync(
      clean,
      JSON.stringify({
        layers: [CLIENT_LIBRARY_LAYER, { name: 'API gateway', attempts: 1, timeoutMs: 1000 }],
      }),
    );
    const r = await cli(['check', clean, '--strict']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('No warnings.');
    // A note is a fact, not a broken rule: --strict passes.
    expect(r.stdout).toContain('Notes (1):');
    expect(r.stdout).toContain('No layer has a circuit breaker');
  });

  it("a layer's breaker: what it changes once open, in the table's text and in --json", async () => {
    const file = join(dir, 'breaker-stack.json');
    writeFileSync(
      file,
      JSON.stringify({
        layers: [
          { ...CLIENT_LIBRARY_LAYER, breaker: true },
          { name: 'API gateway', attempts: 1, timeoutMs: 1000 },
        ],
      }),
    );
    const text = await cli(['check', file, '--strict']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      "client library's circuit breaker opens after 5 failures in a row; once open in a long outage it sends 0 calls per user request, only 1 at the bottom per open period (2,500 to 5,000 ms at first, growing to 150,000 to 300,000 ms): at most 8 probes in 10 minutes, per breaker.",
    );
    expect(text.stdout).not.toContain('Notes');
    const r = (await json(['check', file])) as {
      notes: unknown[];
      layers: { breaker?: unknown }[];
    };
    expect(r.notes).toEqual([]);
    expect(r.layers[0]!.breaker).toMatchObject({
      bottomCallsWhileOpen: 0,
      maxProbesIn10Minutes: 8,
    });
  });

  it('names the file and the field at fault, with exit code 2', async () => {
    const missing = await cli(['check', 'no/such/stack.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('stormproof check: cannot read no/such/stack.json: no such file\n');

    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{ "layers": [ ');
    const bad = await cli(['check', broken]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(new RegExp(`^stormproof check: ${broken} is not valid JSON: `));

    const wrong = join(dir, 'wrong.json');
    writeFileSync(wrong, JSON.stringify({ layers: [{ name: 'gateway', attempts: 'three' }] }));
    const field = await cli(['check', wrong]);
    expect(field.code).toBe(2);
    expect(field.stderr).toBe(
      `stormproof check: ${wrong}: stack layers[0].attempts must be an integer, got "three"\n`,
    );

    const breaker = join(dir, 'breaker.json');
    writeFileSync(
      breaker,
      JSON.stringify({ layers: [{ name: 'gateway', attempts: 2, breaker: { opnMs: 1 } }] }),
    );
    const breakerField = await cli(['check', breaker]);
    expect(breakerField.code).toBe(2);
    expect(breakerField.stderr).toMatch(
      /stack layers\[0\]\.breaker has no field "opnMs" \(did you mean "openMs"\?\)/,
    );

    const none = await cli(['check']);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe('stormproof check: missing stack file (JSON)\n');
  });
});

describe.concurrent('usage errors: one line naming the option, exit code 2', () => {
  it.each([
    [
      ['sim', 'herd', '--clinets', '5'],
      'stormproof sim herd: unknown option --clinets (did you mean --clients?); see stormproof sim herd --help',
    ],
    [
      ['sim', 'herd', '--clients', 'many'],
      'stormproof sim herd: --clients must be an integer from 0 to 2147483647, got "many"',
    ],
    [
      ['sim', 'herd', '--jitter', 'lots'],
      'stormproof sim herd: --jitter must be one of none, full, equal, decorrelated, band, got "lots"',
    ],
    [
      ['sim', 'herd', '--mode', 'fast'],
      'stormproof sim herd: --mode must be one of auto, exact, counted, got "fast"',
    ],
    [
      ['sim', 'herd', '--mode', 'counted', '--jitter', 'decorrelated'],
      'stormproof sim herd: --mode counted cannot count --jitter decorrelated (every client remembers its own last wait); give --mode exact or auto, or another --jitter',
    ],
    [
      ['sim', 'herd', '--mode', 'counted', '--pushback', 'load-aware'],
      'stormproof sim herd: --mode counted cannot count --pushback load-aware (every rejected call gets its own slot); give --mode exact or auto, or another --pushback',
    ],
    [['sim', 'herd', '--json=yes'], 'stormproof sim herd: option --json takes no value'],
    [['sim', 'herd', '--seed'], 'stormproof sim herd: option --seed needs a value'],
    [
      ['sim', 'herd', 'now'],
      'stormproof sim herd: unexpected argument "now" (options start with --)',
    ],
    [
      ['sim', 'budget', '--requests', '1.5'],
      'stormproof sim budget: --requests must be an integer from 0 to 1000000, got "1.5"',
    ],
    [
      ['sim', 'brooker', '--runs', '0'],
      'stormproof sim brooker: --runs must be an integer from 1 to 1000000, got "0"',
    ],
    [
      ['sim', 'layers', '--retry-at', 'middle'],
      'stormproof sim layers: --retry-at must be one of all, top, bottom, got "middle"',
    ],
    [
      ['sim', 'storm', '--policy', 'hope'],
      'stormproof sim storm: --policy must be one of naive, stormproof, got "hope"',
    ],
    [
      ['sim', 'timers', '--plot', 'chart.png'],
      'stormproof sim timers: --plot must be a file name ending in .html or .htm or .svg, got "chart.png"',
    ],
    [
      ['lab', '--out', 'report.pdf'],
      'stormproof lab: --out must be a file name ending in .html or .htm or .svg, got "report.pdf"',
    ],
    [
      ['sim', 'hurd'],
      'stormproof sim: unknown scenario "hurd"; expected one of herd, budget, brooker, layers, storm, timers, hedge, limits',
    ],
    [
      ['sim'],
      'stormproof sim: which scenario? One of herd, budget, brooker, layers, storm, timers, hedge, limits',
    ],
    [
      ['simulate'],
      'stormproof: unknown command "simulate"; expected lab, sim, check or map (see stormproof --help)',
    ],
  ])('%j', async (args, message) => {
    const r = await cli(args);
    expect(r.stderr).toBe(`${message}\n`);
    expect(r.stdout).toBe('');
    expect(r.code).toBe(2);
  });

  it('a failover that does not fit the run names the flags typed and says what would work', async () => {
    const r = await cli(['sim', 'storm', '--duration', '5', '--fault-at', '10']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      'stormproof sim storm: the run ends before the failover does: --fault-at 10 and --fault-seconds 30 (the default) need --duration 5 to be at least 40; give --duration 40 or more, or a smaller --fault-at or --fault-seconds\n',
    );
    const short = await cli(['sim', 'storm', '--duration', '10']);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain(
      '--fault-at 10 (the default) and --fault-seconds 30 (the default) need --duration 10 to be at least 40',
    );
    expect(short.stderr).not.toMatch(/runStorm|faultSeconds/);
    const lab = await cli(['lab', '--duration', '20', '--fault-seconds', '15']);
    expect(lab.code).toBe(2);
    expect(lab.stderr).toMatch(
      /^stormproof lab: .*--fault-seconds 15 need --duration 20 to be at least 25; give --duration 25 or more/,
    );
  });

  it('a value the model refuses is a usage error too', async () => {
    const layers = await cli(['sim', 'layers', '--layers', '20', '--attempts', '100']);
    expect(layers.code).toBe(2);
    expect(layers.stderr).toMatch(
      /^stormproof sim layers: --layers 20 of --attempts 100 would make .* calls at the bottom, .*; give --layers 3 or fewer, or --attempts 1 or fewer, or --retry-at top\n$/,
    );
    expect(layers.stderr).not.toContain('runLayers');
    const edge = await cli(['sim', 'layers', '--layers', '10', '--attempts', '4']);
    expect(edge.stderr).toContain('give --layers 9 or fewer, or --attempts 3 or fewer');
  });

  it('no command prints the help on stderr', async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Usage:');
  });
});

describe.concurrent('help, version, progress and Ctrl-C', () => {
  it('--help lists the commands, the scenarios and their options', async () => {
    const main = await cli(['--help']);
    expect(main.code).toBe(0);
    for (const s of [
      'lab',
      'sim <scenario>',
      'check <stack.json>',
      'herd',
      'budget',
      'brooker',
      'layers',
      'storm',
      'timers',
    ]) {
      expect(main.stdout).toContain(s);
    }
    const herd = await cli(['sim', 'herd', '--help']);
    expect(herd.code).toBe(0);
    expect(herd.stdout).toMatch(/--per-slot N\s+calls the service answers per slot \(default 25\)/);
    expect(herd.stdout).toContain('--jitter none|full|equal|decorrelated|band');
    for (const args of [
      ['lab', '--help'],
      ['check', '--help'],
      ['sim', '--help'],
      ['sim', 'storm', '--help'],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout).toContain('Usage: stormproof');
    }
  });

  it('every --help shows the default of every option', async () => {
    const helps = [['lab'], ['check'], ...SCENARIO_NAMES.map((name) => ['sim', name])];
    for (const args of helps) {
      const r = await cli([...args, '--help']);
      // An option's help may wrap to the next line: join each option with its continuation.
      const options = r.stdout.split('\n').reduce<string[]>((rows, line) => {
        if (line.startsWith('  --')) rows.push(line);
        else if (/^\s{6,}\S/.test(line) && rows.length > 0) rows[rows.length - 1] += line;
        return rows;
      }, []);
      expect(options.length, args.join(' ')).toBeGreaterThan(0);
      for (const option of options) expect(option, args.join(' ')).toMatch(/\(default[ :]/);
    }
    const storm = await cli(['sim', 'storm', '--help']);
    expect(storm.stdout).toMatch(
      /--duration N\s+seconds of virtual time simulated \(default 180\)/,
    );
    expect(storm.stdout).toMatch(/--plot FILE\s+.*\(default: no chart\)/);
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect((await cli(['--version'])).stdout).toBe(`${pkg.version}\n`);
  });

  it('draws no progress bar when stderr is not a terminal, and one when asked', async () => {
    const quiet = await runCli(['sim', 'brooker', '--runs', '5', '--json']);
    expect(quiet.stderr).toBe('');
    const shown = await runCli(['sim', 'brooker', '--runs', '5', '--json', '--progress', 'always']);
    expect(shown.code).toBe(0);
    expect(shown.stderr.startsWith(`\rstormproof sim brooker [${'-'.repeat(40)}]   0%\x1b[K`)).toBe(
      true,
    );
    expect(shown.stderr).toContain('100%');
    // Wiped before the program ends.
    expect(shown.stderr.endsWith('\r\x1b[K')).toBe(true);
    expect(JSON.parse(shown.stdout)).toHaveProperty('full');
  });

  it('Ctrl-C stops a long run at once: exit 130, one line, no stack trace', async () => {
    let sent = false;
    const r = await runCli(
      ['sim', 'brooker', '--runs', '1000000', '--progress', 'always'],
      (_, child) => {
        if (!sent) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    );
    expect(r.signal).toBeNull();
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('');
    expect(r.stderr.endsWith('\r\x1b[Kstormproof: interrupted\n')).toBe(true);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});

describe.concurrent('small runs in this thread, long ones in workers (issue 19)', () => {
  const COMMANDS = [
    ['sim', 'herd', '--jitter', 'none', '--json'],
    ['sim', 'herd', '--json'],
    ['sim', 'herd', '--clients', '30000', '--mode', 'counted', '--json'],
    ['sim', 'herd', '--jitter', 'band', '--pushback', 'spread', '--clients', '300'],
    ['sim', 'budget', '--requests', '200', '--json'],
    ['sim', 'brooker', '--runs', '3', '--json'],
    ['sim', 'layers', '--layers', '4', '--attempts', '3'],
    ['sim', 'timers', '--devices', '1000', '--json'],
    ['sim', 'storm', ...SMALL_STORM, '--json'],
  ];

  it.each(COMMANDS.map((args) => [args.join(' '), args]))(
    'the same output either way: %s',
    async (_, args) => {
      const [here, workers] = await Promise.all([
        runCli(args, undefined, { env: { STORMPROOF_WORKERS: 'never' } }),
        runCli(args, undefined, { env: { STORMPROOF_WORKERS: 'always' } }),
      ]);
      expect(here.code, here.stderr).toBe(0);
      expect(here.stderr).toBe('');
      expect(workers).toEqual(here);
    },
  );

  it('decides by a cost estimate from the options, never by timing', () => {
    const here = (runner: Job['runner'], options: Record<string, unknown>) =>
      placeOf([{ runner, options }], 'auto');
    expect(process.env.STORMPROOF_WORKERS).toBeUndefined();
    expect(here('herd', { clients: 2000, jitter: 'none', mode: 'auto' })).toBe('here');
    expect(here('herd', { clients: 2000, jitter: 'full' })).toBe('here');
    expect(here('herd', { clients: 1_000_000_000, jitter: 'none' })).toBe('workers');
    expect(here('herd', { clients: 10_000, jitter: 'none', pushback: 'fixed' })).toBe('workers');
    expect(here('herd', { clients: 100_000, jitter: 'full' })).toBe('workers');
    expect(here('brooker', { runs: 3 })).toBe('here');
    expect(here('brooker', { runs: 1_000_000 })).toBe('workers');
    expect(here('storm', {})).toBe('workers');
    expect(here('limits', { contender: 'knee' })).toBe('workers');
    // The costs add up: many small runs together go to workers.
    const small: Job = { runner: 'budget', options: { requests: 1000 } };
    expect(placeOf([small], 'auto')).toBe('here');
    expect(placeOf([small, small, small], 'auto')).toBe('workers');
    // The estimate follows runHerd's own choice of mode.
    expect(HERD_AUTO_EXACT_MAX).toEqual({
      jitter: HERD_EXACT_MAX_CLIENTS,
      noJitter: HERD_EXACT_MAX_CLIENTS_NO_JITTER,
    });
  });

  it('a model refusing a value fails the same way either way', async () => {
    const args = ['sim', 'herd', '--mode', 'counted', '--slot-ms', '1', '--cap-ms', '86400000'];
    const [here, workers] = await Promise.all([
      runCli(args, undefined, { env: { STORMPROOF_WORKERS: 'never' } }),
      runCli(args, undefined, { env: { STORMPROOF_WORKERS: 'always' } }),
    ]);
    expect(here.code).toBe(2);
    expect(here.stderr).toMatch(/^stormproof: runHerd mode 'counted' needs capMs/);
    expect(workers).toEqual(here);
  });

  it('sim herd loads the herd and nothing else: no worker, no storm, map, lab or server code', async () => {
    // A loader hook that names every module loaded, on stderr.
    const hook = `data:text/javascript,export async function load(u,c,n){if(u.startsWith("file:"))process.stderr.write("loaded "+u+"\\n");return n(u,c)}`;
    const register = `data:text/javascript,import{register}from"node:module";register(${JSON.stringify(hook)})`;
    const r = await runCli(['sim', 'herd', '--jitter', 'none', '--json'], undefined, {
      nodeArgs: ['--import', register],
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      calls: 81000,
      busiestSlot: 1975,
      doneAfterSeconds: 376.21,
    });
    const loaded = [...r.stderr.matchAll(/^loaded file:\/\/.*\/dist\/(.*)$/gm)].map((m) => m[1]);
    expect(loaded).toContain('sim/herd.js');
    const unwanted = loaded.filter((file) =>
      /^(cli\/(worker|map|live|serve|storm-server|scenarios\/(?!herd))|sim\/(storm|map|limits|brooker|layers|timers|budget)|lab\/|server\/(?!pushback))/.test(
        file!,
      ),
    );
    expect(unwanted).toEqual([]);
  });
});

describe.concurrent('in this process and in a process of its own, the same', () => {
  // Every ending but Ctrl-C's (a process's alone: tested above): done, --strict's warnings, a
  // failure, a usage error, a model's refusal, and no command at all.
  it.each([
    [['--version'], 0],
    [['sim', 'herd', '--jitter', 'none', '--json'], 0],
    [['sim', 'budget', '--json', '--plot', join(dir, 'both-ways/budget.svg')], 0],
    [['check', 'examples/stack.json', '--strict'], 1],
    [['sim', 'herd', '--json', '--plot', '/dev/null/herd.svg'], 1],
    [['sim', 'herd', '--clinets', '5'], 2],
    [['sim', 'herd', '--mode', 'counted', '--slot-ms', '1', '--cap-ms', '86400000'], 2],
    [[], 2],
  ])('%j exits with %i', async (args, code) => {
    const spawned = await runCli(args);
    expect(spawned.code, spawned.stderr).toBe(code);
    expect(await cli(args)).toEqual(spawned);
  });
});

describe('the progress bar', () => {
  const stream = (isTTY: boolean, columns?: number) => {
    const written: string[] = [];
    return { isTTY, columns, written, write: (text: string) => written.push(text) };
  };

  it('draws on a terminal only, unless asked', () => {
    const pipe = stream(false);
    const bar = new ProgressBar(pipe, 'x');
    bar.update(0.5);
    bar.clear();
    expect(pipe.written).toEqual([]);
    const forced = stream(false);
    new ProgressBar(forced, 'x', 'always').update(0.5);
    expect(forced.written).toHaveLength(1);
    const never = stream(true);
    new ProgressBar(never, 'x', 'never').update(0.5);
    expect(never.written).toEqual([]);
  });

  it('redraws only when the whole percent changes, and wipes its line', () => {
    const tty = stream(true, 60);
    const bar = new ProgressBar(tty, 'storm lab');
    for (let i = 0; i <= 1000; i++) bar.update(i / 1000);
    expect(tty.written).toHaveLength(101);
    expect(tty.written.at(-1)).toBe(`\r${renderBar('storm lab', 1, 60)}\x1b[K`);
    bar.clear();
    expect(tty.written.at(-1)).toBe('\r\x1b[K');
  });

  it('fits the terminal', () => {
    expect(renderBar('lab', 0.5, 80)).toBe(`lab [${'#'.repeat(20)}${'-'.repeat(20)}]  50%`);
    expect(renderBar('lab', 0.25, 30)).toBe('lab [#####-------------]  25%');
    expect(renderBar('a long label', 1, 0)).toBe(`a long label [${'#'.repeat(10)}] 100%`);
  });
});
