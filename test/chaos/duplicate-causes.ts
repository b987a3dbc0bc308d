// Which fault a duplicate followed: each 2xx past the first at one URL is put down to
// the last fault that started before it (a SIGKILL of a role, a broker restart, a config
// reload, a receiver outage), or to none when no fault started in the window before it.
// A guess by timing, not a proof: it tells which fault to look at first.
import type { FaultRecord } from './faults.js';

/** How long after a fault's start a duplicate is still put down to it. */
export const CAUSE_WINDOW_MS = 60_000;

export interface DuplicateCause {
  count: number;
  /** Median time from the event's first 2xx to the duplicate one. */
  medianGapMs: number;
  /** Median time from the fault's start to the duplicate. */
  medianAfterFaultMs: number;
}

/** The fault's name in the report: `kill router`, `broker-restart`, `reload`, `receiver-outage`. */
function causeOf(record: FaultRecord): string {
  return record.fault.kind === 'kill' ? `kill ${record.fault.role}` : record.fault.kind;
}

const median = (values: number[]): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/**
 * Duplicates by the fault before them. `deliveries` gives, per URL and event, the
 * instants of its 2xx answers; every one past the first is a duplicate.
 */
export function duplicateCauses(deliveries: Iterable<readonly number[]>, faults: readonly FaultRecord[]): Record<string, DuplicateCause> {
  const starts = [...faults].sort((a, b) => a.startedAtMs - b.startedAtMs);
  const gaps = new Map<string, { gap: number[]; after: number[] }>();
  for (const instants of deliveries) {
    for (let i = 1; i < instants.length; i++) {
      const at = instants[i]!;
      let before: FaultRecord | undefined;
      for (const record of starts) {
        if (record.startedAtMs > at) break;
        before = record;
      }
      const inWindow = before !== undefined && at - before.startedAtMs <= CAUSE_WINDOW_MS;
      const cause = inWindow ? causeOf(before!) : 'none';
      const entry = gaps.get(cause) ?? { gap: [], after: [] };
      entry.gap.push(at - instants[0]!);
      if (inWindow) entry.after.push(at - before!.startedAtMs);
      gaps.set(cause, entry);
    }
  }
  return Object.fromEntries(
    [...gaps]
      .sort((a, b) => b[1].gap.length - a[1].gap.length)
      .map(([cause, { gap, after }]) => [cause, { count: gap.length, medianGapMs: median(gap), medianAfterFaultMs: median(after) }]),
  );
}
