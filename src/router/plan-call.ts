// One record of `<prefix>calls` → what the router writes for it: the rendered body
// and the destinations it goes to, or the reason it goes to `calls.invalid`; the
// source's tracking plan (its violations, and whether it omits or blocks); then each
// destination's shaping (filter, sample, property lists, transform). Pure: no Kafka,
// no metrics, no clock beyond the `nowMs` it is given.
import { CALL_TYPES, bodyObject, parseCallBytes, renderBody, routingKey, withMessageId } from '../calls/index.js';
import type { Call, CallType } from '../calls/index.js';
import type { RecordHeaders } from '../kafka/index.js';
import { ShapingInput, shape } from '../shaping/index.js';
import type { Shaped, Shaping } from '../shaping/index.js';
import { applyPlan } from '../tracking-plans/index.js';
import type { PlanVerdict } from '../tracking-plans/index.js';
import { internalError, invalid } from './invalid-records.js';
import type { InboundRecord, InvalidOutcome } from './invalid-records.js';
import { recordMessageId, recordTimestampMs } from './record-ids.js';
import { decideRoutes, trackFilterAllows } from './routing-rules.js';
import type { RouteDecision } from './routing-rules.js';
import type { RouteTarget, RoutingSource, RoutingTable } from './routing-table.js';
import { HEADER, freshDeliveryHeaders, headerText, headerValue } from '../runtime/headers.js';

export interface RoutedCall {
  kind: 'routed';
  source: RoutingSource;
  type: CallType;
  /** The call's own messageId, or the one derived from the record. */
  messageId: string;
  /**
   * One per destination connected to the source; `routed: false` ones say why not.
   * After `shapeRoutes`, the destinations' shaping is in them too.
   */
  decisions: RouteDecision[];
  /** The Kafka key of the deliveries: userId, else anonymousId. */
  key: Buffer;
  /**
   * The webhook body, rendered once for every destination that gets it as it is; null
   * when none does (all filtered, or each makes its own bytes: `decision.body`).
   */
  body: Buffer | null;
  /** Delivery headers, one object shared by every destination's record. */
  headers: RecordHeaders;
  /**
   * The Kafka timestamp of the delivery records (epoch ms): the receipt time when it
   * is recent, so the deliverer reads it from there; else now, with the receipt time
   * in a `received-at` header (see {@link receiptTimeCarrier}).
   */
  timestamp: string;
  /**
   * The parsed call, when it was received and where it was read: what audiences record of
   * it (src/audiences/router-hook.ts). Under a tracking plan in `omit` mode, without what
   * violated the plan.
   */
  call: Call;
  /**
   * When the call violates its source's tracking plan: the violations, and whether the
   * plan blocked it (then every destination it would have reached says `tracking_plan`).
   */
  tracking?: PlanVerdict;
  receivedAtMs: number;
  origin: { partition: number; offset: string };
}

export type CallOutcome = RoutedCall | InvalidOutcome;

const MAX_LISTED_SOURCES = 10;

/** The `type` header of each call type, made once (the router's hot path). */
const TYPE_HEADERS: Readonly<Record<CallType, Buffer>> = Object.fromEntries(
  CALL_TYPES.map((type) => [type, Buffer.from(type, 'latin1')]),
) as Record<CallType, Buffer>;

/** How far in the past a receipt time may be to serve as the delivery records' timestamp. */
export const RECEIPT_TIMESTAMP_MAX_AGE_MS = 60 * 60_000;
/** How far in the future (clock skew between hosts) it may be. */
export const RECEIPT_TIMESTAMP_MAX_AHEAD_MS = 60_000;

/**
 * Where the delivery records carry the call's receipt time (read by the deliverer for
 * `switchyard_end_to_end_seconds`): the record's Kafka timestamp, or else an internal
 * `received-at` header on records stamped now.
 *
 * NOTE: the timestamp when it can, because headers are dear: each is encoded again in
 * every record (with the earlier client, kafkajs, in a zeroed 512-byte buffer each), and
 * the router writes three or more records per call (docs/benchmarks.md#figures-behind-the-code). Only a
 * recent receipt time, though: the record timestamp also drives time-based retention,
 * so one far in the past (a backlog, a producer that sets old CreateTimes) could let
 * the broker delete an undelivered record early, and one far in the future can be
 * refused (`message.timestamp.after.max.ms`). Those records are stamped now.
 */
export function receiptTimeCarrier(receivedAtMs: number, nowMs: number): 'timestamp' | 'header' {
  return receivedAtMs >= nowMs - RECEIPT_TIMESTAMP_MAX_AGE_MS && receivedAtMs <= nowMs + RECEIPT_TIMESTAMP_MAX_AHEAD_MS ? 'timestamp' : 'header';
}

/** How a record is read besides its call: a blocked call replayed keeps the messageId the router gave it. */
export interface PlanOptions {
  /**
   * Take a call without its own `messageId` from the record's `message-id` header (the
   * records of `calls.blocked` carry the id the router derived when it blocked them),
   * instead of deriving one from the record's coordinates.
   */
  messageIdHeader?: boolean;
}

export function planCall(record: InboundRecord, table: RoutingTable, nowMs: () => number = Date.now, options: PlanOptions = {}): CallOutcome {
  try {
    return plan(record, table, nowMs, options);
  } catch (error) {
    return internalError('call', error);
  }
}

function plan(record: InboundRecord, table: RoutingTable, nowMs: () => number, options: PlanOptions): CallOutcome {
  const parsed = parseCallBytes(record.value);
  if (!parsed.ok) return invalid(parsed.reason, parsed.error);
  let call = parsed.call;

  const source = resolveSource(record, call, table);
  if (source.kind === 'invalid') return source;

  const now = nowMs();
  const receivedAtMs = recordTimestampMs(record.timestamp, now);
  const messageId =
    call.messageId ??
    (options.messageIdHeader === true ? nonEmpty(headerText(record.headers, HEADER.messageId)) : undefined) ??
    recordMessageId(record.topic, record.partition, record.offset, record.timestamp);
  const tracking = checkPlan(source.source, call);
  if (tracking !== undefined) call = tracking.call;
  const decisions = decideRoutes(call, source.source);
  if (tracking?.blocked === true) blockRoutes(decisions);
  // A call that every destination filters out is counted, never rendered; nor is it
  // when each destination that gets it makes its own bytes.
  const shared = decisions.some((d) => d.routed && d.target.shaping?.reshapes !== true);
  const body = shared ? Buffer.from(renderBody(withMessageId(call, messageId), receivedAtMs), 'utf8') : null;

  let timestamp = String(receivedAtMs);
  let receivedAt: Buffer | undefined;
  if (receiptTimeCarrier(receivedAtMs, now) === 'header') {
    receivedAt = Buffer.from(timestamp, 'latin1');
    timestamp = String(now);
  }
  // Buffers, not strings: the same headers object goes out once per destination, and
  // the port would turn a string value into bytes again for each.
  const headers = freshDeliveryHeaders({
    sourceId: source.source.idHeader,
    messageId: Buffer.from(messageId, 'utf8'),
    receivedAt,
    traceparent: headerValue(record.headers, HEADER.traceparent),
    type: decisions.some((d) => d.routed && d.target.kafka === true) ? TYPE_HEADERS[call.type] : undefined,
  });

  const routed: RoutedCall = {
    kind: 'routed',
    source: source.source,
    type: call.type,
    messageId,
    decisions,
    key: Buffer.from(routingKey(call), 'utf8'),
    body,
    headers,
    timestamp,
    call,
    receivedAtMs,
    origin: { partition: record.partition, offset: record.offset },
  };
  if (tracking !== undefined) routed.tracking = tracking;
  return routed;
}

/**
 * The source's tracking plan applied to the call (docs/tracking-plans.md#modes); undefined
 * when the source has none, the call violates nothing, or the source's track filter drops
 * the call anyway (it goes nowhere, so there is nothing to check or block).
 */
function checkPlan(source: RoutingSource, call: Call): PlanVerdict | undefined {
  if (source.trackingPlan === undefined || !trackFilterAllows(source.trackFilter, call)) return undefined;
  return applyPlan(source.trackingPlan, call);
}

/** A blocked call reaches no destination: those the rules let through say `tracking_plan`. */
function blockRoutes(decisions: RouteDecision[]): void {
  for (let i = 0; i < decisions.length; i++) {
    const decision = decisions[i]!;
    if (decision.routed) decisions[i] = { target: decision.target, routed: false, reason: 'tracking_plan' };
  }
}

function nonEmpty(text: string | undefined): string | undefined {
  return text === '' ? undefined : text;
}

/**
 * `planCall`, then the shaping of each routed destination (`shapeRoutes`): the
 * decisions exactly as the router writes them (the trace's view of a call, too).
 * Synchronous unless an expression needs JSONata's own evaluation.
 */
export function planShapedCall(record: InboundRecord, table: RoutingTable, nowMs: () => number = Date.now, options: PlanOptions = {}): CallOutcome | Promise<CallOutcome> {
  const outcome = planCall(record, table, nowMs, options);
  if (outcome.kind !== 'routed') return outcome;
  const pending = shapeRoutes(outcome);
  return pending === undefined ? outcome : pending.then(() => outcome);
}

/**
 * Applies each routed destination's shaping (docs/webhooks.md#shaping) to its decision,
 * in place: filtered and sampled-out ones become `routed: false` (`destination_filter`,
 * `sample`), a failed expression `transform_error` with its error, and a reshaped one
 * carries its own `body`. The body object is made once and shared; the sample point
 * likewise. Returns a promise only when some expression needs JSONata's own
 * (asynchronous) evaluation: destinations without shaping cost nothing here.
 */
export function shapeRoutes(routed: RoutedCall): Promise<void> | undefined {
  const { decisions } = routed;
  let input: ShapingInput | undefined;
  let pending: Promise<void>[] | undefined;
  for (let i = 0; i < decisions.length; i++) {
    const decision = decisions[i]!;
    const shaping = decision.target.shaping;
    if (!decision.routed || shaping === undefined) continue;
    input ??= new ShapingInput(() => bodyObject(withMessageId(routed.call, routed.messageId), routed.receivedAtMs), routed.messageId);
    const shaped = shapeSafely(shaping, input);
    if (shaped instanceof Promise) {
      (pending ??= []).push(
        shaped.then((s) => {
          decisions[i] = shapedDecision(decision.target, s);
        }),
      );
    } else {
      decisions[i] = shapedDecision(decision.target, shaped);
    }
  }
  return pending === undefined ? undefined : Promise.all(pending).then(() => undefined);
}

function shapedDecision(target: RouteTarget, shaped: Shaped): RouteDecision {
  switch (shaped.kind) {
    case 'send':
      return shaped.body === undefined ? { target, routed: true } : { target, routed: true, body: shaped.body };
    case 'filtered':
      return { target, routed: false, reason: shaped.reason };
    case 'failed':
      return { target, routed: false, reason: 'transform_error', error: `${shaped.stage} failed: ${shaped.error}` };
  }
}

/** A bug in shaping fails that destination's event, not the call (nor the batch). */
function shapeSafely(shaping: Shaping, input: ShapingInput): Shaped | Promise<Shaped> {
  const failed = (error: unknown): Shaped => ({
    kind: 'failed',
    stage: 'transform',
    error: `the router failed while shaping this event (${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}); report it`,
  });
  try {
    const shaped = shape(shaping, input);
    return shaped instanceof Promise ? shaped.catch(failed) : shaped;
  } catch (error) {
    return failed(error);
  }
}

/**
 * The (source, messageId) a copy of the call would share (docs/kafka.md#copies-of-a-call):
 * undefined for a record that is not a valid call, has no source, or has no `messageId`
 * of its own (the one derived from the record is different for every copy).
 */
export function callIdentity(record: InboundRecord, table: RoutingTable): { source: string; messageId: string } | undefined {
  const parsed = parseCallBytes(record.value);
  if (!parsed.ok || parsed.call.messageId === undefined) return undefined;
  const source = resolveSource(record, parsed.call, table);
  return source.kind === 'source' ? { source: source.source.id, messageId: parsed.call.messageId } : undefined;
}

/**
 * docs/kafka.md: the `source-id` header, else the call's `writeKey` looked up in config.
 * An empty header counts as absent.
 */
function resolveSource(
  record: InboundRecord,
  call: Call,
  table: RoutingTable,
): { kind: 'source'; source: RoutingSource } | InvalidOutcome {
  const sourceId = headerText(record.headers, HEADER.sourceId);
  if (sourceId !== undefined && sourceId !== '') {
    const source = table.sourcesById.get(sourceId);
    if (source) return { kind: 'source', source };
    return invalid(
      'unknown_source',
      `unknown source ${quote(sourceId)}: no source has this id (from the Kafka header "source-id"); fix the producer's header or add the source to the config (${knownSources(table)})`,
    );
  }
  if (call.writeKey !== undefined && call.writeKey !== '') {
    const source = table.sourcesByWriteKey.get(call.writeKey);
    if (source) return { kind: 'source', source };
    // NOTE: the key is not repeated here: it may be another environment's secret.
    return invalid(
      'unknown_source',
      `unknown write key: no source has the call's "writeKey" (not shown, it is a secret); check the producer's write key against sources[].writeKey, or set the Kafka header "source-id"`,
    );
  }
  return invalid(
    'missing_source',
    'call has no source: set the Kafka header "source-id" to a source id, or the call\'s "writeKey" to a source\'s write key',
  );
}

function knownSources(table: RoutingTable): string {
  if (table.sources.length === 0) return 'no sources are configured';
  const ids = table.sources.slice(0, MAX_LISTED_SOURCES).map((s) => JSON.stringify(s.id));
  const more = table.sources.length > MAX_LISTED_SOURCES ? `, … (${table.sources.length} in all)` : '';
  return `known source ids: ${ids.join(', ')}${more}`;
}

/** A JSON-quoted string cut to 64 characters, so an error never carries a payload. */
export function quote(text: string): string {
  return text.length > 64 ? `${JSON.stringify(text.slice(0, 64))}…` : JSON.stringify(text);
}
