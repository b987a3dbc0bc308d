// What the router remembers of the calls it routed, per partition of `calls`
// (docs/kafka.md#copies-of-a-call): copies of a call share its key, so its partition, and
// each partition's ids are kept by the member that routes it. An id is remembered once
// the records of its batch are acknowledged, never before: a batch that fails is read
// again and must not find its own calls taken for copies. A partition taken over (a
// start, a restart, a rebalance) is rebuilt first from the records of `calls` it holds
// within the window, up to where routing resumes: those were all routed (or dropped).
import type { Logger } from 'pino';
import type { ScannedRecord } from '../../kafka/index.js';
import { IdWindow } from './id-window.js';
import type { IdHash } from './id-window.js';

/** Reads the records of one partition of `calls` from the first offset at or after `sinceMs` (and not below `from`) up to `until`, in pieces. */
export type PartitionReader = (partition: number, sinceMs: number, from: bigint | undefined, until: bigint) => AsyncIterable<readonly ScannedRecord[]>;

export interface CallMemoryOptions {
  windowMs: number;
  read: PartitionReader;
  nowMs?: () => number;
  logger: Logger;
}

/** A read-back this long is logged at info (docs/kafka.md#copies-of-a-call). */
const SLOW_READ_BACK_MS = 1_000;

interface PartitionIds {
  ids: IdWindow;
  /** Every record below this offset is in `ids` (if it had an id). */
  through: bigint;
}

export class CallMemory {
  private readonly partitions = new Map<number, PartitionIds>();
  private readonly nowMs: () => number;

  constructor(private readonly options: CallMemoryOptions) {
    this.nowMs = options.nowMs ?? Date.now;
  }

  /**
   * Before a batch of `partition` starting at `firstOffset` is routed: the records below it
   * that this member did not route itself are read into the memory. `identity` gives the
   * hash of a record's (source, messageId), when it has one of its own.
   */
  async prepare(partition: number, firstOffset: bigint, identity: (record: ScannedRecord) => IdHash | undefined): Promise<void> {
    const known = this.partitions.get(partition);
    if (known !== undefined && firstOffset <= known.through) return;
    const { windowMs, read, logger } = this.options;
    const now = this.nowMs();
    const memory = known ?? { ids: new IdWindow(windowMs), through: 0n };
    let records = 0;
    let remembered = 0;
    const startedMs = performance.now();
    for await (const piece of read(partition, now - windowMs, known?.through, firstOffset)) {
      for (const record of piece) {
        records += 1;
        const hash = identity(record);
        if (hash === undefined) continue;
        // NOTE: the receipt time stands for the routing time of a call routed before.
        const atMs = Math.min(now, Number(record.timestamp));
        if (memory.ids.has(hash, atMs)) continue;
        memory.ids.add(hash, atMs);
        remembered += 1;
      }
    }
    memory.through = firstOffset;
    this.partitions.set(partition, memory);
    const ms = Math.round(performance.now() - startedMs);
    // NOTE: at info only when it delayed routing noticeably: a start reads back every partition.
    logger[ms >= SLOW_READ_BACK_MS ? 'info' : 'debug'](
      { partition, records, remembered, through: firstOffset.toString(), ms },
      `messageIds of calls partition ${partition} read back for the dedupe window (${records} records)`,
    );
  }

  /** Whether a call with this hash was routed within the window. */
  isCopy(partition: number, hash: IdHash): boolean {
    return this.partitions.get(partition)?.ids.has(hash, this.nowMs()) ?? false;
  }

  /** The calls of an acknowledged send, remembered; every record below `through` is done. */
  remember(partition: number, hashes: readonly IdHash[], through: bigint): void {
    const memory = this.partitions.get(partition);
    if (memory === undefined) return;
    const now = this.nowMs();
    for (const hash of hashes) memory.ids.add(hash, now);
    if (through > memory.through) memory.through = through;
  }

  /** On a new assignment: the partitions this member no longer routes are forgotten (rebuilt if they come back). */
  keepOnly(partitions: readonly number[]): void {
    const kept = new Set(partitions);
    for (const partition of this.partitions.keys()) if (!kept.has(partition)) this.partitions.delete(partition);
  }

  /** Ids remembered and their bytes, over every partition. */
  size(): { ids: number; bytes: number } {
    let ids = 0;
    let bytes = 0;
    for (const { ids: window } of this.partitions.values()) {
      ids += window.size;
      bytes += window.bytes;
    }
    return { ids, bytes };
  }
}
