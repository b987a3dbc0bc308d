// The Kafka side of the test harness: the run's broker (from global-setup),
// random names, and helpers that read topics back with their bytes, keys and headers.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import type { Admin, IHeaders, Producer } from 'kafkajs';
import { waitFor } from './wait-for.js';

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

export function testKafka(clientId = randomName('test')): Kafka {
  return new Kafka({ clientId, brokers: testBrokers(), logLevel: logLevel.NOTHING });
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

function headersToText(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first.toString();
  }
  return out;
}

/**
 * Holds a connected admin and producer for one test file; `close()` in afterAll.
 */
export async function createTestKafka(): Promise<{
  kafka: Kafka;
  admin: Admin;
  producer: Producer;
  createTopic(topic: string, partitions?: number): Promise<void>;
  produce(topic: string, messages: { key?: string | null; value: string | Buffer | null; headers?: Record<string, string> }[]): Promise<void>;
  readAll(topic: string, options?: { atLeast?: number; timeoutMs?: number; settleMs?: number }): Promise<ReadMessage[]>;
  close(): Promise<void>;
}> {
  const kafka = testKafka();
  const admin = kafka.admin();
  await admin.connect();
  const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: true });
  await producer.connect();
  return {
    kafka,
    admin,
    producer,
    async createTopic(topic, partitions = 1) {
      // NOTE: not kafkajs's waitForLeaders: on a busy broker its one metadata request can
      // be answered "does not host this topic-partition" while the topic is still being
      // made, and it fails the test. The leaders are awaited from the metadata, asking again.
      await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions: partitions }] });
      await waitFor(
        async () => {
          const [found] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
          return found !== undefined && found.partitions.length === partitions && found.partitions.every((p) => p.leader >= 0);
        },
        { what: `the partition leaders of ${topic}` },
      );
    },
    async produce(topic, messages) {
      await producer.send({ topic, acks: -1, messages });
    },
    readAll: (topic, options) => readTopic(kafka, admin, topic, options),
    async close() {
      await producer.disconnect();
      await admin.disconnect();
    },
  };
}

/**
 * Reads a topic from the beginning to its current end, without a consumer
 * group, waiting until it holds at least `atLeast` messages (default 0) and
 * then, when settleMs is set, until no new message arrived for that long.
 */
export async function readTopic(
  kafka: Kafka,
  admin: Admin,
  topic: string,
  options: { atLeast?: number; timeoutMs?: number; settleMs?: number } = {},
): Promise<ReadMessage[]> {
  const atLeast = options.atLeast ?? 0;
  const timeoutMs = options.timeoutMs ?? 30_000;
  // NOTE: a topic another process has just created can be listed before its partitions
  // have a leader; offsets are then asked again until the leader is known.
  const endOffsets = () =>
    waitFor(() => admin.fetchTopicOffsets(topic), { timeoutMs, what: `the partition leaders of ${topic}` });
  const total = async (): Promise<number> => {
    const exists = (await admin.listTopics()).includes(topic);
    if (!exists) return 0;
    const offsets = await endOffsets();
    return offsets.reduce((sum, p) => sum + (Number(p.high) - Number(p.low)), 0);
  };
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
  if ((await total()) === 0) return [];
  const ends = await endOffsets();
  const remaining = new Map(ends.map((p) => [p.partition, { high: BigInt(p.high), low: BigInt(p.low) }]));
  const consumer = kafka.consumer({ groupId: randomName('reader'), allowAutoTopicCreation: false });
  const messages: ReadMessage[] = [];
  await consumer.connect();
  try {
    const done = () =>
      [...remaining.values()].every((p) => p.high === p.low);
    if (!done()) {
      await consumer.subscribe({ topic, fromBeginning: true });
      let resolveDone: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => {
        resolveDone = resolve;
      });
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          const p = remaining.get(partition);
          if (!p || BigInt(message.offset) >= p.high) return;
          messages.push({
            topic,
            partition,
            offset: message.offset,
            key: message.key ? message.key.toString() : null,
            value: message.value,
            text: message.value ? message.value.toString('utf8') : '',
            headers: headersToText(message.headers),
            timestamp: message.timestamp,
          });
          p.low = BigInt(message.offset) + 1n;
          if (done()) resolveDone();
        },
      });
      await Promise.race([
        finished,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`reading ${topic} did not finish in ${timeoutMs} ms`)), timeoutMs)),
      ]);
    }
  } finally {
    await consumer.disconnect();
  }
  return messages.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}
