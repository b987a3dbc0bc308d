import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // NOTE: the client package by name, from its source (as tsconfig.json's paths does for
    // tsc), so tests need no build of it; test/integration/client-package.test.ts checks
    // the built and packed package.
    alias: [{ find: /^switchyard-client$/, replacement: fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) }],
  },
  test: {
    // The client package's own tests run here too (and alone in the package: test/integration/client-package.test.ts).
    include: ['test/**/*.test.ts', 'packages/client/test/**/*.test.ts'],
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
