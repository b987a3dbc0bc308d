import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/sequencer.js';

export default defineConfig({
  resolve: {
    // NOTE: the client package by name, from its source (as tsconfig.json's paths does for
    // tsc), so tests need no build of it; test/integration/client-package.test.ts checks
    // the built and packed package.
    alias: [{ find: /^switchyard-client$/, replacement: fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) }],
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // NOTE: integration tests share one broker; on a 2-core machine more forks only
    // add rebalance storms and slow every group join.
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    // The unit tests first (they run while the broker starts), then the slowest
    // integration files, so that no long file starts last (test/support/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        extends: true,
        // The client package's own tests run here too (and alone in the package: test/integration/client-package.test.ts).
        //
        // NOTE: isolate false: the unit files of a worker share its loaded modules instead
        // of importing src/ again for each file (the 133 files: 23 s instead of 170 s, 18 s
        // of CPU instead of 83 s, on this 2-core machine). A unit test that changes a
        // module's state, the environment or the clock puts it back (vi.useRealTimers,
        // vi.unstubAllEnvs) as every one does now.
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/chaos/**/*.test.ts', 'packages/client/test/**/*.test.ts'],
          isolate: false,
        },
      },
      {
        extends: true,
        // The run's broker: started by global-setup, awaited by broker-ready before each file.
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/broker-ready.ts'],
        },
      },
    ],
  },
});
