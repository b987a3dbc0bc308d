// Reads partitions of the profiles changelog from the beginning to their end, to
// rebuild the in-memory profiles of the partitions a processor was just assigned.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { TopicLayoutError } from '../errors.js';
import type { Kafka } from '../kafka/index.js';

export interface RestoreOptions {
  kafka: Kafka;
  topic: string;
  partitions: readonly number[];
  /** A group of its own per restore: kafkajs cannot read a partition without joining a group. */
  groupPrefix: string;
  /** Each changelog record in offset order; value null is a tombstone. */
  onRecord(partition: number, key: string, value: string | null): void;
  /** A partition was read to the end it had when the restore started. */
  onPartitionDone(partition: number): void;
  /** Fail when no record arrived for this long while partitions are still unread. */
  stallTimeoutMs?: number;
  logger: Logger;
}

const DEFAULT_STALL_TIMEOUT_MS = 60_000;

/**
 * Reads each partition up to the high watermark it had when the restore started
 * (what was written after that is the restoring processor's own work). Partitions
 * that are empty finish at once, without a consumer.
 */
export async function restoreChangelog(options: RestoreOptions): Promise<void> {
  const { kafka, topic } = options;
  const admin = kafka.admin();
  await admin.connect();
  let ends: Map<number, { low: bigint; high: bigint }>;
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    ends = new Map(offsets.map((o) => [o.partition, { low: BigInt(o.low), high: BigInt(o.high) }]));
  } finally {
    await admin.disconnect();
  }

  const pending = new Set<number>();
  for (const partition of options.partitions) {
    const end = ends.get(partition);
    if (end === undefined) throw new TopicLayoutError(`restore: topic ${topic} has no partition ${partition}; the profiles topic must have as many partitions as audience.events`);
    if (end.high <= end.low) options.onPartitionDone(partition);
    else pending.add(partition);
  }
  if (pending.size === 0) return;

  const consumer = kafka.consumer({
    groupId: `${options.groupPrefix}-restore-${randomBytes(6).toString('hex')}`,
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
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  // NOTE: a watchdog, not a wait: a broker that stops answering must fail the restore
  // (and so the batch that needs it) rather than hang the partition forever.
  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > stallTimeoutMs) {
      fail(new Error(`restore of ${topic} partitions ${[...pending].join(', ')} made no progress for ${stallTimeoutMs} ms`));
    }
  }, Math.min(5_000, stallTimeoutMs));
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
          if (message.key !== null) options.onRecord(partition, message.key.toString('utf8'), message.value === null ? null : message.value.toString('utf8'));
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
  options.logger.debug({ topic, partitions: options.partitions }, 'changelog restored');
}
