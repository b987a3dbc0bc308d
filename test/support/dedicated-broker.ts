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

/** `heapMb`: the broker's JVM heap (384 MB by default: ten thousand partitions want more). */
export async function startDedicatedBroker(options: { heapMb?: number } = {}): Promise<DedicatedBroker> {
  // @ts-expect-error -- plain ESM script shared with `npm run kafka` and `npm start`
  const { startBroker } = (await import('../../scripts/kafka/broker.mjs')) as {
    startBroker(options?: { log?: (line: string) => void; inMemory?: boolean; heapMb?: number }): Promise<DedicatedBroker>;
  };
  return startBroker({ log: (line) => process.stderr.write(`${line}\n`), inMemory: true, ...options });
}
