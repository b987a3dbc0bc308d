// Reads partitions of a topic from their beginning to the end they had when the read
// started (what is written after that is not waited for): the restore of a changelog.
import { TopicLayoutError } from '../errors.js';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';

export interface ReadToEndOptions {
  topic: string;
  partitions: readonly number[];
  /** A group of its own for this read, never committed to: kafkajs cannot read a partition without joining a group. */
  groupId: string;
  /** Each record in offset order (value null is a tombstone). */
  onRecord(partition: number, key: Buffer | null, value: Buffer | null): void;
  /** A partition was read to its end. */
  onPartitionDone(partition: number): void;
  /** Fail when no record arrived for this long while partitions are still unread. */
  stallTimeoutMs: number;
}

/** The [low, high) offsets of every partition of `topic`, now. */
async function partitionEnds(client: KafkaClient, topic: string): Promise<Map<number, { low: bigint; high: bigint }>> {
  const admin = kafkajsOf(client).admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
  } finally {
    await admin.disconnect();
  }
}

/**
 * Reads each partition up to the high watermark it had when the read started.
 * Partitions that are empty finish at once, without a consumer. Throws for a
 * partition the topic does not have.
 */
export async function readToEnd(client: KafkaClient, options: ReadToEndOptions): Promise<void> {
  const { topic } = options;
  const ends = await partitionEnds(client, topic);
  const pending = new Set<number>();
  for (const partition of options.partitions) {
    const end = ends.get(partition);
    if (end === undefined) throw new TopicLayoutError(`restore: topic ${topic} has no partition ${partition}; the profiles topic must have as many partitions as audience.events`);
    if (end.high <= end.low) options.onPartitionDone(partition);
    else pending.add(partition);
  }
  if (pending.size === 0) return;

  const consumer = kafkajsOf(client).consumer({
    groupId: options.groupId,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: 8 * 1024 * 1024,
    maxWaitTimeInMs: 250,
  });
  let lastProgress = Date.now();
  let finish: () => void = () => undefined;
  let fail: (error: Error) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  // NOTE: a watchdog, not a wait: a broker that stops answering must fail the restore
  // (and so the batch that needs it) rather than hang the partition forever.
  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > options.stallTimeoutMs) {
      fail(new Error(`restore of ${topic} partitions ${[...pending].join(', ')} made no progress for ${options.stallTimeoutMs} ms`));
    }
  }, Math.min(5_000, options.stallTimeoutMs));
  const removeCrashListener = consumer.on(consumer.events.CRASH, (event) => {
    fail(new Error(`restore consumer of ${topic} crashed: ${String(event.payload.error)}`, { cause: event.payload.error }));
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, pause }) => {
        const partition = batch.partition;
        const end = ends.get(partition);
        if (!pending.has(partition) || end === undefined) {
          pause();
          return;
        }
        lastProgress = Date.now();
        for (const message of batch.messages) {
          const offset = BigInt(message.offset);
          if (offset >= end.high) break;
          options.onRecord(partition, message.key, message.value);
          if (offset + 1n >= end.high) break;
        }
        const last = batch.messages[batch.messages.length - 1];
        if (last !== undefined && BigInt(last.offset) + 1n >= end.high) {
          pending.delete(partition);
          options.onPartitionDone(partition);
          pause();
          if (pending.size === 0) finish();
        }
      },
    });
    await finished;
  } finally {
    clearInterval(watchdog);
    removeCrashListener();
    await consumer.disconnect();
  }
}
