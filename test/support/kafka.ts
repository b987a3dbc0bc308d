// The Kafka side of the test harness: the run's broker (from global-setup), random
// names, and a test admin, producer and reader on @platformatic/kafka's public Admin,
// Producer and Consumer (never the code under test), with the shapes the tests read.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { Admin, ConfigResourceTypes, IncrementalAlterConfigOperationTypes, Producer, compatibilityPartitioner } from '@platformatic/kafka';
import { waitFor } from './wait-for.js';
import { decodeRecords } from '../../src/kafka/fetcher.js';
import { earliestOrLatest } from '../../src/kafka/offset-lookup.js';
import type { InboundRecord } from '../../src/kafka/records.js';
import { Wire } from '../../src/kafka/wire.js';

export function testBrokers(): string[] {
  return inject('kafkaBrokers').split(',');
}

export function randomName(prefix = 't'): string {
  return `${prefix}-${randomBytes(5).toString('hex')}`;
}

/** A topic prefix unique to one test: every topic the daemon makes lives under it. */
export function randomPrefix(): string {
  return `${randomName('sy')}.`;
}

/** The connection options of a test client (a few quick retries: a test waits with waitFor). */
export function testClientOptions(clientId = randomName('test'), brokers = testBrokers()) {
  return { clientId, bootstrapBrokers: brokers, retries: 3, retryDelay: 200, connectTimeout: 5_000, autocreateTopics: false };
}

export interface ReadMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  text: string;
  headers: Record<string, string>;
  timestamp: string;
}

/** A record a test writes: text or bytes; `timestamp` in epoch ms as a decimal string. */
export interface TestMessage {
  key?: string | Buffer | null;
  value: string | Buffer | null;
  headers?: Record<string, string | Buffer>;
  partition?: number;
  timestamp?: string;
}

/** The ends of one partition (offsets as decimal strings). */
export interface TestPartitionEnds {
  partition: number;
  high: string;
  low: string;
}

export interface TestGroup {
  groupId: string;
  state: string;
  members: { memberId: string; clientId: string; assignedTopics: string[] }[];
}

/** What the tests ask of the cluster besides the code under test. */
export interface TestAdmin {
  listTopics(): Promise<string[]>;
  /** Creates the topics (existing ones are left alone) and waits for their partitions' leaders. */
  createTopics(options: { topics: { topic: string; numPartitions?: number; configs?: { name: string; value: string }[] }[] }): Promise<void>;
  /** Sets one configuration entry of a topic (`max.message.bytes`...). */
  alterTopicConfig(topic: string, name: string, value: string): Promise<void>;
  deleteTopics(options: { topics: string[] }): Promise<void>;
  /** Deletes the records below `offset` of each partition. */
  deleteTopicRecords(options: { topic: string; partitions: { partition: number; offset: string }[] }): Promise<void>;
  /** Each partition's leader (-1: none yet); a topic that does not exist is left out. */
  fetchTopicMetadata(options: { topics: string[] }): Promise<{ topics: { name: string; partitions: { partitionId: number; leader: number }[] }[] }>;
  /** Fails on a topic that does not exist. */
  fetchTopicOffsets(topic: string): Promise<TestPartitionEnds[]>;
  /**
   * Waits until no transaction is open on the topic: each partition's last stable offset
   * at its end. A transaction's commit() returns once its coordinator has the commit; the
   * markers reach the partitions a moment later, and read committed stops before them.
   */
  waitForSettled(topic: string): Promise<void>;
  /** The group's commits of every partition of each topic (offset '-1': none); fails on a topic that does not exist. */
  fetchOffsets(options: { groupId: string; topics: string[] }): Promise<{ topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[]>;
  /** Commits offsets (no metadata) for a group that has no member. */
  setOffsets(options: { groupId: string; topic: string; partitions: { partition: number; offset: string }[] }): Promise<void>;
  describeGroups(groupIds: string[]): Promise<{ groups: TestGroup[] }>;
  listGroups(): Promise<{ groups: { groupId: string }[] }>;
  close(): Promise<void>;
}

export interface TestProducer {
  /** Writes with acks=all, keys hashed as the Java client does; one answer per partition written: the base offset of its records. */
  send(options: { topic: string; messages: TestMessage[] }): Promise<{ partition: number; baseOffset: string }[]>;
  sendBatch(options: { topicMessages: { topic: string; messages: TestMessage[] }[] }): Promise<void>;
  close(): Promise<void>;
}

function toBuffer(data: string | Buffer): Buffer {
  return typeof data === 'string' ? Buffer.from(data) : data;
}

function toMessage(topic: string, m: TestMessage) {
  return {
    topic,
    ...(m.key === undefined || m.key === null ? {} : { key: toBuffer(m.key) }),
    ...(m.value === null ? {} : { value: toBuffer(m.value) }),
    ...(m.partition === undefined ? {} : { partition: m.partition }),
    ...(m.timestamp === undefined ? {} : { timestamp: BigInt(m.timestamp) }),
    ...(m.headers === undefined ? {} : { headers: new Map(Object.entries(m.headers).map(([k, v]) => [Buffer.from(k), toBuffer(v)])) }),
  };
}

export function createTestProducer(brokers = testBrokers()): TestProducer {
  // NOTE: keys hashed as the Java client does (and every producer of the port): a test's keyed records land where the code under test looks.
  // NOTE: idempotent: a send the client retries after a partial failure (a leader moving right after a topic was made) is written once, so a test's topic holds exactly what it sent.
  // A topic a test writes to first is made by the broker (auto-creation), as a test expects of its producer.
  const producer = new Producer({ ...testClientOptions(randomName('test-producer'), brokers), autocreateTopics: true, acks: -1, idempotent: true, partitioner: compatibilityPartitioner });
  return {
    async send({ topic, messages }) {
      const result = await producer.send({ messages: messages.map((m) => toMessage(topic, m)) });
      return (result.offsets ?? []).map((o) => ({ partition: o.partition, baseOffset: o.offset.toString() }));
    },
    async sendBatch({ topicMessages }) {
      await producer.send({ messages: topicMessages.flatMap(({ topic, messages }) => messages.map((m) => toMessage(topic, m))) });
    },
    close: () => producer.close(),
  };
}

export function createTestAdmin(brokers = testBrokers()): TestAdmin {
  const admin = new Admin(testClientOptions(randomName('test-admin'), brokers));
  /** Fresh leaders of the topics that exist (a topic not there yet, or deleted, is left out). */
  const leadersOf = async (topics: string[]) => {
    // NOTE: the client's metadata request fails the whole call on one unknown topic.
    const existing = new Set(await admin.listTopics());
    const known = topics.filter((t) => existing.has(t));
    if (known.length === 0) return new Map<string, { partitions: { leader: number }[] }>();
    const { topics: found } = await admin.metadata({ topics: known, forceUpdate: true });
    return found;
  };
  /** Partition counts, from the client's cached metadata (one round trip at most: tests poll these). */
  const partitionsOf = async (topics: string[]) => {
    const { topics: found } = await admin.metadata({ topics });
    return new Map(topics.map((t) => [t, found.get(t)?.partitionsCount ?? 0]));
  };
  const testAdmin: TestAdmin = {
    listTopics: () => admin.listTopics(),
    async createTopics({ topics }) {
      const existing = new Set(await admin.listTopics());
      // NOTE: one request per configuration: the client sets one for every topic of a request.
      const byConfigs = new Map<string, typeof topics>();
      for (const t of topics) {
        if (existing.has(t.topic)) continue;
        const key = JSON.stringify(t.configs ?? []);
        byConfigs.set(key, [...(byConfigs.get(key) ?? []), t]);
      }
      for (const missing of byConfigs.values()) {
        await admin
          .createTopics({
            topics: missing.map((t) => ({ topic: t.topic, partitions: t.numPartitions ?? 1, replicas: 1 })),
            configs: missing[0]!.configs ?? [],
          })
          .catch((error: unknown) => {
            if (!JSON.stringify(error, Object.getOwnPropertyNames(error)).includes('TOPIC_ALREADY_EXISTS')) throw error;
          });
      }
      await waitFor(
        async () => {
          const found = await testAdmin.fetchTopicMetadata({ topics: topics.map((t) => t.topic) }).catch(() => ({ topics: [] }));
          return topics.every((t) => {
            const f = found.topics.find((x) => x.name === t.topic);
            return f !== undefined && f.partitions.length === (t.numPartitions ?? 1) && f.partitions.every((p) => p.leader >= 0);
          });
        },
        { what: `the partition leaders of ${topics.map((t) => t.topic).join(', ')}` },
      );
    },
    async alterTopicConfig(topic, name, value) {
      await admin.incrementalAlterConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: topic, configs: [{ name, configOperation: IncrementalAlterConfigOperationTypes.SET, value }] }] });
    },
    async deleteTopics({ topics }) {
      const existing = new Set(await admin.listTopics());
      const there = topics.filter((t) => existing.has(t));
      if (there.length > 0) await admin.deleteTopics({ topics: there });
    },
    async deleteTopicRecords({ topic, partitions }) {
      await admin.deleteRecords({ topics: [{ name: topic, partitions: partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) })) }] });
    },
    async fetchTopicMetadata({ topics }) {
      const found = await leadersOf(topics);
      return {
        topics: [...found].map(([name, t]) => ({ name, partitions: t.partitions.map((p, partitionId) => ({ partitionId, leader: p.leader })) })),
      };
    },
    async waitForSettled(topic) {
      const partitions = (await partitionsOf([topic])).get(topic) ?? 0;
      if (partitions === 0) throw new Error(`topic ${topic} has no partitions (yet)`);
      const ends = async (isolationLevel: 0 | 1) => {
        const [answer] = await admin.listOffsets({ isolationLevel, topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp: -1n })) }] });
        return (answer?.partitions ?? []).map((p) => `${p.partitionIndex}:${p.offset}`).sort().join();
      };
      await waitFor(async () => (await ends(1)) === (await ends(0)), { timeoutMs: 15_000, what: `no transaction open on ${topic} (its last stable offsets at its ends)` });
    },
    async fetchTopicOffsets(topic) {
      const partitions = (await partitionsOf([topic])).get(topic) ?? 0;
      if (partitions === 0) throw new Error(`topic ${topic} has no partitions (yet)`);
      const ask = (timestamp: bigint) => admin.listOffsets({ topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }] });
      const [high, low] = await Promise.all([ask(-1n), ask(-2n)]);
      const lows = new Map((low[0]?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
      return (high[0]?.partitions ?? []).map((p) => ({ partition: p.partitionIndex, high: p.offset.toString(), low: (lows.get(p.partitionIndex) ?? 0n).toString() })).sort((a, b) => a.partition - b.partition);
    },
    async fetchOffsets({ groupId, topics }) {
      const counts = await partitionsOf(topics);
      const asked = topics.filter((t) => (counts.get(t) ?? 0) > 0).map((name) => ({ name, partitionIndexes: Array.from({ length: counts.get(name)! }, (_, i) => i) }));
      const [group] = asked.length === 0 ? [] : await admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: asked }] });
      const byTopic = new Map((group?.topics ?? []).map((t) => [t.name, t.partitions]));
      return topics.map((topic) => ({
        topic,
        partitions: (byTopic.get(topic) ?? []).map((p) => ({ partition: p.partitionIndex, offset: p.committedOffset.toString(), metadata: p.metadata || null })).sort((a, b) => a.partition - b.partition),
      }));
    },
    async setOffsets({ groupId, topic, partitions }) {
      await admin.alterConsumerGroupOffsets({ groupId, topics: [{ name: topic, partitionOffsets: partitions.map((p) => ({ partition: p.partition, offset: BigInt(p.offset) })) }] });
    },
    async describeGroups(groupIds) {
      const found = await admin.describeGroups({ groups: groupIds });
      return {
        groups: [...found.values()].map((g) => ({
          groupId: g.id,
          state: stateName(g.state),
          members: [...g.members.values()].map((m) => ({ memberId: m.id, clientId: m.clientId, assignedTopics: [...(m.assignments?.keys() ?? [])] })),
        })),
      };
    },
    async listGroups() {
      const found = await admin.listGroups();
      return { groups: [...found.keys()].map((groupId) => ({ groupId })) };
    },
    close: () => admin.close(),
  };
  return testAdmin;
}

/** A group's state as the broker names it ('Stable', 'Empty', ...). */
function stateName(state: string): string {
  const upper = state.toUpperCase();
  const names: Record<string, string> = { STABLE: 'Stable', EMPTY: 'Empty', DEAD: 'Dead', PREPARINGREBALANCE: 'PreparingRebalance', COMPLETINGREBALANCE: 'CompletingRebalance' };
  return names[upper.replace(/_/g, '')] ?? state;
}

/**
 * Holds a connected admin and producer for one test file; `close()` in afterAll.
 */
export async function createTestKafka(brokers = testBrokers()): Promise<{
  brokers: string[];
  admin: TestAdmin;
  producer: TestProducer;
  createTopic(topic: string, partitions?: number): Promise<void>;
  produce(topic: string, messages: TestMessage[]): Promise<void>;
  readAll(topic: string, options?: { atLeast?: number; timeoutMs?: number; settleMs?: number }): Promise<ReadMessage[]>;
  close(): Promise<void>;
}> {
  const admin = createTestAdmin(brokers);
  const producer = createTestProducer(brokers);
  await admin.listTopics();
  return {
    brokers,
    admin,
    producer,
    createTopic: (topic, partitions = 1) => admin.createTopics({ topics: [{ topic, numPartitions: partitions }] }),
    async produce(topic, messages) {
      await producer.send({ topic, messages });
    },
    readAll: (topic, options) => readTopic(admin, topic, options, brokers),
    async close() {
      await Promise.allSettled([producer.close(), admin.close()]);
    },
  };
}

/**
 * Reads a topic from the beginning to its current end, with a group of its own that
 * never commits, waiting until it holds at least `atLeast` messages (default 0) and
 * then, when settleMs is set, until no new message arrived for that long.
 */
export async function readTopic(
  admin: TestAdmin,
  topic: string,
  options: { atLeast?: number; timeoutMs?: number; settleMs?: number } = {},
  brokers = testBrokers(),
): Promise<ReadMessage[]> {
  const atLeast = options.atLeast ?? 0;
  const timeoutMs = options.timeoutMs ?? 30_000;
  // NOTE: read committed, as Switchyard's own consumers read (docs/kafka.md#transactions):
  // records of open or aborted transactions are not counted; control records (a
  // transaction's marker) take offsets but are no messages.
  const read = () => readCommittedNow(admin, topic, brokers, timeoutMs);
  const total = async (): Promise<number> => (await read()).length;
  await waitFor(async () => (await total()) >= atLeast, { timeoutMs, what: `${atLeast} message(s) in ${topic}` });
  if (options.settleMs) {
    let last = await total();
    let since = Date.now();
    const deadline = Date.now() + timeoutMs;
    while (Date.now() - since < options.settleMs && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const now = await total();
      if (now !== last) {
        last = now;
        since = Date.now();
      }
    }
  }
  const messages = await read();
  return messages.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

/**
 * Reads a topic written in transactions as a read_committed consumer does, from the
 * beginning until `atLeast` records arrived and none more for `settleMs` (default 1 s):
 * readTopic on a connection of its own. Records of aborted transactions are never seen.
 */
export async function readCommitted(topic: string, options: { atLeast: number; settleMs?: number; timeoutMs?: number }, brokers = testBrokers()): Promise<ReadMessage[]> {
  const tk = await createTestKafka(brokers);
  try {
    return await readTopic(tk.admin, topic, { atLeast: options.atLeast, settleMs: options.settleMs ?? 1_000, timeoutMs: options.timeoutMs ?? 60_000 }, brokers);
  } finally {
    await tk.close();
  }
}

/**
 * Every record of `topic` as a read_uncommitted consumer sees it, up to its high
 * watermark: aborted transactions' records too (what read committed must never show).
 */
export async function readUncommitted(topic: string, brokers = testBrokers()): Promise<ReadMessage[]> {
  const tk = await createTestKafka(brokers);
  try {
    return await readCommittedNow(tk.admin, topic, brokers, 30_000, 0);
  } finally {
    await tk.close();
  }
}

/** Every committed record of `topic` up to its last stable offset, through the port's wire (no group); with `isolation` 0, every record up to the high watermark. */
async function readCommittedNow(admin: TestAdmin, topic: string, brokers: string[], timeoutMs: number, isolation: 0 | 1 = 1): Promise<ReadMessage[]> {
  if (!(await admin.listTopics()).includes(topic)) return [];
  const clientId = randomName('reader');
  const wire = new Wire({ brokers, clientId, topicPrefix: '', partitions: 1, replicationFactor: 1 }, clientId);
  try {
    // NOTE: a topic another process has just created can be listed before its partitions have a leader.
    const layout = await waitFor(
      async () => {
        const found = (await wire.metadata([topic])).topics.get(topic);
        return found !== undefined && found.partitions.length > 0 && found.partitions.every((p) => p.leader >= 0) ? found : undefined;
      },
      { timeoutMs, what: `the partition leaders of ${topic}` },
    );
    const asked = layout.partitions.map((p) => ({ topic, partition: p.partition }));
    const lows = await earliestOrLatest(wire, asked, 'earliest');
    const stable = await earliestOrLatest(wire, asked, 'latest', isolation);
    const messages: ReadMessage[] = [];
    for (const { partition, leader } of layout.partitions) {
      let at = lows.find((o) => o.partition === partition)!.offset;
      const end = stable.find((o) => o.partition === partition)!.offset;
      while (at < end) {
        const answer = await wire.fetch(leader, { maxWaitMs: 100, minBytes: 1, maxBytes: 8 << 20, isolation, topics: [{ topic, partitions: [{ partition, offset: at, maxBytes: 8 << 20 }] }] });
        const part = answer.responses[0]?.partitions[0];
        if (part === undefined || part.errorCode !== 0) throw new Error(`reading ${topic} partition ${partition} at ${at}: error code ${part?.errorCode}`);
        const { records, next } = decodeRecords(topic, partition, at, part, isolation === 1);
        for (const r of records) if (BigInt(r.offset) < end) messages.push(inboundMessage(r));
        if (next <= at) break;
        at = next;
      }
    }
    return messages.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
  } finally {
    await wire.close();
  }
}

function inboundMessage(record: InboundRecord): ReadMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(record.headers ?? {})) {
    if (value === undefined) continue;
    const one = Array.isArray(value) ? value[0] : value;
    if (one !== undefined && !(name in headers)) headers[name] = one.toString();
  }
  return {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key === null ? null : record.key.toString(),
    value: record.value,
    text: record.value ? record.value.toString('utf8') : '',
    headers,
    timestamp: record.timestamp,
  };
}

