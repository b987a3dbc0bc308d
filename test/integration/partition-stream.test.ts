// The port's partition stream on a real broker: records finished out of order are
// committed with the finished ones above the commit in its metadata, and a member that
// takes the partition over skips them; the deliverer's upgrade from older group names
// (one group per destination, then `<clientId>-deliverer`) starts where the old group stopped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivererService, delivererGroupId, legacyDelivererGroupId } from '../../src/delivery/deliverer-service.js';
import { createAdmin, createKafka, decodeFinished, isGroupInUse } from '../../src/kafka/index.js';
import { createDeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { DeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { InboundRecord, KafkaAdmin } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

let kafka: Awaited<ReturnType<typeof createTestKafka>>;

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  await kafka?.close();
});

const ids = (n: number) => Array.from({ length: n }, (_, i) => `e-${i}`);

describe('partition stream', () => {
  let admin: KafkaAdmin;
  const streams: DeliveryStream[] = [];

  beforeAll(async () => {
    admin = createAdmin(createKafka(testConfig(minimalConfig(randomPrefix(), randomName('ps'))).kafka, silentLogger()));
    await admin.connect();
  });

  afterAll(async () => {
    for (const stream of streams) await stream.stop().catch(() => undefined);
    await admin?.disconnect();
  });

  /** `count` new topics of one partition each, named `<prefix><name>.<i>`. */
  async function onePartitionTopics(name: string, count: number): Promise<string[]> {
    const prefix = randomPrefix();
    const topics = Array.from({ length: count }, (_, i) => `${prefix}${name}.${i}`);
    await admin.ensureTopics(
      topics.map((topic) => ({ topic })),
      { partitions: 1, replicationFactor: 1 },
    );
    return topics;
  }

  function startStream(groupId: string, got: InboundRecord[], commitDelayMs?: number, onAccept: () => void = () => undefined): DeliveryStream {
    const client = createKafka(testConfig(minimalConfig('x.', 'ps')).kafka, silentLogger());
    const stream = createDeliveryStream(
      client,
      { groupId, admin, commitEveryMs: 100, maxWaitTimeInMs: 200, ...(commitDelayMs !== undefined ? { commitDelayMs } : {}) },
      {
        accept: (records) => {
          got.push(...records);
          onAccept();
          return true;
        },
        revoke: () => [],
      },
      {},
      silentLogger(),
    );
    streams.push(stream);
    return stream;
  }

  it('a member that takes a partition over skips the offsets the last commit lists as finished', async () => {
    const topic = `${randomPrefix()}stream`;
    const groupId = randomName('ps-group');
    // The port's topic creation waits out a busy broker's first answers (ensure-topics.ts).
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    await kafka.produce(topic, ids(10).map((id) => ({ key: id, value: id })));

    const first: InboundRecord[] = [];
    const a = startStream(groupId, first);
    await a.start([topic]);
    await waitFor(() => first.length === 10, { what: 'the first member to get all ten records' });
    // Finished out of order: 0, 1, 3, 4 and 7; 2, 5, 6, 8 and 9 were still in flight.
    for (const offset of ['7', '3', '0', '4', '1']) a.ledger.finish(topic, 0, offset);
    await waitFor(
      async () => {
        const [committed] = await admin.committedOffsets(groupId, [topic]);
        const p = committed?.partitions[0];
        return p?.offset === '2' && decodeFinished(2n, p.metadata).join() === '3,4,7';
      },
      { what: 'the commit at 2 with 3, 4 and 7 in its metadata' },
    );
    await a.stop();

    const second: InboundRecord[] = [];
    const b = startStream(groupId, second);
    await b.start([topic]);
    await waitFor(() => second.length >= 5, { what: 'the next member to get the unfinished records' });
    await waitFor(() => b.joined(), { what: 'the next member to join' });
    expect(second.map((r) => r.offset)).toEqual(['2', '5', '6', '8', '9']);
    for (const offset of ['9', '2', '8', '6', '5']) b.ledger.finish(topic, 0, offset);
    await waitFor(async () => (await admin.committedOffsets(groupId, [topic]))[0]?.partitions[0]?.offset === '10', { what: 'everything committed' });
    await b.stop();
  });

  it('tells which completions are committed: each gets a ticket, the broker\'s answer moves committedThrough past it; commitSoon does not wait for the delay', async () => {
    const topic = `${randomPrefix()}tickets`;
    const groupId = randomName('ps-tickets');
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    await kafka.produce(topic, ids(4).map((id) => ({ key: id, value: id })));
    const got: InboundRecord[] = [];
    // A commit waits a minute after a completion unless asked to hurry.
    const stream = startStream(groupId, got, 60_000);
    await stream.start([topic]);
    await waitFor(() => got.length === 4 && stream.joined(), { what: 'the four records, joined' });
    expect(stream.ledger.committedThrough()).toBe(0);
    const first = stream.ledger.finish(topic, 0, '0');
    const second = stream.ledger.finish(topic, 0, '2');
    expect(second).toBeGreaterThan(first);
    expect(stream.ledger.committedThrough()).toBeLessThan(first);
    let woken = 0;
    stream.ledger.whenCommitted(() => (woken += 1));
    stream.ledger.commitSoon();
    await waitFor(() => stream.ledger.committedThrough() >= second, { what: 'both completions committed', timeoutMs: 10_000 });
    expect(woken).toBe(1);
    const [committed] = await admin.committedOffsets(groupId, [topic]);
    expect(committed?.partitions[0]?.offset).toBe('1');
    expect(decodeFinished(1n, committed?.partitions[0]?.metadata ?? null)).toEqual([2n]);
    // A completion of a partition not this member's is no commit's to wait for.
    expect(stream.ledger.finish(`${topic}-not-ours`, 0, '0')).toBeLessThanOrEqual(stream.ledger.committedThrough());
    await stream.stop();
  });

  it('resubscribed to no topic it commits what finished and leaves its group; given topics again, it joins and hands over what is left', async () => {
    const topic = `${randomPrefix()}none`;
    const groupId = randomName('ps-none');
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    await kafka.produce(topic, ids(4).map((id) => ({ key: id, value: id })));
    const got: InboundRecord[] = [];
    const stream = startStream(groupId, got);
    await stream.start([topic]);
    await waitFor(() => got.length === 4 && stream.joined(), { what: 'the four records, joined' });
    stream.ledger.finish(topic, 0, '0');
    stream.ledger.finish(topic, 0, '2');
    // The role dropped what it held of the topic (every lane retired), then the topics go.
    stream.revokeTopic(topic);
    await stream.resubscribe([]);
    expect(stream.joined()).toBe(false);
    const [committed] = await admin.committedOffsets(groupId, [topic]);
    expect(committed?.partitions[0]?.offset).toBe('1');
    expect(decodeFinished(1n, committed?.partitions[0]?.metadata ?? null)).toEqual([2n]);
    await waitFor(async () => (await kafka.admin.describeGroups([groupId])).groups[0]?.members.length === 0, { what: 'the group to have no member' });

    await kafka.produce(topic, [{ key: 'e-4', value: 'e-4' }]);
    got.length = 0;
    await stream.resubscribe([topic]);
    await waitFor(() => got.length >= 3 && stream.joined(), { what: 'the unfinished records and the new one' });
    expect(got.map((r) => r.offset)).toEqual(['1', '3', '4']);
    await stream.stop();
  });

  it('a long hand-over of one fetch lets I/O run between its batches', async () => {
    // Eight topics of one partition (as the deliverer's, a topic per destination), fetched together.
    const topics = await onePartitionTopics('handover', 8);
    const groupId = randomName('ps-handover');
    await kafka.producer.sendBatch({ topicMessages: topics.map((topic) => ({ topic, messages: [{ value: topic }] })) });
    const got: InboundRecord[] = [];
    let batches = 0;
    let batchesBeforeIo: number | undefined;
    // Each hand-over keeps the event loop 4 ms (a lane starting its requests); the first
    // asks for a turn of the event loop: it comes before the fetch's last batch only if
    // the stream lets I/O run meanwhile.
    const stream = startStream(groupId, got, undefined, () => {
      batches += 1;
      if (batches === 1) setImmediate(() => (batchesBeforeIo = batches));
      const until = performance.now() + 4;
      while (performance.now() < until);
    });
    await stream.start(topics);
    await waitFor(() => got.length === 8, { what: 'the records of the 8 topics', timeoutMs: 30_000 });
    expect(batchesBeforeIo).toBeDefined();
    expect(batchesBeforeIo).toBeLessThan(8);
    await stream.stop();
  }, 60_000);

  it('commits hundreds of partitions that finished at once, more than one commit request takes', async () => {
    // More than PARTITIONS_PER_COMMIT (50): the commit goes out in slices, all at once.
    const topics = await onePartitionTopics('many', 230);
    const groupId = randomName('ps-many');
    await kafka.producer.sendBatch({ topicMessages: topics.map((topic, i) => ({ topic, messages: ids(1 + (i % 3)).map((id) => ({ value: id })) })) });
    const got: InboundRecord[] = [];
    const stream = startStream(groupId, got);
    await stream.start(topics);
    const expected = topics.reduce((sum, _, i) => sum + 1 + (i % 3), 0);
    await waitFor(() => got.length === expected, { what: 'every record of the 230 topics', timeoutMs: 60_000 });
    for (const r of got) stream.ledger.finish(r.topic, r.partition, r.offset);
    await waitFor(
      async () => {
        const committed = await admin.committedOffsetsOf!(groupId, topics.map((topic) => ({ topic, partitions: [0] })));
        const at = new Map(committed.map((t) => [t.topic, t.partitions[0]?.offset]));
        return topics.every((topic, i) => at.get(topic) === String(1 + (i % 3)));
      },
      { what: 'each of the 230 partitions committed after its last record', timeoutMs: 30_000 },
    );
    await stream.stop();
    await kafka.admin.deleteTopics({ topics }).catch(() => undefined);
  }, 120_000);
});

function minimalConfig(prefix: string, clientId: string, url = 'http://127.0.0.1:9/') {
  return {
    kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '1m', concurrencyPerDestination: 4 },
    sources: [{ id: 'web' }],
    destinations: [{ id: 'x', type: 'webhooks', settings: { webhooks: [{ url }] } }],
  };
}

describe('upgrade from one consumer group per destination', () => {
  it('a partition the new group never committed starts from the old group\'s commit, not from the start of the log', async () => {
    const prefix = randomPrefix();
    const clientId = randomName('upgrade');
    const receiver = await startReceiver();
    const config = testConfig(minimalConfig(prefix, clientId, receiver.url()));
    const topic = `${prefix}deliveries.x`;
    const admin = createAdmin(createKafka(config.kafka, silentLogger()));
    await admin.connect();
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    await admin.disconnect();
    const body = (id: string) => `{"version":1,"type":"track","userId":"u","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"E"}`;
    await kafka.produce(
      topic,
      ids(10).map((id) => ({ key: 'u', value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
    );
    // The old deliverer delivered the first six.
    await kafka.admin.setOffsets({ groupId: legacyDelivererGroupId(config, 'x'), topic, partitions: [{ partition: 0, offset: '6' }] });

    const deliverer = createDelivererService(testRoleDeps(config), { sampleIntervalMs: 60_000 });
    try {
      await deliverer.start();
      await waitFor(() => receiver.requests.length >= 4, { what: 'the four events the old group had not delivered' });
      await waitFor(async () => (await kafka.admin.fetchOffsets({ groupId: delivererGroupId(config), topics: [topic] }))[0]?.partitions[0]?.offset === '10', {
        what: 'the new group to commit them',
      });
      const delivered = receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);
      expect(delivered.sort()).toEqual(['e-6', 'e-7', 'e-8', 'e-9']);
    } finally {
      await deliverer.stop();
      await receiver.close();
    }
  });

  it('from <clientId>-deliverer: starts at its commit, skips what its metadata lists as finished, and takes it over the per-destination group', async () => {
    const prefix = randomPrefix();
    const clientId = randomName('upgrade');
    const receiver = await startReceiver();
    const config = testConfig(minimalConfig(prefix, clientId, receiver.url()));
    const topic = `${prefix}deliveries.x`;
    const admin = createAdmin(createKafka(config.kafka, silentLogger()));
    await admin.connect();
    try {
      await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
      const body = (id: string) => `{"version":1,"type":"track","userId":"u","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"E"}`;
      await kafka.produce(
        topic,
        ids(10).map((id) => ({ key: 'u', value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
      );
      // The version before: one group for every destination, e-0..e-3 done and e-5 and e-7
      // finished out of order (the metadata: runs of 1 at 1 past the commit, then 1 past that).
      const metadata = 'sy1:1.1,1.1';
      expect(decodeFinished(4n, metadata)).toEqual([5n, 7n]);
      await admin.commitOffsets(`${clientId}-deliverer`, [{ topic, partitions: [{ partition: 0, offset: '4', metadata }] }]);
      // Older still, and behind it: not used while the newer old group has a commit.
      await admin.commitOffsets(legacyDelivererGroupId(config, 'x'), [{ topic, partitions: [{ partition: 0, offset: '2', metadata: null }] }]);

      const deliverer = createDelivererService(testRoleDeps(config), { sampleIntervalMs: 60_000 });
      try {
        await deliverer.start();
        await waitFor(async () => (await kafka.admin.fetchOffsets({ groupId: delivererGroupId(config), topics: [topic] }))[0]?.partitions[0]?.offset === '10', {
          what: 'the new group to commit the partition to its end',
        });
        const delivered = receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);
        expect(delivered.sort()).toEqual(['e-4', 'e-6', 'e-8', 'e-9']);
      } finally {
        await deliverer.stop();
      }
    } finally {
      await admin.disconnect();
      await receiver.close();
    }
  });

  it('a simple commit into a group with a member is refused by the broker, so an upgrade never moves a running group back', async () => {
    const prefix = randomPrefix();
    const config = testConfig(minimalConfig(prefix, randomName('upgrade')));
    const topic = `${prefix}deliveries.x`;
    const admin = createAdmin(createKafka(config.kafka, silentLogger()));
    await admin.connect();
    const deliverer = createDelivererService(testRoleDeps(config), { sampleIntervalMs: 60_000 });
    try {
      await deliverer.start();
      await waitFor(() => deliverer.health().ready, { what: 'the deliverer to join its group' });
      const refused = await admin.commitOffsets(delivererGroupId(config), [{ topic, partitions: [{ partition: 0, offset: '0', metadata: null }] }]).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isGroupInUse(refused)).toBe(true);
    } finally {
      await deliverer.stop();
      await admin.disconnect();
    }
  });
});
