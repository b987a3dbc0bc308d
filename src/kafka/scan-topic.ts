// Reads a topic from a consumer group's position up to offsets fixed in advance (the
// high watermarks when an operator command started), so a command ends even while new
// records arrive. Commits only what the caller commits.
import pino from 'pino';
import { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS } from './client.js';
import type { KafkaClient } from './client.js';
import { commitOffsets, readCommitted } from './committer.js';
import { Fetcher, heldBytes } from './fetcher.js';
import type { RawHeaders } from './headers.js';
import { GroupMembership } from './membership.js';
import type { Generation } from './membership.js';
import { earliestOrLatest } from './offset-lookup.js';
import type { InboundRecord } from './records.js';
import { Wire } from './wire.js';

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
  /** Not needed: the membership heartbeats in the background (kept until replay.ts drops its call). */
  heartbeat(): Promise<void>;
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
  next: bigint;
  epoch: number;
}

class Scan {
  private readonly wire: Wire;
  private readonly membership: GroupMembership;
  private readonly fetcher: Fetcher;
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
    this.wire = new Wire(client.settings, client.clientId);
    const logger = pino({ level: 'silent' });
    this.membership = new GroupMembership(
      this.wire,
      { groupId: options.groupId, sessionTimeoutMs: CONSUMER_SESSION_TIMEOUT_MS, rebalanceTimeoutMs: 30_000, heartbeatIntervalMs: CONSUMER_HEARTBEAT_INTERVAL_MS },
      {
        assigned: (generation) => void this.onAssigned(generation).catch((error: unknown) => this.finish(error)),
        revoking: async () => {
          this.epoch += 1;
          this.fetcher.clear();
          this.waiting.length = 0;
          await this.current;
        },
      },
      logger,
    );
    this.fetcher = new Fetcher(
      this.wire,
      { isolation: 0, budgetBytes: 32 * 1024 * 1024, maxPartitionBytes: 4 * 1024 * 1024, maxRequestBytes: 32 * 1024 * 1024, pollWaitMs: () => 500, emptyPollMs: 500 },
      {
        records: (_topic, partition, records, _from, next) => {
          this.waiting.push({ partition, records, next, epoch: this.epoch });
          this.work();
        },
        reset: () => undefined,
      },
      logger,
    );
  }

  async run(): Promise<void> {
    const stallTimeoutMs = this.options.stallTimeoutMs ?? 60_000;
    const watchdog = setInterval(() => {
      if (Date.now() - this.lastProgress > stallTimeoutMs) {
        this.finish(new Error(`reading ${this.options.topic} made no progress for ${stallTimeoutMs} ms; check that the broker is reachable and run the command again`));
      }
    }, 1_000);
    this.membership.subscribe([this.options.topic]);
    try {
      await this.finished;
    } finally {
      this.stopped = true;
      clearInterval(watchdog);
      this.fetcher.clear();
      await this.current;
      await this.membership.leave();
      await this.fetcher.stop();
      await this.wire.close();
    }
  }

  /** Each assigned partition still to read, from the group's commit, else from its beginning. */
  private async onAssigned(generation: Generation): Promise<void> {
    const { topic, groupId } = this.options;
    const mine = (generation.assignment.get(topic) ?? []).filter((p) => this.pending.has(p));
    if (mine.length === 0) return;
    const positions = new Map<number, bigint>();
    for (const t of await readCommitted(this.wire, generation.coordinator, groupId, [{ topic, partitions: mine }])) {
      for (const p of t.partitions) if (BigInt(p.offset) >= 0n) positions.set(p.partition, BigInt(p.offset));
    }
    const fresh = mine.filter((p) => !positions.has(p)).map((partition) => ({ topic, partition }));
    for (const { partition, offset } of await earliestOrLatest(this.wire, fresh, 'earliest')) positions.set(partition, offset);
    if (this.membership.current() !== generation) return;
    const starts: { topic: string; partition: number; position: bigint }[] = [];
    for (const partition of mine) {
      const position = positions.get(partition)!;
      if (position >= this.pending.get(partition)!) this.done(partition);
      else starts.push({ topic, partition, position });
    }
    this.lastProgress = Date.now();
    await this.fetcher.add(starts);
  }

  private done(partition: number): void {
    this.pending.delete(partition);
    this.fetcher.remove(this.options.topic, partition);
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
        this.fetcher.release(topic, item.partition, bytes);
        continue;
      }
      this.lastProgress = Date.now();
      const records: ScannedRecord[] = [];
      for (const r of item.records) {
        const offset = BigInt(r.offset);
        if (offset >= end) break;
        records.push({ partition: item.partition, offset, key: r.key, value: r.value, headers: r.headers as RawHeaders | undefined, timestamp: r.timestamp });
      }
      const generation = this.membership.current();
      let verdict: 'more' | 'stop';
      try {
        verdict = await this.options.onBatch({
          partition: item.partition,
          records,
          commit: async (offset, metadata) => {
            if (generation === undefined) throw new Error(`the scan of ${topic} lost its consumer group generation; run the command again`);
            await commitOffsets(this.wire, this.options.groupId, generation, [{ topic, partition: item.partition, offset: offset.toString(), metadata }]);
          },
          heartbeat: async () => undefined,
        });
      } catch (error) {
        // NOTE: the command fails and says why, rather than retrying the batch for ever.
        this.finish(error);
        return;
      } finally {
        this.fetcher.release(topic, item.partition, bytes);
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
