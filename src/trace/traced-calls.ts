// A user's calls as a trace tells them (docs/follow-a-message.md): the records of `calls`
// and `calls.invalid` read for the user, each planned again as the router plans it
// (src/router/plan-call.ts, the destinations' shaping included) with the current config, so
// that each connected destination gets the rule that filters it, or none. Pure (a JSONata
// expression the fast path cannot take makes it wait for JSONata, nothing else).
import { isPlainObject } from '../calls/index.js';
import type { ScannedRecord } from '../kafka/index.js';
import { planShapedCall } from '../router/plan-call.js';
import type { RoutingTable } from '../router/routing-table.js';
import type { Violation } from '../tracking-plans/index.js';
import type { RoutingVerdict } from './destination-state.js';
import { HEADER, headerText } from '../runtime/headers.js';

export interface TracedCall {
  /** Null only for an invalid record without a readable `messageId`. */
  messageId: string | null;
  type: string | null;
  /** A track call's event name. */
  event?: string;
  source: string | null;
  /** The `calls` (or `calls.invalid`) record's timestamp: when the call was received. */
  receivedAtMs: number;
  /** Why the call was not routed: the `error` of its `calls.invalid` record, or the router's reason under the current config. */
  invalid?: string;
  /** The call's violations of its source's tracking plan, as the plan is now; absent when it has none. */
  violations?: Violation[];
  /**
   * One per destination of the config: those connected to the call's source in the source's
   * order, then the others (`not_connected`) in the config's; none for an invalid call.
   */
  routes: { id: string; verdict: RoutingVerdict }[];
}

/** The reason of a destination the call's source does not feed. */
export const NOT_CONNECTED = 'not_connected';

/** The window of receipt times: `sinceMs <= t < untilMs`. */
export interface Window {
  sinceMs: number;
  untilMs: number;
}

export interface CallRecords {
  calls: { topic: string; records: readonly ScannedRecord[] };
  invalid: { topic: string; records: readonly ScannedRecord[] };
}

/**
 * The calls received in the window, oldest first. A `calls` record that the router sent
 * to `calls.invalid` (the same bytes and time there) is shown once, with that record's
 * error: what happened, whatever the current config says. Other `calls.invalid` records
 * (calls the gateway refused) are calls of their own.
 */
export async function tracedCalls(read: CallRecords, table: RoutingTable, window: Window, nowMs: number): Promise<TracedCall[]> {
  const inWindow = (record: ScannedRecord) => {
    const ms = Number(record.timestamp);
    return ms >= window.sinceMs && ms < window.untilMs;
  };
  const invalidRecords = read.invalid.records.filter(inWindow);
  const copied = new Set<ScannedRecord>();
  const traced: TracedCall[] = [];
  /** When each (source, messageId) was first routed in the window (docs/kafka.md#copies-of-a-call). */
  const firstRouted = new Map<string, number>();
  for (const record of read.calls.records.filter(inWindow)) {
    const copy = invalidRecords.find((r) => !copied.has(r) && r.timestamp === record.timestamp && sameBytes(r.value, record.value));
    if (copy !== undefined) {
      copied.add(copy);
      traced.push(invalidCall(copy, table));
      continue;
    }
    traced.push(await plannedCall(read.calls.topic, record, table, nowMs, firstRouted));
  }
  for (const record of invalidRecords) if (!copied.has(record)) traced.push(invalidCall(record, table));
  return traced.sort((a, b) => a.receivedAtMs - b.receivedAtMs);
}

async function plannedCall(topic: string, record: ScannedRecord, table: RoutingTable, nowMs: number, firstRouted: Map<string, number>): Promise<TracedCall> {
  const outcome = await planShapedCall({ ...record, topic, offset: record.offset.toString() }, table, () => nowMs);
  if (outcome.kind === 'invalid') return { ...describeInvalid(record, table), invalid: outcome.error };
  if (isCopy(outcome.source.id, outcome.call.messageId, outcome.receivedAtMs, table.config.router.dedupeWindowMs, firstRouted)) {
    // A copy: the router dropped it for every destination (the first copy shows what became of the call).
    const call: TracedCall = { messageId: outcome.messageId, type: outcome.type, source: outcome.source.id, receivedAtMs: outcome.receivedAtMs, routes: [...table.destinationsById.keys()].map((id) => ({ id, verdict: { routed: false, reason: DUPLICATE } })) };
    if (outcome.type === 'track' && outcome.call.event !== undefined) call.event = outcome.call.event;
    return call;
  }
  const call: TracedCall = {
    messageId: outcome.messageId,
    type: outcome.type,
    source: outcome.source.id,
    receivedAtMs: outcome.receivedAtMs,
    // NOTE: every reason the router gives flows through as it names it (docs/follow-a-message.md#states).
    routes: outcome.decisions.map((d) => ({ id: d.target.id, verdict: d.routed ? { routed: true } : filteredVerdict(d.reason, d.error) })),
  };
  const connected = new Set(call.routes.map((r) => r.id));
  for (const id of table.destinationsById.keys()) if (!connected.has(id)) call.routes.push({ id, verdict: { routed: false, reason: NOT_CONNECTED } });
  if (outcome.type === 'track' && outcome.call.event !== undefined) call.event = outcome.call.event;
  if (outcome.tracking !== undefined) call.violations = outcome.tracking.violations;
  return call;
}

/** The reason of a copy of a call routed within `router.dedupeWindow`. */
export const DUPLICATE = 'duplicate';

/** Whether a call with its own `messageId` is a copy of one routed within the window before it; else it is noted as routed. */
function isCopy(source: string, messageId: string | undefined, receivedAtMs: number, windowMs: number, firstRouted: Map<string, number>): boolean {
  if (windowMs <= 0 || messageId === undefined) return false;
  const key = `${source}\u0000${messageId}`;
  const first = firstRouted.get(key);
  if (first !== undefined && receivedAtMs - first <= windowMs) return true;
  firstRouted.set(key, receivedAtMs);
  return false;
}

function filteredVerdict(reason: string, error: string | undefined): RoutingVerdict {
  return error === undefined ? { routed: false, reason } : { routed: false, reason, error };
}

function invalidCall(record: ScannedRecord, table: RoutingTable): TracedCall {
  return { ...describeInvalid(record, table), invalid: headerText(record.headers, HEADER.error) || 'no error header (the record was written by hand?)' };
}

/** What can be read of a call that could not be routed: its own fields when it is a JSON object. */
function describeInvalid(record: ScannedRecord, table: RoutingTable): Omit<TracedCall, 'invalid'> {
  const body = parseObject(record.value);
  const text = (name: string) => (typeof body?.[name] === 'string' && body[name] !== '' ? body[name] : undefined);
  const type = text('type') ?? null;
  const sourceHeader = headerText(record.headers, HEADER.sourceId);
  const writeKey = text('writeKey');
  const source = sourceHeader || (writeKey === undefined ? undefined : table.sourcesByWriteKey.get(writeKey)?.id);
  const call: Omit<TracedCall, 'invalid'> = { messageId: text('messageId') ?? null, type, source: source ?? null, receivedAtMs: Number(record.timestamp), routes: [] };
  const event = text('event');
  if (type === 'track' && event !== undefined) call.event = event;
  return call;
}

function parseObject(value: Buffer | null): Record<string, unknown> | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    return isPlainObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function sameBytes(a: Buffer | null, b: Buffer | null): boolean {
  return a === null || b === null ? a === b : a.equals(b);
}
