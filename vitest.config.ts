import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default (available cores − 1) is a single worker on the 2-core machines this runs on;
    // most files wait on sockets, child processes and timers, so two forks keep both cores busy.
    maxWorkers: 2,
    env: { NODE_ENV: 'test' },
  },
});
