// Set up before each integration test file (vitest.config.ts): the run's broker, started
// in the background by global-setup while the unit tests run, is up before the file's
// first hook. A broker that could not start fails the file with the broker's own reason.
import { existsSync, readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { waitFor } from './wait-for.js';

/** startBroker's own limit (120 s) plus the storage format before it. */
const BROKER_START_TIMEOUT_MS = 180_000;

const statusFile = inject('kafkaBrokerStatusFile');
if (statusFile !== '') {
  const status = await waitFor(() => existsSync(statusFile) && readFileSync(statusFile, 'utf8'), {
    timeoutMs: BROKER_START_TIMEOUT_MS,
    intervalMs: 100,
    what: `the test broker at ${inject('kafkaBrokers')} to start`,
  });
  if (status !== 'started') throw new Error(`the test broker at ${inject('kafkaBrokers')} did not start (${status}); the integration tests need it`);
}
