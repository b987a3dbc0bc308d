// The contract of src/kafka/wire.ts with the pinned @platformatic/kafka (package.json
// pins it exactly) on a real broker: every raw call once, its answer read as the port
// reads it. An upgrade of the client that changes an exported API function's arguments
// or its answer's shape fails here before it reaches the engine.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COORDINATOR_OF, ERROR, KafkaAnswerError, Wire, errorName, isRetriableCode } from '../../src/kafka/wire.js';
import { isRetriable } from '../../src/kafka/commit.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

const LATEST = -1n;
const EARLIEST = -2n;

let kafka: TestKafka;
let wire: Wire;
const topic = `${randomPrefix()}wire`;

beforeAll(async () => {
  kafka = await createTestKafka();
  await kafka.createTopic(topic, 2);
  wire = new Wire({ brokers: testBrokers(), clientId: randomName('wire'), topicPrefix: 'x.', partitions: 1, replicationFactor: 1 }, randomName('wire'));
});

afterAll(async () => {
  await wire?.close();
  await kafka?.admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  await kafka?.close();
});

/** The leader of partition `partition` of the test topic, from the metadata. */
async function leaderOf(partition: number): Promise<number> {
  const { topics } = await wire.metadata([topic]);
  const leader = topics.get(topic)?.partitions.find((p) => p.partition === partition)?.leader;
  if (leader === undefined || leader < 0) throw new Error(`partition ${partition} of ${topic} has no leader`);
  return leader;
}

/** The coordinator of `groupId`; asked again while the broker is still loading its offsets topic. */
async function coordinatorOf(groupId: string): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const found = await wire.findCoordinator(groupId);
    if ('nodeId' in found) return found.nodeId;
    if (!isRetriableCode(found.errorCode)) throw new KafkaAnswerError(found.errorCode, `finding the coordinator of ${groupId}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no coordinator for ${groupId}`);
}

describe('wire.ts against the pinned @platformatic/kafka', () => {
  it('metadata: the brokers, and every partition of a topic with its leader; a topic that does not exist answers its error code', async () => {
    const missing = `${randomPrefix()}missing`;
    const { brokers, topics } = await wire.metadata([topic, missing]);
    expect(brokers.size).toBeGreaterThan(0);
    const [host, port] = testBrokers()[0]!.split(':');
    expect([...brokers.values()].some((b) => b.host === host && b.port === Number(port))).toBe(true);
    const found = topics.get(topic);
    expect(found).toMatchObject({ name: topic, errorCode: ERROR.NONE });
    expect(found!.partitions.map((p) => p.partition)).toEqual([0, 1]);
    for (const p of found!.partitions) {
      expect(brokers.has(p.leader)).toBe(true);
      expect(p.errorCode).toBe(ERROR.NONE);
      expect(p.leaderEpoch).toBeGreaterThanOrEqual(0);
    }
    expect(topics.get(missing)?.errorCode).toBe(ERROR.UNKNOWN_TOPIC_OR_PARTITION);
    expect(errorName(ERROR.UNKNOWN_TOPIC_OR_PARTITION)).toBe('UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('findCoordinator: a broker of the cluster for a group', async () => {
    const nodeId = await coordinatorOf(randomName('wire-group'));
    const { brokers } = await wire.metadata([]);
    expect(brokers.has(nodeId)).toBe(true);
  });

  it('offsetCommit with metadata for a group nobody is a member of, then offsetFetch reads offset and metadata back', async () => {
    const groupId = randomName('wire-commit');
    const nodeId = await coordinatorOf(groupId);
    const metadata = `sy1:${'x'.repeat(300)}`;
    const committed = await wire.offsetCommit(nodeId, groupId, -1, '', [
      {
        topic,
        partitions: [
          { partition: 0, offset: 7n, metadata },
          { partition: 1, offset: 3n, metadata: null },
        ],
      },
    ]);
    expect(committed.topics).toEqual([
      {
        name: topic,
        partitions: [
          { partitionIndex: 0, errorCode: ERROR.NONE },
          { partitionIndex: 1, errorCode: ERROR.NONE },
        ],
      },
    ]);
    const fetched = await wire.offsetFetch(nodeId, groupId, [{ topic, partitions: [0, 1] }]);
    expect(fetched.errorCode).toBe(ERROR.NONE);
    expect(fetched.topics).toHaveLength(1);
    const partitions = [...fetched.topics[0]!.partitions].sort((a, b) => a.partitionIndex - b.partitionIndex);
    expect(partitions.map((p) => ({ partition: p.partitionIndex, offset: p.committedOffset, metadata: p.metadata, errorCode: p.errorCode }))).toEqual([
      { partition: 0, offset: 7n, metadata, errorCode: ERROR.NONE },
      // No metadata given: the broker keeps an empty string.
      { partition: 1, offset: 3n, metadata: '', errorCode: ERROR.NONE },
    ]);
    // A partition without a commit answers offset -1.
    const none = await wire.offsetFetch(nodeId, randomName('wire-none'), [{ topic, partitions: [0] }]);
    expect(none.topics[0]?.partitions[0]?.committedOffset).toBe(-1n);
  });

  it('offsetCommit of a generation that is not the group\'s is answered with an error code, not thrown', async () => {
    const groupId = randomName('wire-generation');
    const nodeId = await coordinatorOf(groupId);
    const answer = await wire.offsetCommit(nodeId, groupId, 5, 'nobody', [{ topic, partitions: [{ partition: 0, offset: 1n, metadata: null }] }]);
    const code = answer.topics[0]?.partitions[0]?.errorCode;
    expect(['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION']).toContain(errorName(code!));
    const error = new KafkaAnswerError(code!, 'committing');
    expect(error.type).toBe(errorName(code!));
  });

  it('listOffsets earliest and latest, then fetch of a produced record (key, value, headers, timestamp)', async () => {
    const timestamp = Date.UTC(2026, 4, 1, 12);
    await kafka.producer.send({
      topic,
      messages: [
        { partition: 1, key: 'k-1', value: 'first', headers: { 'source-id': 'web' }, timestamp: String(timestamp) },
        { partition: 1, key: 'k-2', value: 'second', headers: { 'source-id': 'web', 'message-id': 'm-2' }, timestamp: String(timestamp + 1) },
      ],
    });
    const nodeId = await leaderOf(1);
    const ask = (at: bigint) => wire.listOffsets(nodeId, 0, [{ topic, partitions: [{ partition: 1, timestamp: at }] }]);
    const [latest, earliest] = await Promise.all([ask(LATEST), ask(EARLIEST)]);
    expect(latest.topics[0]?.partitions[0]).toMatchObject({ partitionIndex: 1, errorCode: ERROR.NONE, offset: 2n });
    expect(earliest.topics[0]?.partitions[0]).toMatchObject({ partitionIndex: 1, errorCode: ERROR.NONE, offset: 0n });
    // By timestamp: the first record at or after it.
    const [byTime] = (await ask(BigInt(timestamp + 1))).topics;
    expect(byTime?.partitions[0]?.offset).toBe(1n);

    const answer = await wire.fetch(nodeId, { maxWaitMs: 500, minBytes: 1, maxBytes: 1_048_576, isolation: 0, topics: [{ topic, partitions: [{ partition: 1, offset: 0n, maxBytes: 1_048_576 }] }] });
    expect(answer.errorCode).toBe(ERROR.NONE);
    expect(answer.responses[0]?.topicId).toBe(topic);
    const partition = answer.responses[0]?.partitions[0];
    expect(partition).toMatchObject({ partitionIndex: 1, errorCode: ERROR.NONE, highWatermark: 2n });
    const batches = partition!.records ?? [];
    const records = batches.flatMap((batch) =>
      batch.records.map((r) => ({
        offset: batch.firstOffset + BigInt(r.offsetDelta),
        key: r.key?.toString(),
        value: r.value?.toString(),
        headers: r.headers.map(([name, value]) => [name?.toString(), value?.toString()]),
        timestamp: batch.firstTimestamp + r.timestampDelta,
      })),
    );
    expect(records).toEqual([
      { offset: 0n, key: 'k-1', value: 'first', headers: [['source-id', 'web']], timestamp: BigInt(timestamp) },
      { offset: 1n, key: 'k-2', value: 'second', headers: [['source-id', 'web'], ['message-id', 'm-2']], timestamp: BigInt(timestamp + 1) },
    ]);
  });

  it('fetch from past the log end answers OFFSET_OUT_OF_RANGE in the partition, not thrown', async () => {
    const nodeId = await leaderOf(0);
    const answer = await wire.fetch(nodeId, { maxWaitMs: 100, minBytes: 1, maxBytes: 65_536, isolation: 0, topics: [{ topic, partitions: [{ partition: 0, offset: 1_000n, maxBytes: 65_536 }] }] });
    expect(answer.responses[0]?.partitions[0]?.errorCode).toBe(ERROR.OFFSET_OUT_OF_RANGE);
  });

  it('transactions: addOffsetsToTxn and txnOffsetCommit of a producer that has no transaction answer error codes, not thrown (the calls themselves: test/integration/kafka-transaction.test.ts)', async () => {
    const transactionalId = randomName('wire-txn');
    const found = await wire.findCoordinator(transactionalId, COORDINATOR_OF.transaction);
    expect('nodeId' in found).toBe(true);
    const nodeId = (found as { nodeId: number }).nodeId;
    const code = await wire.addOffsetsToTxn(nodeId, transactionalId, 12345n, 0, randomName('wire-txn-group'));
    expect(code).not.toBe(ERROR.NONE);
    const groupId = randomName('wire-txn-group');
    const answer = await wire.txnOffsetCommit(await coordinatorOf(groupId), { transactionalId, producerId: 12345n, producerEpoch: 0 }, { groupId, generationId: 3, memberId: 'nobody', groupInstanceId: null }, [
      { topic, partitions: [{ partition: 0, offset: 1n, metadata: 'sy1:x' }] },
    ]);
    expect(answer.topics[0]?.partitions[0]?.errorCode).not.toBe(ERROR.NONE);
    // A stable read (require_stable) of a group without pending transactional offsets answers at once.
    const stable = await wire.offsetFetch(await coordinatorOf(groupId), groupId, [{ topic, partitions: [0] }], true);
    expect(stable.topics[0]?.partitions[0]).toMatchObject({ committedOffset: -1n, errorCode: ERROR.NONE });
  });

  it('KafkaAnswerError carries the protocol\'s word on another try (what isRetriable reads)', () => {
    expect(isRetriable(new KafkaAnswerError(ERROR.NOT_COORDINATOR, 'reading commits'))).toBe(true);
    expect(isRetriable(new KafkaAnswerError(ERROR.COORDINATOR_LOAD_IN_PROGRESS, 'reading commits'))).toBe(true);
    expect(isRetriable(new KafkaAnswerError(ERROR.GROUP_AUTHORIZATION_FAILED, 'reading commits'))).toBe(false);
  });
});
