import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
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
  const container = await new KafkaContainer('confluentinc/cp-kafka:7.9.0').withKraft().start();
  const brokers = `${container.getHost()}:${container.getMappedPort(9093)}`;
  return { brokers, stop: async () => void (await container.stop()) };
}

/**
 * NOTE: startBroker gives the broker a reaper process: vitest stopped by Ctrl-C or SIGINT
 * ends without running teardown(), and the reaper then stops the JVM and removes its data
 * from /dev/shm (test/integration/test-runner-signal.test.ts).
 */
async function startLocalBroker(): Promise<RunningBroker> {
  // @ts-expect-error -- plain ESM script shared with `npm run kafka` and `npm start`
  const { startBroker } = (await import('../../scripts/kafka/broker.mjs')) as {
    startBroker(options?: { log?: (line: string) => void; inMemory?: boolean }): Promise<RunningBroker>;
  };
  return startBroker({ log: (line) => process.stderr.write(`${line}\n`), inMemory: true });
}

let broker: RunningBroker | undefined;

/**
 * One broker per test run: KAFKA_BROKERS when set, else a testcontainers broker
 * when a Docker engine answers, else a local KRaft broker from Kafka's own jars.
 */
export async function setup(project: TestProject): Promise<void> {
  // Which Node runs the suite: the machine's, or the one the install step provisioned.
  process.stderr.write(`tests on Node ${process.versions.node}\n`);
  const given = process.env.KAFKA_BROKERS;
  if (given) {
    project.provide('kafkaBrokers', given);
    return;
  }
  broker = dockerEngineAnswers() ? await startContainerBroker() : await startLocalBroker();
  const local = broker.pid === undefined ? '' : ` (pid ${broker.pid}, data in ${broker.dataDir})`;
  process.stderr.write(`test broker: ${broker.brokers}${local}\n`);
  project.provide('kafkaBrokers', broker.brokers);
}

export async function teardown(): Promise<void> {
  await broker?.stop();
}
