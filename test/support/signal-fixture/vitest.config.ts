// A vitest run that only waits, for test/integration/test-runner-signal.test.ts: the
// project's global setup (a local broker when KAFKA_BROKERS is unset), the wait for it
// that each integration file has, and one test that runs until the run is stopped.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: fileURLToPath(new URL('../../..', import.meta.url)),
  test: {
    include: ['test/support/signal-fixture/waits.fixture.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/broker-ready.ts'],
    testTimeout: 600_000,
    pool: 'forks',
    maxWorkers: 1,
  },
});
