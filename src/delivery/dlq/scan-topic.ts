// The reader of `dlq list` and `replay` (and of `replay --blocked`, src/router/replay-blocked.ts):
// reads a topic from a consumer group's position up to offsets fixed in advance (the
// high watermarks when the command started), so a command ends even while new records
// arrive. Commits only what the caller commits. Built on the port's consumer engine
// (docs/kafka.md#the-consumer-engine).
import pino from 'pino';
import { GroupReader, heldBytes, partitionKey } from '../../kafka/index.js';
import type { Generation, InboundRecord, KafkaClient, RecordHeaders, ScannedRecord } from '../../kafka/index.js';

export interface ScannedBatch {
  partition: number;
  /** The records of the batch below the partition's end, in offset order. */
  records: ScannedRecord[];
  /**
   * The offsets the batch covers, `[from, to)`: an offset in it that is not one of
   * `records` holds no record a committed reader sees (a transaction's marker, an
   * aborted transaction's record, a compacted one). The next batch of the partition
   * starts at `to`.
   */
  from: bigint;
  to: bigint;
  /** Commits `offset` with `metadata` in the scan's group (only for a group that keeps a position). */
  commit(offset: bigint, metadata: string): Promise<void>;
}

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
 * Joins `groupId` (a member of the consumer engine: membership.ts, fetcher.ts) and reads
 * each partition of `ends` from the group's commit (else from its beginning) until its
 * end or until `onBatch` says stop. Batches are handed over one at a time.
 */
export async function scanTopic(client: KafkaClient, options: ScanOptions): Promise<void> {
  const pending = new Map(options.ends);
  if (pending.size === 0) return;
  const scan = new Scan(client, options, pending);
  await scan.run();
}

interface Waiting {
  partition: number;
  records: InboundRecord[];
  from: bigint;
  next: bigint;
  epoch: number;
}

class Scan {
  private readonly reader: GroupReader;
  private readonly waiting: Waiting[] = [];
  private epoch = 0;
  private working = false;
  private stopped = false;
  private lastProgress = Date.now();
  private finish: (error?: unknown) => void = () => undefined;
  private readonly finished: Promise<void>;
  /** The batch being handed over (a generation's end waits for it). */
  private current: Promise<void> = Promise.resolve();

  constructor(
    client: KafkaClient,
    private readonly options: ScanOptions,
    private readonly pending: Map<number, bigint>,
  ) {
    this.finished = new Promise<void>((resolve, reject) => {
      this.finish = (error) => (error === undefined ? resolve() : reject(error));
    });
    this.reader = new GroupReader(
      client,
      {
        groupId: options.groupId,
        rebalanceTimeoutMs: 30_000,
        // NOTE: read committed: `calls.blocked` is written in the router's transactions
        // (docs/kafka.md#transactions); a record of an aborted one must never be replayed.
        fetch: { isolation: 1, budgetBytes: 32 * 1024 * 1024, maxPartitionBytes: 4 * 1024 * 1024, maxRequestBytes: 32 * 1024 * 1024, pollWaitMs: () => 500, emptyPollMs: 500 },
      },
      {
        membership: {
          assigned: (generation) => void this.onAssigned(generation).catch((error: unknown) => this.finish(error)),
          revoking: async () => {
            this.epoch += 1;
            this.reader.fetcher.clear();
            this.waiting.length = 0;
            await this.current;
          },
        },
        fetch: {
          records: (_topic, partition, records, from, next) => {
            this.waiting.push({ partition, records, from, next, epoch: this.epoch });
            this.work();
          },
          reset: () => undefined,
        },
      },
      pino({ level: 'silent' }),
    );
  }

  async run(): Promise<void> {
    const stallTimeoutMs = this.options.stallTimeoutMs ?? 60_000;
    const watchdog = setInterval(() => {
      if (Date.now() - this.lastProgress > stallTimeoutMs) {
        this.finish(new Error(`reading ${this.options.topic} made no progress for ${stallTimeoutMs} ms; check that the broker is reachable and run the command again`));
      }
    }, 1_000);
    this.reader.membership.subscribe([this.options.topic]);
    try {
      await this.finished;
    } finally {
      this.stopped = true;
      clearInterval(watchdog);
      this.reader.fetcher.clear();
      await this.current;
      await this.reader.close();
    }
  }

  /** Each assigned partition still to read, from the group's commit, else from its beginning. */
  private async onAssigned(generation: Generation): Promise<void> {
    const { topic } = this.options;
    const mine = (generation.assignment.get(topic) ?? []).filter((p) => this.pending.has(p));
    if (mine.length === 0) return;
    const assigned = [{ topic, partitions: mine }];
    const positions = await this.reader.fillFromLog(await this.reader.committedPositions(generation, assigned), assigned, 'earliest');
    if (this.reader.membership.current() !== generation) return;
    const starts: { topic: string; partition: number; position: bigint }[] = [];
    for (const partition of mine) {
      const position = positions.get(partitionKey(topic, partition))!;
      if (position >= this.pending.get(partition)!) this.done(partition);
      else starts.push({ topic, partition, position });
    }
    this.lastProgress = Date.now();
    await this.reader.fetcher.add(starts);
  }

  private done(partition: number): void {
    this.pending.delete(partition);
    this.reader.fetcher.remove(this.options.topic, partition);
    if (this.pending.size === 0) this.finish();
  }

  private work(): void {
    if (this.working) return;
    this.working = true;
    this.current = this.drain().finally(() => {
      this.working = false;
    });
  }

  private async drain(): Promise<void> {
    const { topic } = this.options;
    for (let item = this.waiting.shift(); item !== undefined && !this.stopped; item = this.waiting.shift()) {
      const end = this.pending.get(item.partition);
      let bytes = 0;
      for (const r of item.records) bytes += heldBytes(r);
      if (end === undefined || item.epoch !== this.epoch) {
        this.reader.fetcher.release(topic, item.partition, bytes);
        continue;
      }
      this.lastProgress = Date.now();
      const records: ScannedRecord[] = [];
      for (const r of item.records) {
        const offset = BigInt(r.offset);
        if (offset >= end) break;
        records.push({ partition: item.partition, offset, key: r.key, value: r.value, headers: r.headers as RecordHeaders | undefined, timestamp: r.timestamp });
      }
      const generation = this.reader.membership.current();
      let verdict: 'more' | 'stop';
      try {
        verdict = await this.options.onBatch({
          partition: item.partition,
          records,
          from: item.from,
          to: item.next < end ? item.next : end,
          commit: async (offset, metadata) => {
            if (generation === undefined) throw new Error(`the scan of ${topic} lost its consumer group generation; run the command again`);
            await this.reader.commit(generation, [{ topic, partition: item.partition, offset: offset.toString(), metadata }]);
          },
        });
      } catch (error) {
        // NOTE: the command fails and says why, rather than retrying the batch for ever.
        this.finish(error);
        return;
      } finally {
        this.reader.fetcher.release(topic, item.partition, bytes);
      }
      this.lastProgress = Date.now();
      if (verdict === 'stop') {
        this.finish();
        return;
      }
      if (item.next >= end) this.done(item.partition);
    }
  }
}
