import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { BUILD_COMMAND, staleSources } from './cli-command.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    /** A file global-setup writes once the broker is up ("started") or could not start ("failed: why"); empty when it was up before the tests. */
    kafkaBrokerStatusFile: string;
    /** A file global-setup writes once dist/ matches src/ ("fresh", "built") or could not be built ("failed: why"). */
    distStatusFile: string;
  }
}

interface RunningBroker {
  brokers: string;
  /** Of a local broker: the JVM's pid and its data folder. */
  pid?: number | undefined;
  dataDir?: string;
  stop(): Promise<void>;
}

function dockerEngineAnswers(): boolean {
  try {
    execFileSync('docker', ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 5_000 });
    return true;
  } catch {
    return false;
  }
}

async function startContainerBroker(): Promise<RunningBroker> {
  const { KafkaContainer } = await import('@testcontainers/kafka');
  // NOTE: the router writes in transactions (docs/kafka.md#transactions); the transaction
  // state log's default replication factor (3) cannot be met by one broker.
  const container = await new KafkaContainer('confluentinc/cp-kafka:7.9.0')
    .withKraft()
    .withEnvironment({ KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1', KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1' })
    .start();
  const brokers = `${container.getHost()}:${container.getMappedPort(9093)}`;
  return { brokers, stop: async () => void (await container.stop()) };
}

/**
 * NOTE: startBroker gives the broker a reaper process: vitest stopped by Ctrl-C or SIGINT
 * ends without running teardown(), and the reaper then stops the JVM and removes its data
 * from /dev/shm (test/integration/test-runner-signal.test.ts).
 */
async function startLocalBroker(port: number): Promise<RunningBroker> {
  const { startBroker } = await brokerScript();
  return startBroker({ port, log: (line) => process.stderr.write(`${line}\n`), inMemory: true });
}

function brokerScript() {
  // @ts-expect-error -- plain ESM script shared with `npm run kafka` and `npm start`
  return import('../../scripts/kafka/broker.mjs') as Promise<{
    freePort(): Promise<number>;
    startBroker(options?: { port?: number; log?: (line: string) => void; inMemory?: boolean }): Promise<RunningBroker>;
  }>;
}

let broker: RunningBroker | undefined;
let starting: Promise<RunningBroker> | undefined;
let statusDir: string | undefined;
let building: Promise<void> | undefined;

/**
 * The child processes of the tests run the compiled dist/ (test/support/cli-command.ts):
 * compiled again here, in the background beside the broker's start and the unit tests,
 * when an output is missing or older than its source (about 8 s on this 2-core machine;
 * none after `npm ci`, whose prepare compiled it).
 */
function buildDist(statusFile: string): Promise<void> {
  const stale = staleSources();
  if (stale.length === 0) {
    writeFileSync(statusFile, 'fresh');
    return Promise.resolve();
  }
  process.stderr.write(`tests: dist/ is older than src/ (${stale.length} files): compiling it (tsc -p tsconfig.build.json)\n`);
  return new Promise((resolveBuild) => {
    execFile(process.execPath, BUILD_COMMAND, { cwd: join(import.meta.dirname, '..', '..') }, (error, stdout, stderr) => {
      const still = staleSources();
      // NOTE: tsc writes its output even for a type error (the type check reports those).
      if (still.length === 0) writeFileSync(statusFile, 'built');
      else writeFileSync(statusFile, `failed: tsc -p tsconfig.build.json left ${still.length} outputs older than their sources (${error?.message ?? 'no error'}):\n${stdout}${stderr}`);
      resolveBuild();
    });
  });
}

/**
 * One broker per test run: KAFKA_BROKERS when set, else a testcontainers broker
 * when a Docker engine answers, else a local KRaft broker from Kafka's own jars.
 *
 * NOTE: the local broker starts in the background on a port chosen here, so the unit
 * tests (the `unit` project, vitest.config.ts) run during its 10 to 20 s start; each
 * integration test file waits for it first (test/support/broker-ready.ts).
 */
export async function setup(project: TestProject): Promise<void> {
  // Which Node runs the suite: the machine's, or the one the install step provisioned.
  process.stderr.write(`tests on Node ${process.versions.node}\n`);
  statusDir = mkdtempSync(join(tmpdir(), 'switchyard-test-status-'));
  const distStatusFile = join(statusDir, 'dist');
  project.provide('distStatusFile', distStatusFile);
  building = buildDist(distStatusFile);
  project.provide('kafkaBrokerStatusFile', '');
  const given = process.env.KAFKA_BROKERS;
  if (given) {
    project.provide('kafkaBrokers', given);
    return;
  }
  if (dockerEngineAnswers()) {
    broker = await startContainerBroker();
    process.stderr.write(`test broker: ${broker.brokers}\n`);
    project.provide('kafkaBrokers', broker.brokers);
    return;
  }
  const port = await (await brokerScript()).freePort();
  const statusFile = join(statusDir, 'broker');
  project.provide('kafkaBrokers', `127.0.0.1:${port}`);
  project.provide('kafkaBrokerStatusFile', statusFile);
  starting = startLocalBroker(port);
  starting.then(
    (started) => {
      broker = started;
      process.stderr.write(`test broker: ${started.brokers} (pid ${started.pid}, data in ${started.dataDir})\n`);
      writeFileSync(statusFile, 'started');
    },
    (error: unknown) => writeFileSync(statusFile, `failed: ${error instanceof Error ? error.message : String(error)}`),
  );
}

export async function teardown(): Promise<void> {
  await starting?.catch(() => undefined);
  await building;
  await broker?.stop();
  if (statusDir !== undefined) rmSync(statusDir, { recursive: true, force: true });
}
