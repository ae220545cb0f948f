import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Fail a test that leaves a promise or timer dangling rather than letting it leak into the next.
    testTimeout: 20_000,
  },
});
