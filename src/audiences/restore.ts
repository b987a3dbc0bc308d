// Reads partitions of the profiles changelog from the beginning to their end, to
// rebuild the in-memory profiles of the partitions a processor was just assigned. Built
// on the port's fetcher, joining no group (docs/kafka.md#the-consumer-engine).
import type { Logger } from 'pino';
import pino from 'pino';
import { TopicLayoutError } from '../errors.js';
import { createAdmin, grouplessFetcher, heldBytes } from '../kafka/index.js';
import type { KafkaClient } from '../kafka/index.js';

export interface RestoreOptions {
  kafka: KafkaClient;
  topic: string;
  partitions: readonly number[];
  /** Each changelog record in offset order; value null is a tombstone. */
  onRecord(partition: number, key: string, value: string | null): void;
  /** A partition was read to the end it had when the restore started. */
  onPartitionDone(partition: number): void;
  /** Fail when no record arrived for this long while partitions are still unread. */
  stallTimeoutMs?: number;
  logger: Logger;
}

const DEFAULT_STALL_TIMEOUT_MS = 60_000;

/** The fetcher's own debug lines (a refused fetch is retried) are not the restore's to log. */
const silentFetchLogger = pino({ level: 'silent' });

/**
 * Reads each partition up to the end it had when the restore started (what was written
 * after that is the restoring processor's own work). Partitions that are empty finish
 * at once, without a fetch; no consumer group is joined. Throws for a partition the
 * topic does not have.
 */
export async function restoreChangelog(options: RestoreOptions): Promise<void> {
  const { topic } = options;
  const admin = createAdmin(options.kafka);
  const ends = await admin.partitionEndsOf([topic]).finally(() => admin.disconnect());
  const byPartition = new Map((ends.get(topic) ?? []).map((end) => [end.partition, end]));
  const lows = new Map<number, bigint>();
  const pending = new Map<number, bigint>();
  for (const partition of options.partitions) {
    const end = byPartition.get(partition);
    if (end === undefined) throw new TopicLayoutError(`restore: topic ${topic} has no partition ${partition}; the profiles topic must have as many partitions as audience.events`);
    lows.set(partition, BigInt(end.low));
    if (BigInt(end.high) <= BigInt(end.low)) options.onPartitionDone(partition);
    else pending.set(partition, BigInt(end.high));
  }
  if (pending.size > 0) await readPending(options, lows, pending);
  options.logger.debug({ topic, partitions: options.partitions }, 'changelog restored');
}

async function readPending(options: RestoreOptions, lows: ReadonlyMap<number, bigint>, pending: Map<number, bigint>): Promise<void> {
  const { topic } = options;
  const stallTimeoutMs = options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS;
  let lastProgress = Date.now();
  let finish: (error?: Error) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => {
    finish = (error) => (error === undefined ? resolve() : reject(error));
  });
  const reader = grouplessFetcher(
    options.kafka,
    { isolation: 0, budgetBytes: 64 * 1024 * 1024, maxPartitionBytes: 8 * 1024 * 1024, maxRequestBytes: 64 * 1024 * 1024, pollWaitMs: () => 250, emptyPollMs: 250 },
    {
      records: (_topic, partition, records, _from, next) => {
        const end = pending.get(partition);
        if (end === undefined) return;
        lastProgress = Date.now();
        let bytes = 0;
        try {
          for (const r of records) {
            bytes += heldBytes(r);
            if (BigInt(r.offset) >= end) break;
            if (r.key !== null) options.onRecord(partition, r.key.toString('utf8'), r.value === null ? null : r.value.toString('utf8'));
          }
        } catch (error) {
          finish(error as Error);
          return;
        } finally {
          reader.fetcher.release(topic, partition, bytes);
        }
        if (next >= end) {
          pending.delete(partition);
          reader.fetcher.remove(topic, partition);
          options.onPartitionDone(partition);
          if (pending.size === 0) finish();
        }
      },
      reset: (_topic, partition, from, to) => finish(new Error(`restore: records of ${topic} partition ${partition} from offset ${from} to ${to} were removed while they were read; run the restore again`)),
    },
    silentFetchLogger,
  );
  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > stallTimeoutMs) finish(new Error(`restore: reading ${topic} made no progress for ${stallTimeoutMs} ms; check that the broker is reachable`));
  }, 1_000);
  try {
    await reader.fetcher.add([...pending.keys()].map((partition) => ({ topic, partition, position: lows.get(partition) ?? 0n })));
    await finished;
  } finally {
    clearInterval(watchdog);
    await reader.close();
  }
}
