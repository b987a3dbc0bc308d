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

/** A duplicated event at one URL: the instants of its 2xx answers (ms since the epoch) and how many records of it its destination's topics hold. */
export interface DuplicatedEvent {
  answeredAt: readonly number[];
  /** Records of the event in `deliveries.<id>`: more than one is a copy routed twice. */
  deliveryRecords: number;
  /** Records of the event in the destination's retry tiers: one per attempt the deliverer took for failed. */
  retryRecords: number;
}

/**
 * Whether an answer at `atMs` came while the deliverer was down after a SIGKILL: no
 * deliverer ran to send that request, so it was open at the kill, and the kill lost its
 * answer (a receiver answers after the kill what it took before it).
 */
function openAtKill(record: FaultRecord, atMs: number): boolean {
  return record.fault.kind === 'kill' && record.fault.role === 'deliverer' && record.startedAtMs <= atMs && atMs <= record.endedAtMs;
}

/**
 * Duplicates by how they came about, from the topics rather than by timing alone:
 * - `routed twice`: the event has more records in `deliveries.<id>` than one, each
 *   delivered: a copy written by the router or a client's retry through the gateway
 *   (what transactions and the dedupe window remove, docs/kafka.md#transactions);
 * - `answer not taken`: no more 2xx answers than records (the delivery record and its
 *   retry records): a receiver answered 2xx to an attempt the deliverer took for failed
 *   (its timeout fired first, or the answer was cut), and the next attempt delivered
 *   again. HTTP forces these;
 * - `redelivered <fault>`: more 2xx answers than records, so one record was sent
 *   twice: the deliverer sent it again after it lost the record's progress, put down
 *   to the first fault between the event's first 2xx and the extra one (the first
 *   such fault already lost what was not committed; a redelivery can come seconds
 *   later, after a rejoin, past later faults), `none` when there was none. A first
 *   answer that came while the deliverer was down after a kill (the receiver answered
 *   a request open at the kill) is put down to that kill.
 * One count per 2xx answer past the first.
 */
export function duplicateMechanisms(events: Iterable<DuplicatedEvent>, faults: readonly FaultRecord[]): Record<string, number> {
  const starts = [...faults].sort((a, b) => a.startedAtMs - b.startedAtMs);
  const counts = new Map<string, number>();
  const add = (mechanism: string, n: number): void => {
    if (n > 0) counts.set(mechanism, (counts.get(mechanism) ?? 0) + n);
  };
  for (const event of events) {
    const answers = [...event.answeredAt].sort((a, b) => a - b);
    let extra = answers.length - 1;
    if (extra <= 0) continue;
    const routedTwice = Math.min(extra, Math.max(0, event.deliveryRecords - 1));
    add('routed twice', routedTwice);
    extra -= routedTwice;
    const records = Math.max(1, event.deliveryRecords) + event.retryRecords;
    const redone = Math.max(0, answers.length - records);
    add('answer not taken', extra - Math.min(extra, redone));
    // The extra answers past the records' count are the latest ones: each is put down to the first fault since the first answer,
    // or to a deliverer kill the first answer came during (openAtKill).
    for (const at of answers.slice(answers.length - Math.min(extra, redone))) {
      const first = starts.find((record) => openAtKill(record, answers[0]!) || (record.startedAtMs >= answers[0]! && record.startedAtMs <= at));
      add(`redelivered ${first !== undefined ? causeOf(first) : 'none'}`, 1);
    }
  }
  return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]));
}
