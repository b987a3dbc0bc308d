// Reads partitions of the profiles changelog from the beginning to their end, to
// rebuild the in-memory profiles of the partitions a processor was just assigned.
import type { Logger } from 'pino';
import { readToEnd } from '../kafka/index.js';
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

/**
 * Reads each partition up to the high watermark it had when the restore started
 * (what was written after that is the restoring processor's own work). Partitions
 * that are empty finish at once, without a fetch; no consumer group is joined.
 */
export async function restoreChangelog(options: RestoreOptions): Promise<void> {
  await readToEnd(options.kafka, {
    topic: options.topic,
    partitions: options.partitions,
    stallTimeoutMs: options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
    onRecord: (partition, key, value) => {
      if (key !== null) options.onRecord(partition, key.toString('utf8'), value === null ? null : value.toString('utf8'));
    },
    onPartitionDone: options.onPartitionDone,
  });
  options.logger.debug({ topic: options.topic, partitions: options.partitions }, 'changelog restored');
}
