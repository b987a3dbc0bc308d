// The port's consumer runtime (src/kafka/consumer.ts) on a real broker: what a role
// marks done is committed, what it does not is read again, a held partition comes
// back, and the timer policy commits while a long batch still runs (what the
// deliverer's worker needs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, startConsumer } from '../../src/kafka/index.js';
import type { CommitPolicy, RecordBatch, RunningConsumer } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

describe('the consumer runtime', () => {
  let tk: TestKafka;
  const client = createKafka({ brokers: testBrokers(), clientId: randomName('runtime'), topicPrefix: randomPrefix(), partitions: 1, replicationFactor: 1 }, silentLogger());
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

  it('fetches a held partition again after the hold, from the first record not done', async () => {
    const topic = await topicOf(3);
    const groupId = randomName('group');
    const seen: string[] = [];
    let holds = 0;
    await consume(topic, groupId, { kind: 'batch-end' }, async (batch) => {
      for (const record of batch.records) {
        if (record.offset === '1' && holds === 0) {
          holds += 1;
          batch.holdPartition(500);
          return;
        }
        seen.push(String(record.value));
        await batch.markDone(record.offset);
      }
    });
    await waitFor(async () => (await committed(groupId, topic)) === '3', { timeoutMs: 30_000, what: 'the group to commit offset 3' });
    expect(holds).toBe(1);
    expect(seen).toEqual(['0', '1', '2']);
  }, 60_000);

  it('with the timer policy, commits what is done while the batch still runs, and after a failure', async () => {
    const topic = await topicOf(4);
    const groupId = randomName('group');
    let attempts = 0;
    let committedWhileRunning: string | undefined;
    let ownedWhileRunning: boolean | undefined;
    await consume(topic, groupId, { kind: 'timer', commitEveryMs: 200 }, async (batch) => {
      attempts += 1;
      if (attempts === 1) {
        await batch.markDone(batch.records[1]!.offset);
        // The batch goes on (a slow receiver); the timer commits what is done meanwhile.
        committedWhileRunning = await waitFor(async () => ((await committed(groupId, topic)) === '2' ? '2' : undefined), {
          timeoutMs: 20_000,
          what: 'the timer to commit offset 2 during the batch',
        });
        ownedWhileRunning = batch.stillOwned();
        throw new Error('a write failed');
      }
      const last = batch.records.at(-1)!;
      await batch.markDone(last.offset);
    });
    await waitFor(async () => (await committed(groupId, topic)) === '4', { timeoutMs: 30_000, what: 'the group to commit offset 4' });
    expect(committedWhileRunning).toBe('2');
    expect(ownedWhileRunning).toBe(true);
    expect(attempts).toBeGreaterThanOrEqual(2);
  }, 60_000);
});
