import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The package tests load dist/ as users would: build it once first.
    globalSetup: ['test/setup/build.ts'],
    testTimeout: 20_000,
  },
});
