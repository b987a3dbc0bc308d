// The port's consumer runtime (consumer-platformatic.ts on @platformatic/kafka) on a real broker: what a role marks done is committed, what it
// does not is read again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startConsumer } from '../../src/runtime/consumer.js';
import type { CommitPolicy, RecordBatch, RunningConsumer } from '../../src/runtime/consumer.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

describe('the consumer runtime', () => {
  let tk: TestKafka;
  const client = createKafka(
    { brokers: testBrokers(), clientId: randomName('runtime'), topicPrefix: randomPrefix(), partitions: 1, replicationFactor: 1 },
    silentLogger(),
  );
  const running: RunningConsumer[] = [];

  beforeAll(async () => {
    tk = await createTestKafka();
  });

  afterAll(async () => {
    for (const consumer of running) await consumer.disconnect();
    await tk?.close();
  });

  /** A topic of one partition holding records `0` … `n-1`. */
  async function topicOf(n: number): Promise<string> {
    const topic = randomName('runtime');
    await tk.createTopic(topic, 1);
    await tk.produce(topic, Array.from({ length: n }, (_, i) => ({ key: null, value: String(i) })));
    return topic;
  }

  async function committed(groupId: string, topic: string): Promise<string | undefined> {
    const [found] = await tk.admin.fetchOffsets({ groupId, topics: [topic] });
    return found?.partitions.find((p) => p.partition === 0)?.offset;
  }

  async function consume(topic: string, groupId: string, commit: CommitPolicy, handler: (batch: RecordBatch) => Promise<void>): Promise<void> {
    running.push(await startConsumer(client, { groupId, topics: [topic], fromBeginning: true, commit, maxWaitTimeInMs: 100 }, handler, {}, silentLogger()));
  }

  it('commits what was marked done, and reads again from the first record not done', async () => {
    const topic = await topicOf(10);
    const groupId = randomName('group');
    const seen: string[] = [];
    let first = true;
    await consume(topic, groupId, { kind: 'batch-end' }, async (batch) => {
      const records = first ? batch.records.slice(0, 6) : batch.records;
      first = false;
      for (const record of records) seen.push(String(record.value));
      const last = records.at(-1);
      if (last !== undefined) await batch.markDone(last.offset);
    });
    await waitFor(async () => (await committed(groupId, topic)) === '10', { timeoutMs: 30_000, what: 'the group to commit offset 10' });
    expect(seen).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
  }, 60_000);
});
