/**
 * From a parsed request body to the Kafka records the gateway writes (docs/http-api.md):
 * pure, so every rule here is unit-tested without a socket or a broker.
 *
 * For each call: the request's `context` and `integrations` are merged in (the call's
 * own keys win), the path gives the type when the call lacks one, `writeKey` is
 * removed (it names the source, which travels in the `source-id` header instead),
 * the call is validated as it will be stored, its timestamp is corrected for the
 * client's clock skew, and a missing messageId is generated. A call that fails is
 * rejected on its own, with the reason, so one bad call never fails the others.
 */
import {
  MAX_CALL_BYTES,
  MAX_TIMESTAMP_MS,
  MIN_TIMESTAMP_MS,
  formatTimestamp,
  isPlainObject,
  parseTimestamp,
  routingKey,
  validateCall,
} from '../calls/index.js';
import type { InvalidReason } from '../calls/index.js';
import type { Route } from './routes.js';

/** Calls in one batch request, at most (docs/http-api.md). */
export const MAX_BATCH_CALLS = 2500;

/**
 * The most one request may write, keys and values of its records in all: 1 MiB
 * (docs/http-api.md#limits). NOTE: the request's `context` is copied into every call, so
 * without it a 500 KB body of 2,500 calls could write 2,500 × 32 KB = 80 MB.
 */
export const MAX_REQUEST_WRITE_BYTES = 1024 * 1024;

export interface IngestInput {
  route: Route;
  /** The request body, parsed once. */
  body: unknown;
  /** When the gateway received the request, by its own clock. */
  receivedAtMs: number;
  /** A fresh id for a call that has no messageId (a random UUID in production). */
  newMessageId: () => string;
}

/** A call to write to the `calls` topic. */
export interface AcceptedCall {
  /** userId, else anonymousId. */
  key: string;
  /** The call JSON as stored. */
  value: string;
}

/** A call to keep in `calls.invalid` and list in the answer. */
export interface RejectedCall {
  /** Its position in the request's `batch` (0 for a single-call route). */
  index: number;
  reason: InvalidReason;
  message: string;
  /** userId, else anonymousId, as received; null when it has neither. */
  key: string | null;
  /**
   * The call as the client sent it (re-serialized from the parsed body, so whitespace
   * may differ). Undefined when it cannot be serialized (nested too deep for
   * JSON.stringify): then the whole request body is what can be kept.
   */
  value: string | undefined;
}

export type IngestResult =
  | { ok: true; accepted: AcceptedCall[]; rejected: RejectedCall[] }
  | {
      ok: false;
      status: 400 | 413;
      code: 'invalid_request' | 'too_many_calls' | 'call_too_large' | 'write_too_large';
      message: string;
      /** The reason recorded when the whole body is kept in `calls.invalid`. */
      reason: InvalidReason;
    };

/** What a batch request shares with each of its calls. */
interface Shared {
  context: Record<string, unknown> | undefined;
  integrations: Record<string, unknown> | undefined;
  sentAtMs: number | undefined;
  sentAtText: string | undefined;
  receivedAtMs: number;
  receivedAtText: string;
  newMessageId: () => string;
}

export function ingest(input: IngestInput): IngestResult {
  const receivedAtText = formatTimestamp(input.receivedAtMs);
  return input.route.kind === 'batch' ? ingestBatch(input, receivedAtText) : ingestOne(input, receivedAtText);
}

/** A single-call route: the body is the call. */
function ingestOne(input: IngestInput, receivedAtText: string): IngestResult {
  const { route, body } = input;
  if (!isPlainObject(body)) {
    return requestError(
      400,
      'invalid_request',
      `body is ${describe(body)}, not a JSON object: send one call as an object, e.g. {"userId":"u-1","event":"Signed Up"}`,
      'not_object',
    );
  }
  const shared: Shared = {
    context: undefined,
    integrations: undefined,
    sentAtMs: undefined,
    sentAtText: undefined,
    receivedAtMs: input.receivedAtMs,
    receivedAtText,
    newMessageId: input.newMessageId,
  };
  const outcome = prepareCall(body, 0, route, shared);
  if ('reason' in outcome) {
    if (outcome.reason === 'too_large') return requestError(413, 'call_too_large', outcome.message, 'too_large');
    return { ok: true, accepted: [], rejected: [outcome] };
  }
  return { ok: true, accepted: [outcome], rejected: [] };
}

/** A `{"batch":[…]}` body: each call prepared on its own, with what the request shares. */
function ingestBatch(input: IngestInput, receivedAtText: string): IngestResult {
  const { route, body } = input;
  if (!isPlainObject(body)) {
    return requestError(
      400,
      'invalid_request',
      `body is ${describe(body)}, not a JSON object: send {"batch":[{"type":"track",...}, ...]}`,
      'not_object',
    );
  }
  // NOTE: `batch` null or absent is an empty batch (docs/http-api.md#routes): analytics-go
  // v2 sends {"batch":null,…} when it closes with nothing left to flush.
  const batch = body.batch ?? [];
  if (!Array.isArray(batch)) {
    return requestError(400, 'invalid_request', `body has "batch" as ${describe(batch)}, not a list: send {"batch":[{"type":"track",...}, ...]}`, 'bad_field');
  }
  if (batch.length > MAX_BATCH_CALLS) {
    return requestError(
      413,
      'too_many_calls',
      `batch has ${batch.length} calls, over the limit of ${MAX_BATCH_CALLS} per request: split it into smaller batches`,
      'too_large',
    );
  }
  const shared = batchShared(body, input, receivedAtText);
  if ('ok' in shared) return shared;
  const accepted: AcceptedCall[] = [];
  const rejected: RejectedCall[] = [];
  const written = new WrittenBytes();
  for (let index = 0; index < batch.length; index++) {
    const outcome = prepareCall(batch[index], index, route, shared);
    if ('reason' in outcome) rejected.push(outcome);
    else accepted.push(outcome);
    // Stops at the first call over the cap: the rest is not worth preparing.
    if (written.over(outcome, accepted, rejected)) {
      return requestError(
        413,
        'write_too_large',
        `the calls as stored come to more than ${MAX_REQUEST_WRITE_BYTES} bytes (1 MiB, the most one request may write; the request's "context" is copied into each of its ${batch.length} calls); nothing was written: send fewer calls per request, or a smaller context`,
        'too_large',
      );
    }
  }
  return { ok: true, accepted, rejected };
}

type Outcome = AcceptedCall | RejectedCall;

/**
 * The bytes a request's records take (keys and values), against MAX_REQUEST_WRITE_BYTES.
 * A UTF-16 unit is 1 to 3 UTF-8 bytes: the bytes are counted exactly only once the
 * units alone can no longer tell, which a request under about 340 KB never reaches.
 */
class WrittenBytes {
  private units = 0;
  private exact: number | undefined;

  /** Counts `outcome` (already in `accepted` or `rejected`); true once the request is over the cap. */
  over(outcome: Outcome, accepted: readonly Outcome[], rejected: readonly Outcome[]): boolean {
    if (this.exact !== undefined) {
      this.exact += recordBytes(outcome);
      return this.exact > MAX_REQUEST_WRITE_BYTES;
    }
    this.units += (outcome.key?.length ?? 0) + (outcome.value?.length ?? 0);
    if (this.units * 3 <= MAX_REQUEST_WRITE_BYTES) return false;
    if (this.units > MAX_REQUEST_WRITE_BYTES) return true;
    let exact = 0;
    for (const each of accepted) exact += recordBytes(each);
    for (const each of rejected) exact += recordBytes(each);
    this.exact = exact;
    return exact > MAX_REQUEST_WRITE_BYTES;
  }
}

/** A record's key and value in UTF-8 bytes (a rejected call that cannot be serialized: the body, kept once, is not counted). */
function recordBytes(outcome: Outcome): number {
  return (outcome.key === null ? 0 : Buffer.byteLength(outcome.key, 'utf8')) + (outcome.value === undefined ? 0 : Buffer.byteLength(outcome.value, 'utf8'));
}

/** What a batch request's `context`, `integrations` and `sentAt` give each call; or the refusal of the request. */
function batchShared(body: Record<string, unknown>, input: IngestInput, receivedAtText: string): Shared | IngestResult {
  const context = sharedObject(body, 'context');
  if (typeof context === 'string') return requestError(400, 'invalid_request', context, 'bad_field');
  const integrations = sharedObject(body, 'integrations');
  if (typeof integrations === 'string') return requestError(400, 'invalid_request', integrations, 'bad_field');
  let sentAtMs: number | undefined;
  let sentAtText: string | undefined;
  const sentAt = body.sentAt;
  if (sentAt !== undefined && sentAt !== null && sentAt !== '') {
    sentAtMs = typeof sentAt === 'string' ? parseTimestamp(sentAt) : undefined;
    if (sentAtMs === undefined) {
      return requestError(
        400,
        'invalid_request',
        `"sentAt" of the request is not an ISO 8601 date-time: got ${describe(sentAt)}; send it like "2026-05-01T12:00:00.000Z" or leave it out`,
        'bad_timestamp',
      );
    }
    sentAtText = sentAt as string;
  }
  return {
    context,
    integrations,
    sentAtMs,
    sentAtText,
    receivedAtMs: input.receivedAtMs,
    receivedAtText,
    newMessageId: input.newMessageId,
  };
}

function prepareCall(raw: unknown, index: number, route: Route, shared: Shared): AcceptedCall | RejectedCall {
  if (!isPlainObject(raw)) {
    return reject(
      raw,
      index,
      'not_object',
      `call is ${describe(raw)}, not a JSON object: send each call as an object such as {"type":"track",...}`,
    );
  }
  // NOTE: object rest copies own keys with define semantics, so an own "__proto__"
  // key of the parsed call stays a plain key of the copy, as JSON.parse made it.
  const { writeKey: _writeKey, ...out } = raw;
  if (route.kind !== 'batch' && (out.type === undefined || out.type === null)) out.type = route.kind;
  if (shared.context !== undefined) out.context = merged(shared.context, out.context);
  if (shared.integrations !== undefined) out.integrations = merged(shared.integrations, out.integrations);

  // Validated as it will be stored (merged objects included), so whatever the gateway
  // accepts, the router accepts.
  const checked = validateCall(out);
  if (!checked.ok) return reject(raw, index, checked.reason, checked.error);
  const call = checked.call;

  const sentAtMs = shared.sentAtMs ?? call.sentAtMs;
  let timestampMs = shared.receivedAtMs;
  if (call.timestampMs !== undefined) {
    // Segment's clock-skew correction: the client's clock is off by (sentAt − receivedAt),
    // so the call happened (sentAt − timestamp) before the gateway received it.
    timestampMs = sentAtMs === undefined ? call.timestampMs : shared.receivedAtMs - (sentAtMs - call.timestampMs);
    if (timestampMs < MIN_TIMESTAMP_MS || timestampMs > MAX_TIMESTAMP_MS) {
      return reject(
        raw,
        index,
        'bad_timestamp',
        `${call.type} call "timestamp" and "sentAt" are so far apart that the corrected time falls outside the years 0001–9999: check the clock of the client that sets them`,
      );
    }
  }
  out.timestamp = formatTimestamp(timestampMs);
  if (call.messageId === undefined || call.messageId === '') out.messageId = shared.newMessageId();
  out.receivedAt = shared.receivedAtText;
  if (call.sentAtMs === undefined && shared.sentAtText !== undefined) out.sentAt = shared.sentAtText;

  const value = JSON.stringify(out);
  // A UTF-16 unit is at most 3 UTF-8 bytes: most calls skip the byte count.
  if (value.length * 3 > MAX_CALL_BYTES) {
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes > MAX_CALL_BYTES) {
      return reject(
        raw,
        index,
        'too_large',
        `${call.type} call is ${bytes} bytes as stored (with the request's context and the gateway's messageId and timestamps), over the ${MAX_CALL_BYTES}-byte limit: send less data in properties, traits or context`,
      );
    }
  }
  return { key: routingKey(call), value };
}

/** The request-level object merged under the call's own: the call's keys win. */
function merged(shared: Record<string, unknown>, own: unknown): unknown {
  if (own === undefined || own === null) return shared;
  // A call's own value of the wrong type is left for validation to report.
  return isPlainObject(own) ? { ...shared, ...own } : own;
}

/** A request-level `context` or `integrations`: the object, undefined when absent, or an error message. */
function sharedObject(body: Record<string, unknown>, field: 'context' | 'integrations'): Record<string, unknown> | undefined | string {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (isPlainObject(value)) return value;
  return `"${field}" of the request is ${describe(value)}, not an object: send it as an object (it is merged into every call) or leave it out`;
}

function reject(raw: unknown, index: number, reason: InvalidReason, message: string): RejectedCall {
  return { index, reason, message, key: keyAsReceived(raw), value: serialize(raw) };
}

function serialize(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    // Only a RangeError is possible for a parsed value: nested deeper than the stack.
    return undefined;
  }
}

function keyAsReceived(raw: unknown): string | null {
  if (!isPlainObject(raw)) return null;
  return idText(raw.userId) ?? idText(raw.anonymousId) ?? null;
}

function idText(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function requestError(
  status: 400 | 413,
  code: 'invalid_request' | 'too_many_calls' | 'call_too_large' | 'write_too_large',
  message: string,
  reason: InvalidReason,
): IngestResult {
  return { ok: false, status, code, message, reason };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  switch (typeof value) {
    case 'string':
      return `a string (${JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)})`;
    case 'number':
    case 'boolean':
      return `${typeof value === 'number' ? 'a number' : 'a boolean'} (${String(value)})`;
    case 'object':
      return 'an object';
    default:
      return typeof value;
  }
}
