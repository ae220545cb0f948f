import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The package tests load dist/ as users would: build it once first.
    globalSetup: ['test/setup/build.ts'],
    testTimeout: 20_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [
            'test/**/*.fleet.test.ts',
            'test/lab-live*.test.ts',
            'test/**/*.browser.test.ts',
          ],
          sequence: { groupOrder: 0 },
        },
      },
      // Pages in headless Chromium: the tests of a describe.concurrent, each in a browser context
      // of its own, run side by side, one a core (each page computes in a worker of its own).
      {
        extends: true,
        test: {
          name: 'chromium',
          include: ['test/**/*.browser.test.ts'],
          maxConcurrency: Math.max(2, availableParallelism()),
          sequence: { groupOrder: 0 },
        },
      },
      // The fleet tests run 50 processes and measure how fast a trip spreads: alone, after the
      // rest, so the other tests' load on a 2-core machine does not slow the fleet.
      {
        extends: true,
        test: { name: 'fleet', include: ['test/**/*.fleet.test.ts'], sequence: { groupOrder: 1 } },
      },
      // The live lab makes a real retry storm on loopback (bursts of thousands of HTTP calls a
      // second): last and alone, so it neither starves the other tests nor is starved by them.
      {
        extends: true,
        test: { name: 'live', include: ['test/lab-live*.test.ts'], sequence: { groupOrder: 2 } },
      },
    ],
  },
});
