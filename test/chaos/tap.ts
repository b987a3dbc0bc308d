// Reads what the service keeps in Kafka for people to look at — `calls.invalid` and
// every destination's dead-letter topic — as it is written, so the verdict can be taken
// at any moment. A consumer of its own (random group, from the beginning); after a
// crash it is replaced and reads again from the start, records already seen skipped.
import { Consumer } from '@platformatic/kafka';
import type { Message, MessagesStream } from '@platformatic/kafka';
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

type Record_ = Message<Buffer, Buffer, Buffer, Buffer>;

/** A header's first value as text. */
function header(message: Record_, name: string): string | undefined {
  for (const [key, value] of message.headerEntries) if (key.toString() === name) return value.toString();
  return undefined;
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
  const deadLetters = new Map<string, Map<string, Kept>>();
  const deadLetterReasons = new Map<string, Map<string, number>>();
  const invalidKept = new Map<string, Kept>();
  /** Next offset to take per topic-partition: a re-read after a restart skips below it. */
  const nextOffset = new Map<string, bigint>();
  let records = 0;
  let consumer: Consumer<Buffer, Buffer, Buffer, Buffer> | undefined;
  let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  let closing = false;

  const onMessage = (message: Record_): void => {
    const partitionKey = `${message.topic}:${message.partition}`;
    const destination = topics.deadLetters.get(message.topic);
    const offset = message.offset;
    if (offset < (nextOffset.get(partitionKey) ?? 0n)) return;
    nextOffset.set(partitionKey, offset + 1n);
    records += 1;
    const traceId = traceIdOf(header(message, 'traceparent'));
    const error = header(message, 'error');
    const withError = error !== undefined && error.trim() !== '';
    if (destination !== undefined) {
      const messageId = header(message, 'message-id') ?? messageIdOfValue(message.value ?? null);
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
      const key = traceId !== undefined ? options.keyOf(undefined, traceId) : options.keyOf(messageIdOfValue(message.value ?? null), undefined);
      count(invalidKept, key, withError);
    }
  };

  const run = async (): Promise<void> => {
    const next = new Consumer({
      clientId: 'chaos-tap',
      bootstrapBrokers: [options.brokers],
      groupId: `chaos-tap-${randomBytes(4).toString('hex')}`,
      maxWaitTime: 200,
      sessionTimeout: 10_000,
      retries: 20,
      retryDelay: 1_000,
    });
    consumer = next;
    const opened = await next.consume({ topics: [topics.callsInvalid, ...topics.deadLetters.keys()], mode: 'earliest', autocommit: true });
    stream = opened;
    opened.on('data', onMessage);
    opened.on('error', (error: unknown) => {
      if (closing) return;
      options.log(`chaos tap: consumer stopped (${String(error)}); starting a new one`);
      void opened.close().catch(() => undefined);
      void next.close(true).catch(() => undefined);
      setTimeout(() => void run().catch((error: unknown) => options.log(`chaos tap: restart failed: ${String(error)}`)), 1_000);
    });
  };
  await run();

  return {
    deadLetters,
    deadLetterReasons,
    invalidKept,
    records: () => records,
    async close() {
      closing = true;
      await stream?.close().catch(() => undefined);
      await consumer?.close(true);
    },
  };
}
