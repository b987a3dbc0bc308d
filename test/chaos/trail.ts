// Where a lost call's trail ends: for a failed run, the topics it should have passed
// through (calls, deliveries, retry tiers, dead letters) are searched for it, so the
// report says which hop dropped it — before the run's broker and its data are gone.
import { Admin, Consumer } from '@platformatic/kafka';
import type { Message } from '@platformatic/kafka';
import { randomBytes } from 'node:crypto';
import { traceIdOf } from './receivers.js';

export interface TrailStop {
  topic: string;
  partition: number;
  offset: string;
  /** The record's Kafka timestamp (epoch ms). */
  writtenAtMs: number;
  /** Kafka headers worth seeing: attempt, error, due-at, source-id. */
  headers: Record<string, string>;
}

const SHOWN_HEADERS = ['source-id', 'message-id', 'attempt', 'first-attempt-at', 'due-at', 'error'];
/** How long a read of one topic waits for its next message before it ends (see findTrails). */
const IDLE_MS = 3_000;
const READ_TIMEOUT_MS = 300_000;

/** A header's first value as text. */
function text(message: Message<Buffer, Buffer, Buffer, Buffer>, name: string): string | undefined {
  for (const [key, value] of message.headerEntries) if (key.toString() === name) return value.toString();
  return undefined;
}

/**
 * Reads each topic from its start to its current end and returns, per key, every
 * record that carries it. `keyOf` gives a record's key (its messageId or trace id).
 * Keys outside `detailed` (all of `wanted` when left out) get their records' places
 * only, without headers. One consumer reads every topic at once.
 */
export async function findTrails(
  brokers: string,
  topics: readonly string[],
  wanted: ReadonlySet<string>,
  keyOf: (messageId: string | undefined, traceId: string | undefined) => string,
  detailed: ReadonlySet<string> = wanted,
): Promise<Map<string, TrailStop[]>> {
  const admin = new Admin({ clientId: 'chaos-trail', bootstrapBrokers: [brokers] });
  const found = new Map<string, TrailStop[]>();
  try {
    const existing = new Set(await admin.listTopics());
    // `topic/partition` → the offset past its last record.
    const remaining = new Map<string, bigint>();
    const read: string[] = [];
    for (const topic of topics.filter((t) => existing.has(t))) {
      const { topics: metadata } = await admin.metadata({ topics: [topic] });
      const partitions = metadata.get(topic)?.partitionsCount ?? 0;
      const ask = (timestamp: bigint) => admin.listOffsets({ topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }] });
      const [highs, lows] = await Promise.all([ask(-1n), ask(-2n)]);
      const low = new Map((lows[0]?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
      const before = remaining.size;
      for (const p of highs[0]?.partitions ?? []) if (p.offset > (low.get(p.partitionIndex) ?? 0n)) remaining.set(`${topic}/${p.partitionIndex}`, p.offset);
      if (remaining.size > before) read.push(topic);
    }
    if (read.length === 0) return found;
    const consumer = new Consumer({ clientId: 'chaos-trail', bootstrapBrokers: [brokers], groupId: `chaos-trail-${randomBytes(4).toString('hex')}`, autocommit: false, maxWaitTime: 200 });
    try {
      const stream = await consumer.consume({ topics: read, mode: 'earliest' });
      let finish: () => void = () => undefined;
      const finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      // NOTE: a topic written in transactions (docs/kafka.md#transactions) ends with a
      // transaction's marker, an offset no message has: the read also ends once no
      // message came for IDLE_MS.
      let idle = setTimeout(finish, IDLE_MS);
      stream.on('data', (message: Message<Buffer, Buffer, Buffer, Buffer>) => {
        clearTimeout(idle);
        idle = setTimeout(finish, IDLE_MS);
        let messageId = text(message, 'message-id');
        if (messageId === undefined && message.value !== undefined && message.value !== null) {
          const match = /"messageId":"([^"]*)"/.exec(message.value.toString('utf8', 0, Math.min(message.value.length, 4096)));
          messageId = match?.[1];
        }
        const key = keyOf(messageId, traceIdOf(text(message, 'traceparent')));
        if (wanted.has(key)) {
          const headers: Record<string, string> = {};
          if (detailed.has(key)) {
            for (const name of SHOWN_HEADERS) {
              const value = text(message, name);
              if (value !== undefined) headers[name] = value.slice(0, 200);
            }
          }
          const stops = found.get(key) ?? [];
          stops.push({ topic: message.topic, partition: message.partition, offset: message.offset.toString(), writtenAtMs: Number(message.timestamp), headers });
          found.set(key, stops);
        }
        const place = `${message.topic}/${message.partition}`;
        const high = remaining.get(place);
        if (high !== undefined && message.offset + 1n >= high) remaining.delete(place);
        if (remaining.size === 0) finish();
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([finished, new Promise((resolve) => (timer = setTimeout(resolve, READ_TIMEOUT_MS)))]);
      clearTimeout(timer);
      clearTimeout(idle);
      await stream.close();
    } finally {
      await consumer.close(true);
    }
  } finally {
    await admin.close();
  }
  return found;
}
