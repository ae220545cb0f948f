// Every report the CLI writes, opened in headless Chromium: no text of a picture (a title, a
// legend entry, a label) may leave its chart. Titles carry figures, so the reports are made by
// the CLI from real runs with the smallest parameters that still give the long figures, in both
// formats (.html pages of one <svg> per chart, .svg pictures of several charts).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveReport } from '../src/cli/live.js';
import type { LiveLabResult, LiveRun } from '../src/lab/index.js';
import type { LiveSecond } from '../src/lab/measure.js';
import { liveParameters } from '../src/lab/params.js';
import { figuresSvg, scenarioReport } from '../src/sim/map/report.js';
import {
  type MapScenarioSetup,
  WEATHER_CONNECTIONS,
  WEATHER_FAULT_SECONDS,
} from '../src/sim/map/scenarios.js';
import { renderReportHtml, renderReportSvg } from '../src/sim/plot.js';
import { launchChromium, textFit } from './helpers/browser.js';
import { runCli } from './helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'stormproof-reports-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The reports the CLI writes: each command, ending with the file it writes. */
const CLI_REPORTS: readonly string[] = [
  // 90 s is the shortest run in which naive with manual recovery has not recovered by the end:
  // the longest titles of the lab ("..., recovered not by the end").
  'lab --duration 90 --out lab.html',
  'lab --manual-recovery --duration 90 --out lab-manual.svg',
  'map --policy full-jitter --server on --loads 0.1,0.95 --triggers 1,30 --seeds 1 --out map.html',
  'map --policy full-jitter --server on --loads 0.1,0.95 --triggers 1,30 --seeds 1 --out map.svg',
  'sim herd --plot herd.html',
  'sim budget --plot budget.html',
  'sim brooker --runs 10 --plot brooker.html',
  'sim brooker --runs 10 --plot brooker.svg',
  'sim layers --layers 5 --attempts 8 --plot layers.html',
  'sim storm --plot storm.html',
  // The longest name a storm run has (60 s: the failover and 20 s after it; the whole 180 s took
  // 4.8 s, this 1.7 s).
  'sim storm --policy stormproof --breaker --server stormproof --duration 60 --plot storm-server.svg',
  // A failover at the very end of the run: its band's label must stay inside the chart.
  'sim storm --duration 20 --fault-at 17 --fault-seconds 3 --plot storm-late.html',
  'sim timers --plot timers.html',
  'sim hedge --requests 300 --fan-out 20 --plot hedge.html',
  'sim limits --concurrency 1 --service-ms 1 --loads 2 --plot limits.html',
  // One chart: a picture one chart wide, under the report's long title and section heading.
  'sim limits --contender knee --concurrency 1 --service-ms 1 --loads 2 --plot limits-knee.svg',
];

/** One second of a made-up live run: a normal load, a storm after the failover, then calm. */
function liveSecond(t: number, peak: number): LiveSecond {
  const storm = t >= 12 && t < 20;
  const offered = storm ? peak : 60;
  return {
    t,
    offered,
    arrived: 60,
    okByArrival: storm ? 10 : 60,
    succeeded: storm ? 10 : 60,
    failed: storm ? 50 : 0,
    apiCalls: storm ? peak * 2 : 60,
    shed: 0,
  };
}

function liveRun(name: LiveRun['name'], peak: number, recovered: number | null): LiveRun {
  const series = Array.from({ length: 35 }, (_, t) => liveSecond(t, peak));
  return {
    name,
    setup: name,
    faultFromSeconds: 2,
    faultUntilSeconds: 12,
    series,
    figures: {
      normalRps: 60,
      peakAfterDbBackRps: peak,
      peakOverNormal: Math.round((peak / 60) * 100) / 100,
      servedAfterRps: 60,
      offeredAfterRps: recovered === null ? peak : 60,
      recoveredAfterSeconds: recovered,
      userRequests: 2100,
      failedUserRequests: 400,
      unfinishedUserRequests: 0,
      edgeCallsPerUserRequest: 3.5,
      apiCallsPerUserRequest: 7.25,
      apiRejected: 12_345,
      wastedAnswers: 1234,
      shed: 0,
    },
    wallMs: 35_000,
  };
}

/**
 * The live lab's report, drawn by its own code (liveReport) from a made-up result: the CLI's live
 * run is a real storm on loopback of about 100 s. Its figures are as long as a slow machine can
 * make them (four-digit peaks; runs that did not recover by the end).
 */
function liveLabResult(): LiveLabResult {
  return {
    parameters: liveParameters().parameters,
    runs: [
      liveRun('old-stack', 3912, null),
      liveRun('stormproof-clients', 1204, 12),
      liveRun('stormproof-server', 1108, null),
    ],
  };
}

/**
 * `map --scenario weather-api`'s report, drawn by its own code from made-up setups: the scenario
 * runs the storm model 24 times (about a minute); its heatmaps' titles carry no figures.
 */
function weatherReport() {
  const setups: MapScenarioSetup[] = ['naive', 'stormproof'].flatMap((policy) =>
    WEATHER_FAULT_SECONDS.flatMap((fault) =>
      WEATHER_CONNECTIONS.map((connections, i) => ({
        name: `${policy}, ${connections} connections, ${fault} s`,
        expected: null,
        judgedBy: 'seeds' as const,
        class: i % 2 === 0 ? ('stable' as const) : ('metastable' as const),
        probability: { stable: 0.5, vulnerable: 0, metastable: 0.5 },
        finalShare: 0.999,
        amplification: 12.345,
        holds: true,
      })),
    ),
  );
  return scenarioReport({
    scenario: 'weather-api',
    source: 'the storm model',
    model: 'the storm model',
    setups,
    holds: true,
  });
}

let browser: Browser;
const files: string[] = [];

beforeAll(async () => {
  browser = await launchChromium("the reports' charts");
  // Two at a time: the lab runs fill both cores of a small machine.
  const queue = [...CLI_REPORTS];
  const lane = async () => {
    for (let command = queue.shift(); command !== undefined; command = queue.shift()) {
      const args = command.split(' ');
      const file = join(dir, args.pop()!);
      const ran = await runCli([...args, file, '--progress', 'never']);
      expect(ran.code, `${command}: ${ran.stderr}`).toBe(0);
      files.push(file);
    }
  };
  await Promise.all([lane(), lane()]);
  const written: [string, string][] = [
    ['live.html', renderReportHtml(liveReport(liveLabResult()))],
    ['live.svg', renderReportSvg(liveReport(liveLabResult()))],
    ['weather.html', renderReportHtml(weatherReport())],
    ['weather.svg', figuresSvg(weatherReport())],
  ];
  for (const [name, text] of written) {
    writeFileSync(join(dir, name), text);
    files.push(join(dir, name));
  }
}, 240_000);

afterAll(async () => {
  await browser?.close();
});

describe('every report the CLI writes, in headless Chromium', () => {
  it('keeps every text of every chart inside its chart', async () => {
    expect(files).toHaveLength(CLI_REPORTS.length + 4);
    const page = await browser.newPage({ viewport: { width: 1300, height: 900 } });
    const found: Record<string, unknown> = {};
    for (const file of files) {
      await page.goto(pathToFileURL(file).href);
      const fit = await textFit(page);
      // A report whose pictures drew no text would pass for nothing.
      expect(fit.texts, file).toBeGreaterThan(5);
      if (fit.overflows.length > 0) found[file.slice(dir.length + 1)] = fit.overflows;
    }
    expect(found).toEqual({});
  }, 60_000);
});
