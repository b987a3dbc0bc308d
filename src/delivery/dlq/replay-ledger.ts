// Which dead letters of one DLQ partition a replay has already dealt with, kept in the
// replay group's committed offset and its metadata. Pure.
//
// NOTE: a replay by time range (`--since`/`--until`) moves letters from the middle of a
// partition. Committing past the letters it left would make a later replay skip them
// for good; committing only below them would make a later replay move the ranged ones
// a second time. So the committed offset is the first letter not yet dealt with, and
// the commit's metadata lists the ranges above it that were (moved, or offsets that
// hold no letter). A replay without a range moves the letters left behind, the ranges
// join up and the committed offset moves past them all.

/** An inclusive range of offsets. */
export type OffsetRange = readonly [bigint, bigint];

export interface ReplayLedger {
  /** Every offset below this one is dealt with (the committed offset). */
  position: bigint;
  /** Dealt-with ranges above `position`: sorted, disjoint, not adjacent, each starting above position. */
  done: readonly OffsetRange[];
}

const PREFIX = 'replayed:';

/**
 * A broker keeps at most `offset.metadata.max.bytes` (4096 by default) of metadata per
 * partition; this leaves room for the prefix.
 */
export const MAX_LEDGER_METADATA_CHARS = 3_800;

/**
 * The ledger from the group's committed offset and metadata; `low` is the partition's
 * first offset still kept, so letters removed by retention count as dealt with.
 * Metadata this module did not write (an older replay's empty string) reads as no ranges.
 */
export function readLedger(committed: string | undefined, metadata: string | null | undefined, low: bigint): ReplayLedger {
  const offset = committed !== undefined && /^\d+$/.test(committed) ? BigInt(committed) : -1n;
  const ranges: OffsetRange[] = [];
  if (offset >= 0n && metadata?.startsWith(PREFIX)) {
    for (const part of metadata.slice(PREFIX.length).split(',')) {
      const match = /^(\d+)(?:-(\d+))?$/.exec(part);
      if (!match) continue;
      const from = BigInt(match[1]!);
      const to = match[2] === undefined ? from : BigInt(match[2]);
      if (to >= from) ranges.push([from, to]);
    }
  }
  const position = offset > low ? offset : low;
  return normalize(position, ranges);
}

export function isDone(ledger: ReplayLedger, offset: bigint): boolean {
  if (offset < ledger.position) return true;
  return ledger.done.some(([from, to]) => offset >= from && offset <= to);
}

/** The ledger with `ranges` dealt with too. */
export function markDone(ledger: ReplayLedger, ranges: readonly OffsetRange[]): ReplayLedger {
  return normalize(ledger.position, [...ledger.done, ...ranges]);
}

/** The commit's metadata: `replayed:5-9,12` (ranges above the committed offset). */
export function ledgerMetadata(ledger: ReplayLedger): string {
  return PREFIX + ledger.done.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',');
}

/** Sorts and merges the ranges, and moves `position` past those that reach it. */
function normalize(start: bigint, ranges: readonly OffsetRange[]): ReplayLedger {
  let position = start;
  const sorted = ranges.filter(([, to]) => to >= start).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: [bigint, bigint][] = [];
  for (const [from, to] of sorted) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1] + 1n) {
      if (to > last[1]) last[1] = to;
    } else {
      merged.push([from, to]);
    }
  }
  while (merged.length > 0 && merged[0]![0] <= position) {
    const first = merged.shift()!;
    if (first[1] + 1n > position) position = first[1] + 1n;
  }
  return { position, done: merged };
}
