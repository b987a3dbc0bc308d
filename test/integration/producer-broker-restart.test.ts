// Regression (found by the chaos harness, on kafkajs): with an idempotent producer, sends
// that overlap while the broker restarts could be acknowledged without being written —
// a failed request's sequence numbers were reused for other records, which the broker
// took for a duplicate — and the producer could stay stuck on OUT_OF_ORDER_SEQUENCE_NUMBER
// afterwards. The daemon's producer (src/kafka/producer.ts, createProducer) must never
// acknowledge a record it did not write, and must keep writing after every restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, createProducer } from '../../src/kafka/index.js';
import type { RecordProducer } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createTestAdmin, randomName, readTopic } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';

/** Overlapping sends, as the gateway's and the deliverer's batchers make them. */
const SENDERS = 20;
const RECORDS_PER_SEND = 20;
const RESTARTS = 6;

describe('the daemon producer across broker restarts', () => {
  const topic = randomName('restart');
  let broker: DedicatedBroker;
  let producer: RecordProducer;

  beforeAll(async () => {
    broker = await startDedicatedBroker();
    const admin = createTestAdmin([broker.brokers]);
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] });
    await admin.close();
    producer = createProducer(
      createKafka({ brokers: [broker.brokers], clientId: 'restart-test', topicPrefix: 'x.', partitions: 3, replicationFactor: 1 }, silentLogger()),
    );
    await producer.connect();
  });

  afterAll(async () => {
    await producer?.disconnect();
    await broker?.stop();
  });

  it('acknowledges only records it wrote, and writes again after each restart', async () => {
    const acknowledged = new Set<string>();
    let next = 0;
    let sending = true;
    const sender = async (): Promise<void> => {
      while (sending) {
        const ids = Array.from({ length: RECORDS_PER_SEND }, () => `r-${next++}`);
        try {
          // Null keys half the time: a client may spread those over the partitions anew on every retry.
          await producer.send([{ topic, messages: ids.map((id, i) => ({ key: i % 2 === 0 ? null : `k-${id}`, value: id })) }]);
          for (const id of ids) acknowledged.add(id);
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
    };
    const senders = Array.from({ length: SENDERS }, sender);
    try {
      for (let restart = 1; restart <= RESTARTS; restart++) {
        const before = acknowledged.size;
        await waitFor(() => acknowledged.size >= before + 1_000, { timeoutMs: 30_000, what: `writes acknowledged again before restart ${restart}` });
        await broker.stopProcess();
        await broker.startProcess();
      }
      const last = acknowledged.size;
      await waitFor(() => acknowledged.size >= last + 1_000, { timeoutMs: 30_000, what: 'writes acknowledged after the last restart' });
    } finally {
      sending = false;
      await Promise.all(senders);
    }

    const admin = createTestAdmin([broker.brokers]);
    const read = await readTopic(admin, topic, { timeoutMs: 60_000 }, [broker.brokers]).finally(() => admin.close());
    const total = read.length;
    const stored = new Set(read.map((m) => m.text));

    const missing = [...acknowledged].filter((id) => !stored.has(id));
    process.stderr.write(`producer across ${RESTARTS} restarts: ${acknowledged.size} acknowledged, ${total} stored, ${missing.length} missing\n`);
    expect(missing).toEqual([]);
  }, 120_000);
});
