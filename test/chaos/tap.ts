// Reads what the service keeps in Kafka for people to look at — `calls.invalid` and
// every destination's dead-letter topic — as it is written, so the verdict can be taken
// at any moment. A consumer of its own (random group, from the beginning); after a
// crash it is replaced and reads again from the start, records already seen skipped.
import { Kafka, logLevel } from 'kafkajs';
import type { Consumer, EachBatchPayload, IHeaders } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import type { Kept } from './verdict.js';
import { traceIdOf } from './receivers.js';

export interface TapTopics {
  callsInvalid: string;
  /** Dead-letter topic → destination id. */
  deadLetters: ReadonlyMap<string, string>;
}

export interface KafkaTap {
  /** Per destination, per key. */
  readonly deadLetters: Map<string, Map<string, Kept>>;
  /** Per destination: the dead letters' `error` headers with the URLs left out, counted ("302 Found (...)": 120). */
  readonly deadLetterReasons: Map<string, Map<string, number>>;
  /** Per key. */
  readonly invalidKept: Map<string, Kept>;
  /** Records read in all. */
  records(): number;
  close(): Promise<void>;
}

function header(headers: IHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

function messageIdOfValue(value: Buffer | null): string | undefined {
  if (value === null) return undefined;
  try {
    const parsed = JSON.parse(value.toString('utf8')) as unknown;
    const id = typeof parsed === 'object' && parsed !== null ? (parsed as { messageId?: unknown }).messageId : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** `http://127.0.0.1:4100/hook: 500 Internal Server Error; http://…: 302 Found` → `500 Internal Server Error; 302 Found`. */
export function reasonsOf(error: string): string {
  return error.replace(/https?:\/\/\S+?: /g, '');
}

function count(map: Map<string, Kept>, key: string, withError: boolean): void {
  let entry = map.get(key);
  if (entry === undefined) {
    entry = { count: 0, withError: 0 };
    map.set(key, entry);
  }
  entry.count += 1;
  if (withError) entry.withError += 1;
}

export async function startTap(options: {
  brokers: string;
  topics: TapTopics;
  keyOf(messageId: string | undefined, traceId: string | undefined): string;
  log: (line: string) => void;
}): Promise<KafkaTap> {
  const { topics } = options;
  const kafka = new Kafka({ clientId: 'chaos-tap', brokers: [options.brokers], logLevel: logLevel.NOTHING, retry: { retries: 20, maxRetryTime: 5_000 } });
  const deadLetters = new Map<string, Map<string, Kept>>();
  const deadLetterReasons = new Map<string, Map<string, number>>();
  const invalidKept = new Map<string, Kept>();
  /** Next offset to take per topic-partition: a re-read after a restart skips below it. */
  const nextOffset = new Map<string, bigint>();
  let records = 0;
  let consumer: Consumer | undefined;
  let closing = false;

  const onBatch = async ({ batch, resolveOffset, heartbeat }: EachBatchPayload): Promise<void> => {
    const partitionKey = `${batch.topic}:${batch.partition}`;
    const destination = topics.deadLetters.get(batch.topic);
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      if (offset < (nextOffset.get(partitionKey) ?? 0n)) continue;
      nextOffset.set(partitionKey, offset + 1n);
      records += 1;
      const traceId = traceIdOf(header(message.headers, 'traceparent'));
      const error = header(message.headers, 'error');
      const withError = error !== undefined && error.trim() !== '';
      if (destination !== undefined) {
        const messageId = header(message.headers, 'message-id') ?? messageIdOfValue(message.value);
        let byKey = deadLetters.get(destination);
        if (byKey === undefined) {
          byKey = new Map();
          deadLetters.set(destination, byKey);
        }
        count(byKey, options.keyOf(messageId, traceId), withError);
        if (withError) {
          const reasons = deadLetterReasons.get(destination) ?? new Map<string, number>();
          const reason = reasonsOf(error);
          reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
          deadLetterReasons.set(destination, reasons);
        }
      } else {
        // NOTE: an invalid record is known by its trace id first: its body may be anything.
        const key = traceId !== undefined ? options.keyOf(undefined, traceId) : options.keyOf(messageIdOfValue(message.value), undefined);
        count(invalidKept, key, withError);
      }
      resolveOffset(message.offset);
    }
    await heartbeat();
  };

  const run = async (): Promise<void> => {
    const next = kafka.consumer({ groupId: `chaos-tap-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 200, sessionTimeout: 10_000 });
    consumer = next;
    next.on(next.events.CRASH, (event) => {
      if (event.payload.restart || closing) return;
      options.log(`chaos tap: consumer stopped (${String(event.payload.error)}); starting a new one`);
      void next.disconnect().catch(() => undefined);
      setTimeout(() => void run().catch((error: unknown) => options.log(`chaos tap: restart failed: ${String(error)}`)), 1_000);
    });
    await next.connect();
    await next.subscribe({ topics: [topics.callsInvalid, ...topics.deadLetters.keys()], fromBeginning: true });
    await next.run({ autoCommit: true, eachBatch: onBatch });
  };
  await run();

  return {
    deadLetters,
    deadLetterReasons,
    invalidKept,
    records: () => records,
    async close() {
      closing = true;
      await consumer?.disconnect();
    },
  };
}
