// Set up before each integration test file (vitest.config.ts): the run's broker, started
// in the background by global-setup while the unit tests run, is up before the file's
// first hook, and so is the compiled dist/ that the file's child processes run
// (test/support/cli-command.ts). A broker that could not start, or a dist/ that could not
// be compiled, fails the file with its own reason.
import { existsSync, readFileSync } from 'node:fs';
import { inject } from 'vitest';
import { waitFor } from './wait-for.js';

/** startBroker's own limit (120 s) plus the storage format before it. */
const BROKER_START_TIMEOUT_MS = 180_000;
/** tsc -p tsconfig.build.json: about 8 s on a quiet 2-core machine, beside the unit tests. */
const BUILD_TIMEOUT_MS = 180_000;

/** The text of a status file global-setup writes, once it is there. */
function statusOf(file: string, timeoutMs: number, what: string): Promise<string> {
  return waitFor(() => (existsSync(file) ? readFileSync(file, 'utf8') : undefined), { timeoutMs, intervalMs: 100, what });
}

const distStatus = await statusOf(inject('distStatusFile'), BUILD_TIMEOUT_MS, 'the compile of src/ to dist/ (tsc -p tsconfig.build.json)');
if (distStatus !== 'fresh' && distStatus !== 'built') throw new Error(`dist/ could not be compiled for the tests' child processes (${distStatus}); run npm run build to see why`);

const statusFile = inject('kafkaBrokerStatusFile');
if (statusFile !== '') {
  const status = await statusOf(statusFile, BROKER_START_TIMEOUT_MS, `the test broker at ${inject('kafkaBrokers')} to start`);
  if (status !== 'started') throw new Error(`the test broker at ${inject('kafkaBrokers')} did not start (${status}); the integration tests need it`);
}
