// What the deliverer's integration tests share: a Kafka client for the file, receivers
// and daemons that are closed and killed after it, and the records a router writes to
// `deliveries.<id>` (docs/kafka.md#record-headers).
import { afterAll, beforeAll } from 'vitest';
import { killAll } from './daemon.js';
import type { Daemon } from './daemon.js';
import { createTestKafka } from './kafka.js';
import { startReceiver } from './receiver.js';
import type { Receiver } from './receiver.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

export interface DelivererBed {
  /** The file's Kafka client (set in its beforeAll). */
  kafka(): TestKafka;
  /** A receiver, closed after the file. */
  receiver(): Promise<Receiver>;
  /** Daemons pushed here are killed after the file. */
  readonly daemons: Daemon[];
  /** Writes one record per event to `<prefix>deliveries.<destination>`, as the router does: source `web`, first attempt. */
  produceDeliveries(prefix: string, destination: string, events: readonly { key: string; value: string; messageId: string }[]): Promise<void>;
}

/** Registers the file's beforeAll/afterAll and gives what they hold. */
export function useDelivererBed(): DelivererBed {
  let kafka: TestKafka | undefined;
  const receivers: Receiver[] = [];
  const daemons: Daemon[] = [];
  beforeAll(async () => {
    kafka = await createTestKafka();
  });
  afterAll(async () => {
    await killAll(daemons);
    for (const receiver of receivers) await receiver.close();
    await kafka?.close();
  });
  const client = (): TestKafka => {
    if (kafka === undefined) throw new Error('useDelivererBed: the Kafka client is made in beforeAll; use it inside a test');
    return kafka;
  };
  return {
    kafka: client,
    daemons,
    async receiver() {
      const started = await startReceiver();
      receivers.push(started);
      return started;
    },
    async produceDeliveries(prefix, destination, events) {
      const messages = events.map(({ key, value, messageId }) => ({
        key,
        value,
        headers: { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '' },
      }));
      await client().produce(`${prefix}deliveries.${destination}`, messages);
    },
  };
}
