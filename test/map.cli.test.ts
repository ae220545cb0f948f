// `stormproof map` as users run it (node dist/cli/main.js map, built by the suite's global setup):
// a small sweep in worker threads with --json and its report, a scenario, and usage errors that
// name the option (exit 2).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'stormproof-map-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `stormproof map` with these arguments. */
const cli = (args: readonly string[], onStderr?: Parameters<typeof runCli>[1]) =>
  runCli(['map', ...args], onStderr);

const SMALL = [
  '--policy',
  'naive',
  '--server',
  'off',
  '--trigger',
  'capacity-loss',
  '--loads',
  '0.2,0.7',
  '--triggers',
  '1,10',
];

describe('stormproof map', () => {
  it('--json prints one object with every cell, the rule and the boundaries, and writes the report', async () => {
    const out = join(dir, 'map.html');
    const r = await cli([...SMALL, '--json', '--out', out, '--threads', '2']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const map = JSON.parse(r.stdout);
    expect(map.rule).toMatch(/stable = goodput back to >= 95% of offered/);
    expect(map.cells).toHaveLength(4);
    expect(map.grid.seeds).toBe(5);
    const hot = map.cells.find(
      (c: { load: number; triggerSeconds: number }) => c.load === 0.7 && c.triggerSeconds === 10,
    );
    expect(hot.class).toBe('metastable');
    expect(map.boundaries).toHaveLength(2);
    expect(map.report).toBe(out);
    const html = readFileSync(out, 'utf8');
    expect(html.match(/class="cell"/g)).toHaveLength(4);
  });

  it('prints the rule, the map and how long it took', async () => {
    const r = await cli([...SMALL, '--out', join(dir, 'map.svg')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('metastable = goodput below 50% of offered in every window');
    expect(r.stdout).toMatch(/0\.7 +\.M/);
    expect(r.stdout).toMatch(/20 runs on \d+ worker threads? in [\d.]+ s/);
    expect(readFileSync(join(dir, 'map.svg'), 'utf8')).toMatch(/^<svg/);
  });

  it('--scenario brooker-collapse reproduces the published outcome (exit 0)', async () => {
    const r = await cli(['--scenario', 'brooker-collapse', '--json', '--out', join(dir, 'b.html')]);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.holds).toBe(true);
    expect(result.setups.map((s: { class: string }) => s.class)).toEqual(['metastable', 'stable']);
  });

  it('draws a progress bar, and Ctrl-C stops every worker at once: exit 130, one line', async () => {
    let sent = false;
    const r = await cli(
      ['--progress', 'always', '--out', join(dir, 'never.html')],
      (text, child) => {
        if (!sent && /\[#+-*\] +\d+%/.test(text)) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    );
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stdout).toBe('');
    expect(r.stderr.endsWith('\r\x1b[Kstormproof: interrupted\n')).toBe(true);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('--help lists the options and the scenarios', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--scenario');
    expect(r.stdout).toContain('huang2022-retry');
  });

  it.each([
    [['--seeds', '0'], /--seeds must be an integer from 1 to 1000, got "0"/],
    [
      ['--loads', '0.5,0.5'],
      /--loads must be comma-separated numbers .* none repeated, got "0.5,0.5"/,
    ],
    [['--loads', 'a'], /--loads must be comma-separated numbers/],
    [['--policy', 'eager'], /--policy must be one of all, naive/],
    [['--out', 'map.txt'], /--out must be a file name ending in .html or .htm or .svg/],
    [['--scenario', 'brooker-collapse', '--loads', '0.5'], /--loads is an option of the sweep/],
    [['--scale', '0.5'], /--scale is an option of --scenario huang2022-retry only/],
    [['--lods', '0.5'], /unknown option --lods \(did you mean --loads\?\)/],
  ])('%j is a usage error naming the option (exit 2)', async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });
});
