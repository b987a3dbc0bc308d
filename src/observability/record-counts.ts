// How many records a stretch of offsets holds: the console's figures of a destination
// (docs/admin-api.md#get-v1destinations: dead letters kept and not replayed, the retry
// backlog) and `switchyard_retry_queue_depth`. An offset is not a record: a transaction's
// commit or abort takes one (its marker), and an aborted transaction's records are never
// read (docs/kafka.md#transactions). So each partition's offsets that hold no record are
// read once (src/observability/record-gaps.ts, on the Kafka port's offset reads) and kept as runs; a later
// ask reads only what was written since.
//
// NOTE: what it costs: the first ask of a partition reads its records once (100,000 dead
// letters of ~500 bytes: ~50 MB, a few dozen fetches); every later ask reads only the
// records written since (none: no fetch). It holds 3 numbers per run of offsets without
// a record (at most one run per transaction: 100,000 transactions, ~2.4 MB), none for
// a topic written without transactions.

/** `[from, to)` of one partition. */
export interface OffsetSpan {
  topic: string;
  partition: number;
  from: bigint;
  to: bigint;
}

/** An inclusive range of offsets. */
export type OffsetRun = readonly [bigint, bigint];

/** Where the offsets without a record are read from (record-gaps.ts). */
export interface GapReader {
  /**
   * Reads each span (read committed) and tells, after each answer, the runs of offsets
   * it covered that hold no record (in order) and how far the span is read (`readTo`,
   * at most `to`).
   */
  read(spans: readonly OffsetSpan[], onRead: (span: OffsetSpan, gaps: OffsetRun[], readTo: bigint) => void): Promise<void>;
}

/** The offsets of one partition that hold no record, from `start` up to `end` (what was read). Pure. */
export class PartitionGaps {
  end: number;
  private readonly from: number[] = [];
  private readonly to: number[] = [];
  /** Offsets without a record in the runs before each run (from the arrays' start). */
  private readonly before: number[] = [];
  private head = 0;
  private total = 0;

  constructor(public start: number) {
    this.end = start;
  }

  /** The runs without a record read from `end` on (in order, each at or after `end`), and where the read got to. */
  append(gaps: readonly OffsetRun[], readTo: bigint): void {
    for (const [from, to] of gaps) {
      const f = Number(from);
      const t = Number(to);
      const last = this.from.length - 1;
      if (last >= this.head && this.to[last]! + 1 === f) {
        this.to[last] = t;
      } else {
        this.from.push(f);
        this.to.push(t);
        this.before.push(this.total);
      }
      this.total += t - f + 1;
    }
    const end = Number(readTo);
    if (end > this.end) this.end = end;
  }

  /** Forgets the offsets below `start` (the log's start moved, or a group's commit did). */
  dropBelow(start: number): void {
    if (start <= this.start) return;
    this.start = start;
    while (this.head < this.from.length && this.to[this.head]! < start) this.head += 1;
    if (this.head > 1_024 && this.head * 2 > this.from.length) {
      const base = this.before[this.head]!;
      for (const list of [this.from, this.to, this.before]) list.splice(0, this.head);
      for (let i = 0; i < this.before.length; i++) this.before[i]! -= base;
      this.total -= base;
      this.head = 0;
    }
  }

  /** Offsets of `[from, to)` (within `[start, end)`) that hold a record. */
  records(from: number, to: number): number {
    if (to <= from) return 0;
    return to - from - (this.gapsBelow(to) - this.gapsBelow(from));
  }

  /** Offsets without a record below `offset`, counted from the arrays' start. */
  private gapsBelow(offset: number): number {
    let low = this.head;
    let high = this.from.length - 1;
    let found = -1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if (this.from[mid]! < offset) {
        found = mid;
        low = mid + 1;
      } else {
        high = mid - 1;
      }
    }
    if (found < 0) return this.head < this.before.length ? this.before[this.head]! : this.total;
    const upTo = Math.min(this.to[found]!, offset - 1);
    return this.before[found]! + (upTo - this.from[found]! + 1);
  }
}

/** Records in `[from, to)` of a partition followed for this ask. */
export type CountRecords = (topic: string, partition: number, from: bigint, to: bigint) => number;

export interface RecordCounter {
  /**
   * Reads what is new in each span (`[from, to)` of a partition: what the caller will
   * count in), then hands `use` the count. Asks run one at a time.
   */
  counting<T>(reader: GapReader, spans: readonly OffsetSpan[], use: (records: CountRecords) => T): Promise<T>;
}

/** What was read is kept across asks (the console polls, the lag sampler samples): one counter per reader of the figures. */
export function createRecordCounter(): RecordCounter {
  const partitions = new Map<string, PartitionGaps>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
  let queue: Promise<unknown> = Promise.resolve();
  const follow = async (reader: GapReader, spans: readonly OffsetSpan[]) => {
    const reads: OffsetSpan[] = [];
    const reading = new Map<string, PartitionGaps>();
    for (const span of spans) {
      const key = keyOf(span.topic, span.partition);
      const from = Number(span.from);
      const to = Number(span.to);
      let gaps = partitions.get(key);
      // NOTE: a log that went back (the topic made anew) or a start before what was
      // read: read again from `from`. A start past what was read: the part between is
      // not needed.
      if (gaps === undefined || from < gaps.start || to < gaps.end || from > gaps.end) {
        gaps = new PartitionGaps(from);
        partitions.set(key, gaps);
      } else {
        gaps.dropBelow(from);
      }
      if (to > gaps.end) {
        reads.push({ topic: span.topic, partition: span.partition, from: BigInt(gaps.end), to: span.to });
        reading.set(key, gaps);
      }
    }
    // NOTE: each answer's runs are kept as they come: a read cut short (a timeout, a
    // broker away) goes on from there at the next ask.
    await reader.read(reads, (span, runs, readTo) => reading.get(keyOf(span.topic, span.partition))?.append(runs, readTo));
  };
  const records: CountRecords = (topic, partition, from, to) => {
    const gaps = partitions.get(keyOf(topic, partition));
    const a = Number(from);
    const b = Number(to);
    if (gaps === undefined || a < gaps.start || b > gaps.end) throw new Error(`records of ${topic} partition ${partition} from ${from} to ${to} were not read (read: ${gaps === undefined ? 'none' : `${gaps.start} to ${gaps.end}`}); a bug: report it`);
    return gaps.records(a, b);
  };
  return {
    counting(reader, spans, use) {
      const run = queue.then(async () => {
        await follow(reader, spans);
        return use(records);
      });
      queue = run.catch(() => undefined);
      return run;
    },
  };
}
