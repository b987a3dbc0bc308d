// A Kafka broker of a test's own (scripts/kafka/broker.mjs), for tests that stop and
// restart it: the run's shared broker (global-setup) must stay up for the others.
export interface DedicatedBroker {
  /** Bootstrap address. */
  brokers: string;
  /** Stops the broker process and keeps its data (a restart follows). */
  stopProcess(): Promise<void>;
  /** Starts the stopped process again on the same port and data. */
  startProcess(): Promise<void>;
  /** Stops it for good and removes its data. */
  stop(): Promise<void>;
}

export async function startDedicatedBroker(): Promise<DedicatedBroker> {
  // @ts-expect-error -- plain ESM script shared with `npm run kafka` and `npm start`
  const { startBroker } = (await import('../../scripts/kafka/broker.mjs')) as {
    startBroker(options?: { log?: (line: string) => void; inMemory?: boolean }): Promise<DedicatedBroker>;
  };
  return startBroker({ log: (line) => process.stderr.write(`${line}\n`), inMemory: true });
}
