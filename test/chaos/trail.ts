// Where a lost call's trail ends: for a failed run, the topics it should have passed
// through (calls, deliveries, retry tiers, dead letters) are searched for it, so the
// report says which hop dropped it — before the run's broker and its data are gone.
import { Kafka, logLevel } from 'kafkajs';
import type { IHeaders } from 'kafkajs';
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
const READ_TIMEOUT_MS = 120_000;

function text(headers: IHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
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
  const kafka = new Kafka({ clientId: 'chaos-trail', brokers: [brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const found = new Map<string, TrailStop[]>();
  try {
    const existing = new Set(await admin.listTopics());
    for (const topic of topics.filter((t) => existing.has(t))) {
      const ends = await admin.fetchTopicOffsets(topic);
      const remaining = new Map(ends.filter((e) => BigInt(e.high) > BigInt(e.low)).map((e) => [e.partition, BigInt(e.high)]));
      if (remaining.size === 0) continue;
      const consumer = kafka.consumer({ groupId: `chaos-trail-${randomBytes(4).toString('hex')}` });
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        let finish: () => void = () => undefined;
        const finished = new Promise<void>((resolve) => {
          finish = resolve;
        });
        await consumer.run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            for (const message of batch.messages) {
              let messageId = text(message.headers, 'message-id');
              if (messageId === undefined && message.value !== null) {
                const match = /"messageId":"([^"]*)"/.exec(message.value.toString('utf8', 0, Math.min(message.value.length, 4096)));
                messageId = match?.[1];
              }
              const key = keyOf(messageId, traceIdOf(text(message.headers, 'traceparent')));
              if (wanted.has(key)) {
                const headers: Record<string, string> = {};
                for (const name of SHOWN_HEADERS) {
                  const value = text(message.headers, name);
                  if (value !== undefined) headers[name] = value.slice(0, 200);
                }
                const stops = found.get(key) ?? [];
                stops.push({ topic, partition: batch.partition, offset: message.offset, headers });
                found.set(key, stops);
              }
            }
            const high = remaining.get(batch.partition);
            if (high !== undefined && BigInt(batch.lastOffset()) + 1n >= high) remaining.delete(batch.partition);
            if (remaining.size === 0) finish();
          },
        });
        await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, READ_TIMEOUT_MS))]);
      } finally {
        await consumer.disconnect();
      }
    }
  } finally {
    await admin.disconnect();
  }
  return found;
}
