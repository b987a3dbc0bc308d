// The offset tracker, pure: for a partition whose records finish in any order, the
// commit names the first unfinished offset and the offsets finished above it travel in
// the commit's metadata (as Confluent's Parallel Consumer does), so a member that takes
// the partition over skips them and redoes only what was in flight.

/** Below the broker's `offset.metadata.max.bytes` (4096 by default), with room for a broker set lower, down to 1 KiB. */
export const MAX_METADATA_CHARS = 1_000;

/** Marks metadata written by this codec; other writers' metadata (a plain commit has none) decodes to nothing. */
const VERSION = 'sy1:';

/**
 * The finished offsets above `base` (ascending) as runs `gap.length` in base 36, each gap
 * from the end of the run before (docs/kafka.md#the-deliverers-commits). Runs past
 * `maxChars` are left out: a duplicate after a takeover, never a loss.
 */
export function encodeFinished(base: bigint, finished: readonly bigint[], maxChars = MAX_METADATA_CHARS): string {
  if (finished.length === 0) return '';
  let text = VERSION;
  let previousEnd = base; // the offset after the previous run (base: nothing finished there)
  let i = 0;
  while (i < finished.length) {
    const start = finished[i]!;
    let length = 1n;
    while (i + 1 < finished.length && finished[i + 1] === start + length) {
      length += 1n;
      i += 1;
    }
    i += 1;
    const run = `${(start - previousEnd).toString(36)}.${length.toString(36)}`;
    const next = text === VERSION ? text + run : `${text},${run}`;
    if (next.length > maxChars) break;
    text = next;
    previousEnd = start + length;
  }
  return text === VERSION ? '' : text;
}

/** The finished offsets above `base` that `metadata` lists; empty for anything it cannot read. */
export function decodeFinished(base: bigint, metadata: string | null | undefined): bigint[] {
  if (metadata === null || metadata === undefined || !metadata.startsWith(VERSION)) return [];
  const offsets: bigint[] = [];
  let previousEnd = base;
  for (const run of metadata.slice(VERSION.length).split(',')) {
    const match = /^([0-9a-z]+)\.([0-9a-z]+)$/.exec(run);
    if (match === null) return []; // not ours after all: trust none of it
    const start = previousEnd + parseBase36(match[1]!);
    const length = parseBase36(match[2]!);
    // NOTE: a length is capped so that a corrupt entry cannot make this loop run for ever.
    if (length < 1n || length > 10_000_000n) return [];
    for (let k = 0n; k < length; k++) offsets.push(start + k);
    previousEnd = start + length;
  }
  return offsets;
}

function parseBase36(text: string): bigint {
  let value = 0n;
  for (const char of text) value = value * 36n + BigInt(parseInt(char, 36));
  return value;
}

/** What to commit for one partition: the offset of the first unfinished record, and the metadata. */
export interface CommitPoint {
  offset: string;
  metadata: string;
}

/** One partition's progress: every offset below `base` is finished, and those in `above`; starts from a commit and its metadata. */
export class PartitionProgress {
  private base: bigint;
  private readonly above = new Set<bigint>();
  /** Changed since the last `commitPoint()` that was committed. */
  private changes = 0;

  constructor(committed: string, metadata: string | null | undefined) {
    this.base = BigInt(committed);
    for (const offset of decodeFinished(this.base, metadata)) this.above.add(offset);
  }

  /** Whether `offset` finished (by this member, or before the takeover by the metadata). */
  isFinished(offset: string): boolean {
    const o = BigInt(offset);
    return o < this.base || this.above.has(o);
  }

  /** `offset` finished (in any order; again is a no-op). */
  finish(offset: string): void {
    const o = BigInt(offset);
    if (o < this.base || this.above.has(o)) return;
    this.changes += 1;
    if (o !== this.base) {
      this.above.add(o);
      return;
    }
    this.base += 1n;
    while (this.above.delete(this.base)) this.base += 1n;
  }

  /** The partition starts at `offset` instead (an older group's commit, a log start after retention): what lies below counts as finished. */
  startAt(offset: string): void {
    const o = BigInt(offset);
    if (o <= this.base) return;
    this.base = o;
    for (const done of this.above) if (done < o) this.above.delete(done);
    while (this.above.delete(this.base)) this.base += 1n;
    this.changes += 1;
  }

  /** The first unfinished offset (what a commit names). */
  get next(): string {
    return this.base.toString();
  }

  /** Finished offsets above `next`. */
  get finishedAbove(): number {
    return this.above.size;
  }

  /** Something finished since the last commit; `changeCount` tells a later `committed()` what it covered. */
  get changeCount(): number {
    return this.changes;
  }

  commitPoint(maxChars = MAX_METADATA_CHARS): CommitPoint {
    const above = [...this.above].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { offset: this.base.toString(), metadata: encodeFinished(this.base, above, maxChars) };
  }
}
