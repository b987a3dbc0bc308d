// What `destinations.state` says, folded in log order (state-records.ts): each destination's
// lifecycle, every pod's latest attempt report, and which records were accepted
// transitions (with the operational event each one makes). Pure: the follower
// (state-follower.ts) feeds it the records; the CLI feeds it a one-off read.
import { INITIAL_LIFECYCLE, applyTransition } from './lifecycle-state.js';
import type { DestinationLifecycle, OperationType, TransitionRequest } from './lifecycle-state.js';
import type { AttemptReport } from './auto-disable.js';
import type { DeadLetterReport, StateRecord } from './state-records.js';
import { SAMPLE_SIZE } from '../observability/dead-letter-tap.js';

/** An accepted transition's operational event (docs/operations.md#operational-events). */
export interface OperationEvent {
  /** Unique: the transition record's key, `evt_`-prefixed (also the Standard Webhooks `webhook-id`). */
  id: string;
  type: OperationType;
  destination: string;
  /** ISO 8601 UTC with milliseconds. */
  at: string;
  state: DestinationLifecycle['state'];
  [field: string]: unknown;
}

/** Keys remembered with their outcome, for writers waiting on their own record (oldest forgotten first). */
const REMEMBERED_KEYS = 10_000;

/**
 * Events held for the operations group's owner (oldest forgotten first). NOTE: a pod that
 * does not own the partition never has its events asked for; this bounds what it holds
 * (a `message.dead_lettered` per destination and minute adds up). An owner this far
 * behind the head misses the older ones (publisher logs it).
 */
const HELD_EVENTS = 50_000;

export class StateView {
  private readonly lifecycles = new Map<string, DestinationLifecycle>();
  private readonly reports = new Map<string, Map<string, AttemptReport>>();
  private readonly events = new Map<bigint, OperationEvent>();
  private readonly outcomes = new Map<string, OperationEvent | null>();
  /** Each destination and minute's dead-letter reports, by pod, until the minute is summed up. */
  private readonly deadLetters = new Map<string, Map<string, DeadLetterReport>>();
  /** The destination-minutes already summed up (a `message.dead_lettered` event each), with their minute. */
  private readonly summed = new Map<string, number>();
  /** Events below this offset may have been dropped to bound memory. */
  private forgottenBelow = 0n;
  /** The next offset to read: every record below it is folded in. */
  private position = 0n;

  /** Folds the record at `offset` in. Records are given in offset order; a record already folded is skipped. */
  apply(offset: bigint, record: StateRecord | undefined): OperationEvent | undefined {
    if (offset < this.position) return undefined;
    this.position = offset + 1n;
    if (record === undefined) return undefined;
    if (record.kind === 'report') {
      const byInstance = this.reports.get(record.report.destination) ?? new Map<string, AttemptReport>();
      byInstance.set(record.report.instance, record.report);
      this.reports.set(record.report.destination, byInstance);
      return undefined;
    }
    if (record.kind === 'dead-letters') {
      const key = minuteKey(record.report.destination, record.report.minute);
      if (this.summed.has(key)) return undefined;
      const byInstance = this.deadLetters.get(key) ?? new Map<string, DeadLetterReport>();
      byInstance.set(record.report.instance, record.report);
      this.deadLetters.set(key, byInstance);
      return undefined;
    }
    if (record.kind === 'tombstone') {
      const [kind, destination, ...instance] = record.key.split('/');
      if (kind === 'report' && destination !== undefined) this.reports.get(destination)?.delete(instance.join('/'));
      return undefined;
    }
    const { request } = record;
    if (request.kind === 'dead_lettered') return this.sumUp(offset, record.key, request);
    const accepted = applyTransition(this.lifecycle(request.destination), request);
    if (accepted === undefined) {
      this.remember(record.key, null);
      return undefined;
    }
    this.lifecycles.set(request.destination, accepted.next);
    const event: OperationEvent = {
      id: `evt_${record.key}`,
      type: accepted.entry.type,
      destination: request.destination,
      at: new Date(request.at).toISOString(),
      state: accepted.next.state,
      ...accepted.details,
    };
    this.hold(offset, event);
    this.remember(record.key, event);
    return event;
  }

  /** Skips to `offset` (the topic's start after compaction or retention). */
  skipTo(offset: bigint): void {
    if (offset > this.position) this.position = offset;
  }

  nextOffset(): bigint {
    return this.position;
  }

  lifecycle(destination: string): DestinationLifecycle {
    return this.lifecycles.get(destination) ?? INITIAL_LIFECYCLE;
  }

  /** Destinations whose lifecycle ever changed. */
  known(): string[] {
    return [...this.lifecycles.keys()];
  }

  disabled(): Set<string> {
    return new Set([...this.lifecycles].filter(([, l]) => l.state === 'disabled').map(([id]) => id));
  }

  reportsOf(destination: string): AttemptReport[] {
    return [...(this.reports.get(destination)?.values() ?? [])];
  }

  /** The event of the transition record at `offset`; undefined when that record was none (or was ignored). */
  eventAt(offset: bigint): OperationEvent | undefined {
    return this.events.get(offset);
  }

  /** Events at offsets below this one may have been forgotten (HELD_EVENTS). */
  heldFrom(): bigint {
    return this.forgottenBelow;
  }

  private hold(offset: bigint, event: OperationEvent): void {
    this.events.set(offset, event);
    if (this.events.size <= HELD_EVENTS) return;
    const oldest = this.events.keys().next().value!;
    this.events.delete(oldest);
    this.forgottenBelow = oldest + 1n;
  }

  /** Whether the record written under `key` was read yet, and if so its event (null: ignored). */
  outcomeOf(key: string): OperationEvent | null | undefined {
    return this.outcomes.get(key);
  }

  /** Events of offsets below `offset` are no longer asked for (the operations group committed past them). */
  forgetEventsBefore(offset: bigint): void {
    for (const at of this.events.keys()) if (at < offset) this.events.delete(at);
  }

  /** The destination-minutes with dead-letter reports not yet summed up whose minute ended before `endedBeforeMs`, with their sums. */
  deadLetterMinutesDue(endedBeforeMs: number): { destination: string; minute: number; count: number; messageIds: string[] }[] {
    const due = [];
    for (const byInstance of this.deadLetters.values()) {
      const reports = [...byInstance.values()];
      const { destination, minute } = reports[0]!;
      if (minute + 60_000 > endedBeforeMs) continue;
      const messageIds = [...new Set(reports.flatMap((r) => r.sample))].slice(0, SAMPLE_SIZE);
      due.push({ destination, minute, count: reports.reduce((n, r) => n + r.count, 0), messageIds });
    }
    return due;
  }

  /** Whether the dead letters of this destination and minute were summed up. */
  summedUp(destination: string, minute: number): boolean {
    return this.summed.has(minuteKey(destination, minute));
  }

  /** The first summary of a destination-minute is its event; any later one (another pod's) is ignored. */
  private sumUp(offset: bigint, key: string, request: Extract<TransitionRequest, { kind: 'dead_lettered' }>): OperationEvent | undefined {
    const minuteId = minuteKey(request.destination, request.minute);
    if (this.summed.has(minuteId)) {
      this.remember(key, null);
      return undefined;
    }
    this.summed.set(minuteId, request.minute);
    this.deadLetters.delete(minuteId);
    // A day of summed minutes is remembered: a pod's report that late is not summed again.
    for (const [id, minute] of this.summed) if (minute < request.minute - 86_400_000) this.summed.delete(id);
    const event: OperationEvent = {
      id: `evt_${key}`,
      type: 'message.dead_lettered',
      destination: request.destination,
      at: new Date(request.at).toISOString(),
      state: this.lifecycle(request.destination).state,
      minute: new Date(request.minute).toISOString(),
      count: request.count,
      messageIds: request.messageIds,
    };
    this.hold(offset, event);
    this.remember(key, event);
    return event;
  }

  private remember(key: string, outcome: OperationEvent | null): void {
    this.outcomes.set(key, outcome);
    if (this.outcomes.size > REMEMBERED_KEYS) this.outcomes.delete(this.outcomes.keys().next().value!);
  }
}

function minuteKey(destination: string, minute: number): string {
  return `${destination}\u0000${minute}`;
}
