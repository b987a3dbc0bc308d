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
  /** Kafka headers worth seeing: attempt, error, due-at, source-id. */
  headers: Record<string, string>;
}

const SHOWN_HEADERS = ['source-id', 'message-id', 'attempt', 'first-attempt-at', 'due-at', 'error'];
/** How long a read of one topic waits for its next message before it ends (see findTrails). */
const IDLE_MS = 3_000;
const READ_TIMEOUT_MS = 120_000;

/** A header's first value as text. */
function text(message: Message<Buffer, Buffer, Buffer, Buffer>, name: string): string | undefined {
  for (const [key, value] of message.headerEntries) if (key.toString() === name) return value.toString();
  return undefined;
}

/**
 * Reads each topic from its start to its current end and returns, per key, every
 * record that carries it. `keyOf` gives a record's key (its messageId or trace id).
 */
export async function findTrails(
  brokers: string,
  topics: readonly string[],
  wanted: ReadonlySet<string>,
  keyOf: (messageId: string | undefined, traceId: string | undefined) => string,
): Promise<Map<string, TrailStop[]>> {
  const admin = new Admin({ clientId: 'chaos-trail', bootstrapBrokers: [brokers] });
  const found = new Map<string, TrailStop[]>();
  try {
    const existing = new Set(await admin.listTopics());
    for (const topic of topics.filter((t) => existing.has(t))) {
      const { topics: metadata } = await admin.metadata({ topics: [topic] });
      const partitions = metadata.get(topic)?.partitionsCount ?? 0;
      const ask = (timestamp: bigint) => admin.listOffsets({ topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }] });
      const [highs, lows] = await Promise.all([ask(-1n), ask(-2n)]);
      const low = new Map((lows[0]?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
      const remaining = new Map((highs[0]?.partitions ?? []).filter((p) => p.offset > (low.get(p.partitionIndex) ?? 0n)).map((p) => [p.partitionIndex, p.offset]));
      if (remaining.size === 0) continue;
      const consumer = new Consumer({ clientId: 'chaos-trail', bootstrapBrokers: [brokers], groupId: `chaos-trail-${randomBytes(4).toString('hex')}`, autocommit: false, maxWaitTime: 200 });
      try {
        const stream = await consumer.consume({ topics: [topic], mode: 'earliest' });
        let finish: () => void = () => undefined;
        const finished = new Promise<void>((resolve) => {
          finish = resolve;
        });
        // NOTE: a topic the router writes in transactions (docs/kafka.md#transactions) ends
        // with a transaction's marker, an offset no message has: the read also ends once
        // no message came for IDLE_MS.
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
            for (const name of SHOWN_HEADERS) {
              const value = text(message, name);
              if (value !== undefined) headers[name] = value.slice(0, 200);
            }
            const stops = found.get(key) ?? [];
            stops.push({ topic, partition: message.partition, offset: message.offset.toString(), headers });
            found.set(key, stops);
          }
          const high = remaining.get(message.partition);
          if (high !== undefined && message.offset + 1n >= high) remaining.delete(message.partition);
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
    }
  } finally {
    await admin.close();
  }
  return found;
}
