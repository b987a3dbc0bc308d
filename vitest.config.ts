import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // NOTE: integration tests share one broker; on a 2-core machine more forks only
    // add rebalance storms and slow every group join.
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
  },
});
