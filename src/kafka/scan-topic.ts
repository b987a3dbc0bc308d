// Reads a topic from a consumer group's position up to offsets fixed in advance (the
// high watermarks when an operator command started), so a command ends even while new
// records arrive. Commits only what the caller commits.
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import type { RawHeaders } from './headers.js';

export interface ScannedRecord {
  partition: number;
  offset: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: RawHeaders | undefined;
  /** The record's Kafka timestamp, epoch ms as kafkajs gives it. */
  timestamp: string;
}

export interface ScannedBatch {
  partition: number;
  /** The records of the batch below the partition's end, in offset order. */
  records: ScannedRecord[];
  /** Commits `offset` with `metadata` in the scan's group (only for a group that keeps a position). */
  commit(offset: bigint, metadata: string): Promise<void>;
  /** Not needed: the scan heartbeats every second while a batch is handled (kept until replay.ts drops its call). */
  heartbeat(): Promise<void>;
}

const SCAN_HEARTBEAT_MS = 1_000;

export interface ScanOptions {
  topic: string;
  groupId: string;
  /** Partitions to read, each up to (not including) its end offset. */
  ends: ReadonlyMap<number, bigint>;
  /** Called once per fetched batch, one partition at a time; `'stop'` ends the scan early. */
  onBatch(batch: ScannedBatch): Promise<'more' | 'stop'>;
  /** Gives up when no batch arrived for this long (the group never joined, the broker went away). */
  stallTimeoutMs?: number;
}

/**
 * Runs a consumer in `groupId` (starting at its committed offsets, else at the
 * beginning) until every partition of `ends` was read to its end or `onBatch` said stop.
 */
export async function scanTopic(client: KafkaClient, options: ScanOptions): Promise<void> {
  const pending = new Map(options.ends);
  if (pending.size === 0) return;
  const stallTimeoutMs = options.stallTimeoutMs ?? 60_000;
  let lastProgress = Date.now();
  let stopped = false;
  let finish: (error?: unknown) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => {
    finish = (error) => (error === undefined ? resolve() : reject(error));
  });

  const consumer = kafkajsOf(client).consumer({ groupId: options.groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
  consumer.on(consumer.events.CRASH, (event) => {
    if (!event.payload.restart) finish(event.payload.error);
  });
  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > stallTimeoutMs) {
      finish(new Error(`reading ${options.topic} made no progress for ${stallTimeoutMs} ms; check that the broker is reachable and run the command again`));
    }
  }, 1_000);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [options.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, heartbeat, resolveOffset }) => {
        const end = pending.get(batch.partition);
        if (end === undefined || stopped) return;
        lastProgress = Date.now();
        const records: ScannedRecord[] = [];
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (offset >= end) break;
          records.push({ partition: batch.partition, offset, key: m.key, value: m.value, headers: m.headers as RawHeaders | undefined, timestamp: m.timestamp });
        }
        let verdict: 'more' | 'stop';
        // The scan heartbeats while a long batch is handled (kafkajs has no background heartbeat).
        const beat = setInterval(() => void heartbeat().catch(() => undefined), SCAN_HEARTBEAT_MS);
        try {
          verdict = await options.onBatch({
            partition: batch.partition,
            records,
            commit: (offset, metadata) => consumer.commitOffsets([{ topic: options.topic, partition: batch.partition, offset: String(offset), metadata }]),
            heartbeat,
          });
        } catch (error) {
          // NOTE: thrown back to kafkajs, the batch would be retried and the consumer
          // restarted for ever; the command fails instead, and says why.
          stopped = true;
          finish(error);
          return;
        } finally {
          clearInterval(beat);
        }
        // Resolved (never committed: autoCommit is off) so that the next fetch goes on from here.
        resolveOffset(batch.lastOffset());
        lastProgress = Date.now();
        if (verdict === 'stop') stopped = true;
        if (BigInt(batch.lastOffset()) + 1n >= end) pending.delete(batch.partition);
        if (stopped || pending.size === 0) finish();
      },
    });
    await finished;
  } finally {
    clearInterval(watchdog);
    await consumer.disconnect();
  }
}
