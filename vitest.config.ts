import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files far longer than their size says, started first (vitest starts the largest first when it
 * has no timings of its own, as in a fresh clone): the git install's builds take most of a
 * minute, and the short files beside them leave a core idle much of the time; the full storms'
 * file is a few imports (test/storms/ holds its tests) and computes for 30 s, last of all when
 * it was left to its size; the type check and the linter are two commands (13 s).
 */
const LONG_FILES = ['test/install.test.ts', 'test/storms.test.ts', 'test/typecheck.test.ts'];

/** Files that keep both cores busy by themselves. */
const HEAVY = ['test/page.browser.test.ts', 'test/reports.browser.test.ts', 'test/cli.test.ts'];

/**
 * The unit files one more at a time than there are cores: most of them wait on timers, sockets
 * and child processes, and a third file fills the time a core would idle (on 2 cores the unit
 * phase took 238 s two at a time, 180 s three at a time).
 */
const UNIT_WORKERS = availableParallelism() + 1;

class LongFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = LONG_FILES.indexOf(relative(file.project.config.root, file.moduleId));
      return at === -1 ? LONG_FILES.length : at;
    };
    const order = (file: TestSpecification) => file.project.config.sequence.groupOrder;
    // Stable: vitest's own order (failed first, then the longest last time) for the others.
    return (await super.sort(files)).sort((a, b) => order(a) - order(b) || rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // The package tests load dist/ as users would: build it once first.
    globalSetup: ['test/setup/build.ts'],
    testTimeout: 20_000,
    // Two files at a time on two cores (vitest's own default is one fewer than the cores: one):
    // most files wait on timers, sockets and child processes more than they compute, and each
    // costs about a second to load (16 of them: 77 s one at a time, 48 s two at a time). The
    // files that keep both cores busy on their own run one at a time after them ('heavy').
    maxWorkers: Math.max(2, availableParallelism() - 1),
    sequence: { sequencer: LongFilesFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.fleet.test.ts', 'test/lab-live*.test.ts', ...HEAVY],
          maxWorkers: UNIT_WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      // Chromium computing the page two tests at a time, the CLI's reports made two at a time,
      // the CLI's own tests at once: each keeps both cores busy, and two of them side by side
      // only slow each other (the four longest files: 187 s one at a time, 202 s two at a time).
      {
        extends: true,
        test: { name: 'heavy', include: HEAVY, maxWorkers: 1, sequence: { groupOrder: 1 } },
      },
      // The fleet tests run 50 processes and measure how fast a trip spreads: alone, after the
      // rest, so the other tests' load on a 2-core machine does not slow the fleet.
      {
        extends: true,
        test: { name: 'fleet', include: ['test/**/*.fleet.test.ts'], sequence: { groupOrder: 2 } },
      },
      // The live lab makes a real retry storm on loopback (bursts of thousands of HTTP calls a
      // second): last and alone, so it neither starves the other tests nor is starved by them.
      {
        extends: true,
        test: { name: 'live', include: ['test/lab-live*.test.ts'], sequence: { groupOrder: 3 } },
      },
    ],
  },
});
