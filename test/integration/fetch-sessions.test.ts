// kafkajs consumers fetch in incremental fetch sessions (src/kafka/fetch-sessions.ts): on
// a real broker, an idle consumer's fetches name no partition at all, and the records
// still arrive, each once and in order, through pauses and resumes (a paused partition
// leaves the session, a resumed one comes back). The broker restart, where the broker
// forgets its sessions, is in partition-stream-restart.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin, createKafka, createPartitionStream } from '../../src/kafka/index.js';
import type { InboundRecord, KafkaAdmin, PartitionStream } from '../../src/kafka/index.js';
import { fetchSessionCounts } from '../../src/kafka/fetch-sessions.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor } from '../support/wait-for.js';

const TOPICS = 20;
const PARTITIONS = 2;
const PER_PARTITION = 3;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  await kafka?.close();
});

describe('incremental fetch sessions', () => {
  let admin: KafkaAdmin;
  let stream: PartitionStream | undefined;
  const prefix = randomPrefix();
  const topics = Array.from({ length: TOPICS }, (_, i) => `${prefix}fs-${i}`);
  const got: InboundRecord[] = [];
  const count = (topic?: string) => got.filter((r) => topic === undefined || r.topic === topic).length;

  /** PER_PARTITION records to each partition of `into`, tagged with the round. */
  async function produceRound(round: number, into: readonly string[] = topics): Promise<void> {
    for (const topic of into) {
      const messages = [];
      for (let partition = 0; partition < PARTITIONS; partition++) {
        for (let i = 0; i < PER_PARTITION; i++) messages.push({ partition, value: `${round}-${partition}-${i}` });
      }
      await kafka.producer.send({ topic, messages });
    }
  }

  beforeAll(async () => {
    const settings = testConfig({ kafka: { brokers: testBrokers(), clientId: randomName('fs'), topicPrefix: prefix }, sources: [{ id: 'web' }], destinations: [] }).kafka;
    admin = createAdmin(createKafka(settings, silentLogger()));
    await admin.connect();
    await admin.ensureTopics(
      topics.map((topic) => ({ topic })),
      { partitions: PARTITIONS, replicationFactor: 1 },
    );
    stream = createPartitionStream(
      createKafka(settings, silentLogger()),
      { groupId: randomName('fs-group'), admin, commitEveryMs: 100, maxWaitTimeInMs: 200 },
      {
        accept: (records) => {
          got.push(...records);
          for (const r of records) stream!.ledger.finish(r.topic, r.partition, r.offset);
        },
        revoke: () => [],
      },
      {},
      silentLogger(),
    );
    await stream.start(topics);
  });

  afterAll(async () => {
    await stream?.stop();
    await admin?.disconnect();
  });

  it('an idle consumer sends fetches that name no partition, and records produced then still arrive', async () => {
    await produceRound(1);
    await waitFor(() => count() === TOPICS * PARTITIONS * PER_PARTITION, { what: 'round 1' });
    await sleep(600); // the fetch after the last records names their partitions' new offsets
    const before = { ...fetchSessionCounts };
    await sleep(1_500);
    expect(fetchSessionCounts.incremental - before.incremental).toBeGreaterThanOrEqual(3);
    expect(fetchSessionCounts.partitionsNamed - before.partitionsNamed).toBe(0);
    expect(fetchSessionCounts.full - before.full).toBe(0);

    await produceRound(2);
    await waitFor(() => count() === 2 * TOPICS * PARTITIONS * PER_PARTITION, { what: 'round 2, produced while the consumer was idle' });
  });

  it('a paused partition gets nothing until it is resumed, then everything it missed', async () => {
    const [held] = topics;
    for (let partition = 0; partition < PARTITIONS; partition++) stream!.pause(held!, partition);
    const heldBefore = count(held);
    await produceRound(3);
    await waitFor(() => topics.slice(1).every((t) => count(t) === 3 * PARTITIONS * PER_PARTITION), { what: 'round 3 on the topics not paused' });
    await sleep(1_000);
    expect(count(held)).toBe(heldBefore);

    for (let partition = 0; partition < PARTITIONS; partition++) stream!.resume(held!, partition);
    await waitFor(() => count(held) === 3 * PARTITIONS * PER_PARTITION, { what: 'the resumed topic to catch up' });
  });

  it('every record arrived once, in order within its partition', () => {
    for (const topic of topics) {
      for (let partition = 0; partition < PARTITIONS; partition++) {
        const offsets = got.filter((r) => r.topic === topic && r.partition === partition).map((r) => Number(r.offset));
        expect(offsets, `${topic}/${partition}`).toEqual(Array.from({ length: 3 * PER_PARTITION }, (_, i) => i));
      }
    }
  });
});
