// A destination's life (docs/webhooks.md#automatic-disabling): active, failing, disabled.
// Every change is a *transition record* in the compacted topic `destinations.state`
// (docs/kafka.md#destination-state), written by whoever decides it (a deliverer pod, the
// CLI, the admin API), each under a key of its own. Every process folds the same records
// in the same (log) order with `applyTransition`, so every process holds the same state;
// a record that does not fit the state it meets (a second pod saying `failing` again, an
// automatic disable after a recovery) is ignored by everyone alike. That is what makes
// each transition, and so each operational event, happen once whatever the number of
// writers. Pure.

export type LifecycleState = 'active' | 'failing' | 'disabled';

export const LIFECYCLE_STATES: readonly LifecycleState[] = ['active', 'failing', 'disabled'];

/** What a writer asks for. `at` is epoch ms by the writer's clock. */
export type TransitionRequest =
  /** No attempt succeeded since `noSuccessSince`: half of `after` gone (`share` 0.5), then 90 % (0.9). */
  | { kind: 'failing'; destination: string; at: number; noSuccessSince: number; share: number; attempts: number }
  /** An attempt succeeded while failing. */
  | { kind: 'recovered'; destination: string; at: number; succeededAt: number }
  /** By a person (`automatic: false`), or by Switchyard after `autoDisable.after` (only while failing). */
  | { kind: 'disable'; destination: string; at: number; by: string; reason: string; automatic: boolean }
  | { kind: 'enable'; destination: string; at: number; by: string; reason?: string }
  /**
   * The dead letters of one destination and minute, summed over every pod's reports
   * (state-view.ts accepts the first for a minute; the lifecycle does not change).
   */
  | { kind: 'dead_lettered'; destination: string; at: number; minute: number; count: number; messageIds: string[] };

export type OperationType = 'destination.failing' | 'destination.disabled' | 'destination.enabled' | 'destination.recovered' | 'message.dead_lettered';

/** One accepted transition as the history keeps it. */
export interface HistoryEntry {
  type: OperationType;
  at: number;
  by?: string;
  reason?: string;
}

export interface DestinationLifecycle {
  state: LifecycleState;
  /** When it entered `state` (0: never changed). */
  since: number;
  /** While failing: since when no attempt succeeded. */
  failingSince?: number;
  /** While failing: the share of `after` already announced (0.5, then 0.9). */
  announcedShare?: number;
  /** While disabled: who disabled it (`switchyard` when automatic) and why. */
  by?: string;
  reason?: string;
  /**
   * The last time it was enabled again, and how long it had been disabled: its retry
   * window is that much longer for a while (retryWindowExtension), so that nothing is
   * dead-lettered because of the time spent disabled.
   */
  resumed?: { at: number; disabledMs: number };
  /** The clock of automatic disabling starts again here (the last enable or recovery). */
  resetAt: number;
  /** The last transitions, oldest first. */
  history: HistoryEntry[];
}

/** Transitions kept in a destination's history (the console and GET /v1/destinations show them). */
export const HISTORY_LENGTH = 20;

/** Who an automatic disable names. */
export const AUTOMATIC_ACTOR = 'switchyard';

export const INITIAL_LIFECYCLE: DestinationLifecycle = { state: 'active', since: 0, resetAt: 0, history: [] };

/** The operational event of an accepted transition (its `at` and fields; the envelope is operation-events.ts's). */
export interface AcceptedTransition {
  next: DestinationLifecycle;
  entry: HistoryEntry;
  /** The event's own fields besides type, destination and at. */
  details: Record<string, unknown>;
}

/**
 * The state after `request` met `current`, with what happened; undefined when the request
 * does not apply (it is ignored, and no event is written).
 */
export function applyTransition(current: DestinationLifecycle, request: TransitionRequest): AcceptedTransition | undefined {
  switch (request.kind) {
    case 'dead_lettered':
      return undefined;
    case 'failing': {
      // NOTE: only forward: active → failing, or a larger share while failing. A pod late
      // to see a disable or a recovery says `failing` into a state it no longer fits.
      if (current.state === 'active') {
        const entry: HistoryEntry = { type: 'destination.failing', at: request.at, reason: failingReason(request) };
        const next = { ...base(current, entry), state: 'failing' as const, since: request.at, failingSince: request.noSuccessSince, announcedShare: request.share };
        return { next, entry, details: failingDetails(request) };
      }
      if (current.state === 'failing' && request.share > (current.announcedShare ?? 0)) {
        const entry: HistoryEntry = { type: 'destination.failing', at: request.at, reason: failingReason(request) };
        return { next: { ...base(current, entry), announcedShare: request.share }, entry, details: failingDetails({ ...request, noSuccessSince: current.failingSince ?? request.noSuccessSince }) };
      }
      return undefined;
    }
    case 'recovered': {
      if (current.state !== 'failing') return undefined;
      const entry: HistoryEntry = { type: 'destination.recovered', at: request.at };
      const next: DestinationLifecycle = { ...withoutFailing(base(current, entry)), state: 'active', since: request.at, resetAt: request.at };
      return { next, entry, details: { failingSince: iso(current.failingSince ?? current.since), succeededAt: iso(request.succeededAt) } };
    }
    case 'disable': {
      // An automatic disable only ends a failure still going on: a recovery or a person came first.
      if (current.state === 'disabled' || (request.automatic && current.state !== 'failing')) return undefined;
      const entry: HistoryEntry = { type: 'destination.disabled', at: request.at, by: request.by, reason: request.reason };
      const next: DestinationLifecycle = { ...withoutFailing(base(current, entry)), state: 'disabled', since: request.at, by: request.by, reason: request.reason };
      const details: Record<string, unknown> = { by: request.by, reason: request.reason, automatic: request.automatic };
      if (current.failingSince !== undefined) details.failingSince = iso(current.failingSince);
      return { next, entry, details };
    }
    case 'enable': {
      if (current.state !== 'disabled') return undefined;
      const entry: HistoryEntry = { type: 'destination.enabled', at: request.at, by: request.by, ...(request.reason === undefined ? {} : { reason: request.reason }) };
      const disabledMs = Math.max(0, request.at - current.since);
      const { by: _by, reason: _reason, ...rest } = base(current, entry);
      const next: DestinationLifecycle = { ...rest, state: 'active', since: request.at, resetAt: request.at, resumed: { at: request.at, disabledMs } };
      const details: Record<string, unknown> = { by: request.by, disabledSince: iso(current.since), disabledSeconds: Math.round(disabledMs / 1000) };
      if (request.reason !== undefined) details.reason = request.reason;
      return { next, entry, details };
    }
  }
}

/**
 * How much longer than its policy the retry window of a destination enabled again is:
 * the time it spent disabled, for one window after it was enabled (by then every event
 * that was waiting across the disable has had its whole window of attempts). 0 otherwise.
 * docs/webhooks.md#automatic-disabling says how the window counts.
 */
export function retryWindowExtension(lifecycle: DestinationLifecycle | undefined, windowMs: number, nowMs: number): { extraMs: number; untilMs: number } | undefined {
  const resumed = lifecycle?.resumed;
  if (resumed === undefined || lifecycle?.state === 'disabled' || resumed.disabledMs === 0) return undefined;
  const untilMs = resumed.at + windowMs + resumed.disabledMs;
  return nowMs < untilMs ? { extraMs: resumed.disabledMs, untilMs } : undefined;
}

function base(current: DestinationLifecycle, entry: HistoryEntry): DestinationLifecycle {
  return { ...current, history: [...current.history, entry].slice(-HISTORY_LENGTH) };
}

function withoutFailing(lifecycle: DestinationLifecycle): DestinationLifecycle {
  const { failingSince: _since, announcedShare: _share, ...rest } = lifecycle;
  return rest;
}

function failingReason(request: Extract<TransitionRequest, { kind: 'failing' }>): string {
  return `no successful attempt since ${iso(request.noSuccessSince)} (${request.attempts} attempts): ${Math.round(request.share * 100)} % of autoDisable.after`;
}

function failingDetails(request: Extract<TransitionRequest, { kind: 'failing' }>): Record<string, unknown> {
  return { noSuccessSince: iso(request.noSuccessSince), share: request.share, attempts: request.attempts };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** A transition request read back from its record, or undefined when the value is not one (written by something else). */
export function parseTransitionRequest(value: unknown): TransitionRequest | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  const text = (v: unknown): v is string => typeof v === 'string' && v !== '';
  const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
  if (!text(r.destination) || !num(r.at)) return undefined;
  const { destination, at } = r;
  switch (r.kind) {
    case 'failing':
      return num(r.noSuccessSince) && num(r.share) && num(r.attempts) ? { kind: 'failing', destination, at, noSuccessSince: r.noSuccessSince, share: r.share, attempts: r.attempts } : undefined;
    case 'recovered':
      return num(r.succeededAt) ? { kind: 'recovered', destination, at, succeededAt: r.succeededAt } : undefined;
    case 'disable':
      return text(r.by) && typeof r.reason === 'string' && typeof r.automatic === 'boolean' ? { kind: 'disable', destination, at, by: r.by, reason: r.reason, automatic: r.automatic } : undefined;
    case 'dead_lettered':
      return num(r.minute) && num(r.count) && Array.isArray(r.messageIds) && r.messageIds.every((id) => typeof id === 'string')
        ? { kind: 'dead_lettered', destination, at, minute: r.minute, count: r.count, messageIds: r.messageIds as string[] }
        : undefined;
    case 'enable':
      if (!text(r.by)) return undefined;
      return typeof r.reason === 'string' ? { kind: 'enable', destination, at, by: r.by, reason: r.reason } : { kind: 'enable', destination, at, by: r.by };
    default:
      return undefined;
  }
}
