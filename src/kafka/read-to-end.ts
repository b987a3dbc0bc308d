// Reads partitions of a topic from their beginning to the end they had when the read
// started (what is written after that is not waited for): the restore of a changelog.
import { TopicLayoutError } from '../errors.js';
import pino from 'pino';
import type { KafkaClient } from './client.js';
import { Fetcher, heldBytes } from './fetcher.js';
import { earliestOrLatest } from './offset-lookup.js';
import { Wire } from './wire.js';

/** The fetcher's own debug lines (a refused fetch is retried) are not the restore's to log. */
const silentFetchLogger = pino({ level: 'silent' });

export interface ReadToEndOptions {
  topic: string;
  partitions: readonly number[];
  /** Each record in offset order (value null is a tombstone). */
  onRecord(partition: number, key: Buffer | null, value: Buffer | null): void;
  /** A partition was read to its end. */
  onPartitionDone(partition: number): void;
  /** Fail when no record arrived for this long while partitions are still unread. */
  stallTimeoutMs: number;
}

/** Reads each partition from its beginning up to the high watermark it had when the read started (an empty one finishes at once); no group joins. Throws for a partition the topic does not have. */
export async function readToEnd(client: KafkaClient, options: ReadToEndOptions): Promise<void> {
  const { topic } = options;
  const wire = new Wire(client.settings, client.clientId);
  try {
    const metadata = await wire.metadata([topic]);
    const count = metadata.topics.get(topic)?.partitions.length ?? 0;
    for (const partition of options.partitions) {
      if (partition >= count) throw new TopicLayoutError(`restore: topic ${topic} has no partition ${partition}; the profiles topic must have as many partitions as audience.events`);
    }
    const asked = options.partitions.map((partition) => ({ topic, partition }));
    const lows = new Map((await earliestOrLatest(wire, asked, 'earliest')).map((o) => [o.partition, o.offset]));
    const highs = new Map((await earliestOrLatest(wire, asked, 'latest')).map((o) => [o.partition, o.offset]));
    const pending = new Map<number, bigint>();
    for (const partition of options.partitions) {
      const low = lows.get(partition) ?? 0n;
      const high = highs.get(partition) ?? 0n;
      if (high <= low) options.onPartitionDone(partition);
      else pending.set(partition, high);
    }
    if (pending.size === 0) return;
    await readPending(wire, options, lows, pending);
  } finally {
    await wire.close();
  }
}

async function readPending(wire: Wire, options: ReadToEndOptions, lows: ReadonlyMap<number, bigint>, pending: Map<number, bigint>): Promise<void> {
  const { topic } = options;
  let lastProgress = Date.now();
  let finish: (error?: Error) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => {
    finish = (error) => (error === undefined ? resolve() : reject(error));
  });
  const fetcher: Fetcher = new Fetcher(
    wire,
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
            options.onRecord(partition, r.key, r.value);
          }
        } catch (error) {
          finish(error as Error);
          return;
        } finally {
          fetcher.release(topic, partition, bytes);
        }
        if (next >= end) {
          pending.delete(partition);
          fetcher.remove(topic, partition);
          options.onPartitionDone(partition);
          if (pending.size === 0) finish();
        }
      },
      reset: (_topic, partition, from, to) => finish(new Error(`restore: records of ${topic} partition ${partition} from offset ${from} to ${to} were removed while they were read; run the restore again`)),
    },
    silentFetchLogger,
  );
  const watchdog = setInterval(() => {
    if (Date.now() - lastProgress > options.stallTimeoutMs) finish(new Error(`restore: reading ${topic} made no progress for ${options.stallTimeoutMs} ms; check that the broker is reachable`));
  }, 1_000);
  try {
    await fetcher.add([...pending.keys()].map((partition) => ({ topic, partition, position: lows.get(partition) ?? 0n })));
    await finished;
  } finally {
    clearInterval(watchdog);
    await fetcher.stop();
  }
}
