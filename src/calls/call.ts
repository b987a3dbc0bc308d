/**
 * The call model: Segment-spec calls (identify, track, page, screen, group, alias),
 * parsed once and validated by hand.
 *
 * NOTE: hand-written rather than zod. Speed is not the reason: on a typical track call
 * both take a fraction of what JSON.parse does (docs/benchmarks.md#figures-behind-the-code). The
 * reasons are the messages (each names the field, what was wrong and what to send),
 * the Segment-compatible leniencies (null means absent, numeric ids become strings)
 * and that nothing is copied: free-form objects (traits, properties, context,
 * integrations) stay exactly as JSON.parse produced them, own `__proto__` keys
 * included, so a rendered body equals what a receiver gets from JSON.parse +
 * JSON.stringify.
 *
 * NOTE: the client library applies the same rules to the calls it sends, with its own
 * copy of validateCall and the timestamps (packages/client/src/call-model.ts), so that
 * it builds alone; test/unit/client/call-model-agreement.test.ts keeps the two equal.
 */
import { isUtf8 } from 'node:buffer';
import { parseTimestamp } from './timestamp.js';

export const CALL_TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'] as const;
export type CallType = (typeof CALL_TYPES)[number];

/** A validated call. Scalar fields are checked and normalized; objects are the parsed ones, untouched. */
export interface Call {
  type: CallType;
  /** Non-empty; a numeric userId is accepted and kept as its string form, as Segment's API does. */
  userId?: string;
  /** Non-empty; numeric accepted as its string form. */
  anonymousId?: string;
  /** Non-empty when present. The gateway fills a missing one; see `withMessageId`. */
  messageId?: string;
  /** Parsed from `timestamp` when present. */
  timestampMs?: number;
  event?: string;
  name?: string;
  category?: string;
  groupId?: string;
  previousId?: string;
  traits?: Record<string, unknown>;
  properties?: Record<string, unknown>;
  context?: Record<string, unknown>;
  integrations?: Record<string, unknown>;
  writeKey?: string;
  /** Parsed from `sentAt` when present. */
  sentAtMs?: number;
  /** The parsed object as received, extra keys included. Never modified here. */
  raw: Record<string, unknown>;
}

/** A call that can be rendered: it has a messageId (the call's own, or one filled in). */
export type CallWithMessageId = Call & { messageId: string };

export type InvalidReason =
  | 'too_large'
  | 'malformed_json'
  | 'not_object'
  | 'unknown_type'
  | 'missing_identity'
  | 'missing_event'
  | 'missing_field'
  | 'bad_timestamp'
  | 'bad_field';

export type ParseResult =
  | { ok: true; call: Call }
  | { ok: false; reason: InvalidReason; error: string };

/** A refusal, as each step of the validation returns it. */
type Invalid = Extract<ParseResult, { ok: false }>;

/** The seed's per-call limit (32 KB), in bytes of the serialized call. */
export const MAX_CALL_BYTES = 32 * 1024;

/**
 * How deeply objects and arrays may nest, the call object itself being level 1.
 * NOTE: JSON.parse takes any depth, but JSON.stringify recurses and throws past a few
 * thousand levels (fewer with a deep stack), and a 32 KB call can nest 16 000 deep.
 * A call that could not be rendered would crash the router, so it is refused here.
 */
export const MAX_NESTING_DEPTH = 256;

const TYPE_LIST = CALL_TYPES.join(', ');
const QUOTE_LIMIT = 64;

/**
 * Parses and validates one call from raw bytes (a Kafka message value): size first,
 * then UTF-8, then JSON.parse (once), then {@link validateCall}'s rules.
 * `null` (a Kafka tombstone) is malformed. A leading UTF-8 byte order mark is ignored.
 */
export function parseCallBytes(bytes: Buffer | null): ParseResult {
  if (bytes === null || bytes.length === 0) {
    return invalid('malformed_json', 'call is empty: send the call as one JSON object');
  }
  if (bytes.length > MAX_CALL_BYTES) {
    return invalid(
      'too_large',
      `call is ${bytes.length} bytes, over the ${MAX_CALL_BYTES}-byte limit: send less data in properties, traits or context`,
    );
  }
  // NOTE: Buffer#toString would turn invalid UTF-8 into U+FFFD silently, so check
  // first; isUtf8 is native and cheap (docs/benchmarks.md#figures-behind-the-code).
  if (!isUtf8(bytes)) {
    return invalid('malformed_json', 'call is not valid UTF-8: encode the call JSON as UTF-8');
  }
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8', start));
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    return invalid('malformed_json', `call is not valid JSON (${detail}): send the call as one JSON object`);
  }
  return validate(value, mayNestTooDeeply(bytes));
}

/**
 * Validates an already-parsed call (the gateway parses a whole batch once).
 * Rules: an object; `type` one of the six; a userId or anonymousId; track: `event`;
 * alias: `previousId` and `userId`; group: `groupId`; known fields of the right type
 * (`null` counts as absent; so does an empty string for ids, messageId, timestamp and sentAt);
 * `timestamp`/`sentAt` parseable ISO 8601; nesting within {@link MAX_NESTING_DEPTH}.
 * Extra keys are tolerated and kept in `raw`.
 */
export function validateCall(value: unknown): ParseResult {
  return validate(value, true);
}

/** The call with `messageId` set: itself when it has one, else a shallow copy (raw untouched). */
export function withMessageId(call: Call, messageId: string): CallWithMessageId {
  if (call.messageId !== undefined) return call as CallWithMessageId;
  if (messageId === '') throw new TypeError('withMessageId: messageId must be a non-empty string');
  return { ...call, messageId };
}

function validate(value: unknown, checkDepth: boolean): ParseResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalid(
      'not_object',
      `call is ${describe(value)}, not a JSON object: send each call as an object such as {"type":"track",...}`,
    );
  }
  const raw = value as Record<string, unknown>;
  const type = raw.type;
  if (!isCallType(type)) return invalidType(type);
  const where = `${type} call`;
  const call = readFields(raw, type, where);
  if ('ok' in call) return call;
  const missing = missingField(call, where);
  if (missing !== undefined) return missing;
  const tooDeep = checkDepth ? nestingError(raw, where) : undefined;
  return tooDeep ?? { ok: true, call };
}

/** Each known field read and checked for its type, in this order; the first one wrong is the error. */
function readFields(raw: Record<string, unknown>, type: CallType, where: string): Call | Invalid {
  const userId = id(raw.userId);
  if (userId === BAD) return badField(where, 'userId', raw.userId, 'a string', "set userId to the user's id");
  const anonymousId = id(raw.anonymousId);
  if (anonymousId === BAD) {
    return badField(where, 'anonymousId', raw.anonymousId, 'a string', 'set anonymousId to the anonymous visitor id');
  }
  const messageId = nonEmptyString(raw.messageId);
  if (messageId === BAD) {
    return badField(where, 'messageId', raw.messageId, 'a string', 'set messageId to a unique id or leave it out');
  }

  const timestampMs = optionalTimestamp(raw.timestamp);
  if (timestampMs === BAD) return badTimestamp(where, 'timestamp', raw.timestamp);
  const sentAtMs = optionalTimestamp(raw.sentAt);
  if (sentAtMs === BAD) return badTimestamp(where, 'sentAt', raw.sentAt);

  const event = optionalString(raw.event);
  if (event === BAD) return badField(where, 'event', raw.event, 'a string', 'set event to the event name');
  const name = optionalString(raw.name);
  if (name === BAD) return badField(where, 'name', raw.name, 'a string', 'set name to the page or screen name');
  const category = optionalString(raw.category);
  if (category === BAD) return badField(where, 'category', raw.category, 'a string', 'set category to the page category');
  const writeKey = optionalString(raw.writeKey);
  if (writeKey === BAD) return badField(where, 'writeKey', raw.writeKey, 'a string', "set writeKey to the source's write key");
  const groupId = id(raw.groupId);
  if (groupId === BAD) return badField(where, 'groupId', raw.groupId, 'a string', "set groupId to the group's id");
  const previousId = id(raw.previousId);
  if (previousId === BAD) {
    return badField(where, 'previousId', raw.previousId, 'a string', 'set previousId to the id the user had before');
  }

  const traits = optionalObject(raw.traits);
  if (traits === BAD) return badField(where, 'traits', raw.traits, 'an object', 'send traits as an object of key/values');
  const properties = optionalObject(raw.properties);
  if (properties === BAD) {
    return badField(where, 'properties', raw.properties, 'an object', 'send properties as an object of key/values');
  }
  const context = optionalObject(raw.context);
  if (context === BAD) return badField(where, 'context', raw.context, 'an object', 'send context as an object');
  const integrations = optionalObject(raw.integrations);
  if (integrations === BAD) {
    return badField(where, 'integrations', raw.integrations, 'an object', 'send integrations as an object such as {"All":true}');
  }

  // NOTE: every key is always set (some to undefined) so that all calls share one
  // object shape, which keeps property access on the hot path monomorphic.
  return {
    type,
    userId,
    anonymousId,
    messageId,
    timestampMs,
    event,
    name,
    category,
    groupId,
    previousId,
    traits,
    properties,
    context,
    integrations,
    writeKey,
    sentAtMs,
    raw,
  };
}

/**
 * The fields the call's type needs, and an identity. Type-specific requirements come
 * before the generic identity rule, so an alias without userId is told to set userId,
 * not "one of userId or anonymousId".
 */
function missingField(call: Call, where: string): Invalid | undefined {
  const { type, userId } = call;
  if (type === 'alias') {
    if (call.previousId === undefined) {
      return invalid('missing_field', 'alias call without "previousId": set previousId to the id the user had before');
    }
    if (userId === undefined) {
      return invalid('missing_field', 'alias call without "userId": set userId to the id the user has now');
    }
  } else if (type === 'group') {
    if (call.groupId === undefined) return invalid('missing_field', `group call without "groupId": set groupId to the group's id`);
  }
  if (userId === undefined && call.anonymousId === undefined) {
    return invalid('missing_identity', `${where} has neither userId nor anonymousId: set one of them`);
  }
  if (type === 'track' && (call.event === undefined || call.event === '')) {
    return invalid('missing_event', 'track call without "event": set event to the event name');
  }
  return undefined;
}

/** The first top-level field that nests deeper than {@link MAX_NESTING_DEPTH} or holds a BigInt. */
function nestingError(raw: Record<string, unknown>, where: string): Invalid | undefined {
  for (const key in raw) {
    const depthError = checkNesting(raw[key], MAX_NESTING_DEPTH - 1);
    if (depthError !== undefined) return badNesting(where, key, depthError);
  }
  return undefined;
}

/** Marks a present value of the wrong type (distinct from `undefined`, which means absent). */
const BAD: unique symbol = Symbol('bad');

function isCallType(value: unknown): value is CallType {
  return (
    value === 'track' ||
    value === 'identify' ||
    value === 'page' ||
    value === 'screen' ||
    value === 'group' ||
    value === 'alias'
  );
}

/** An id: a non-empty string, or a finite number as its string form; null and "" mean absent. */
function id(value: unknown): string | undefined | typeof BAD {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return BAD;
}

/** A string where "" means absent (so the gateway generates one). */
function nonEmptyString(value: unknown): string | undefined | typeof BAD {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (value === undefined || value === null) return undefined;
  return BAD;
}

function optionalString(value: unknown): string | undefined | typeof BAD {
  if (typeof value === 'string') return value;
  if (value === undefined || value === null) return undefined;
  return BAD;
}

function optionalObject(value: unknown): Record<string, unknown> | undefined | typeof BAD {
  if (value === undefined || value === null) return undefined;
  return isPlainObject(value) ? value : BAD;
}

/** A JSON object as JSON.parse makes it (not an array, a Date, a class instance). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** A parseable ISO 8601 date-time string; null and "" mean absent. */
function optionalTimestamp(value: unknown): number | undefined | typeof BAD {
  if (value === undefined || value === null || value === '') return undefined;
  return (typeof value === 'string' ? parseTimestamp(value) : undefined) ?? BAD;
}

/**
 * Whether the text might nest deeper than MAX_NESTING_DEPTH. Each level needs an
 * opening `{` or `[`, so fewer of them than the limit rules it out without walking
 * the parsed value; for typical calls this is a handful of native byte searches.
 */
function mayNestTooDeeply(bytes: Buffer): boolean {
  if (bytes.length < MAX_NESTING_DEPTH * 2) return false;
  const braces = countUpTo(bytes, 0x7b, MAX_NESTING_DEPTH);
  return braces + countUpTo(bytes, 0x5b, MAX_NESTING_DEPTH - braces) >= MAX_NESTING_DEPTH;
}

/** Occurrences of `byte` in `bytes`, counting no further than `limit`. */
function countUpTo(bytes: Buffer, byte: number, limit: number): number {
  let count = 0;
  let i = bytes.indexOf(byte);
  while (i !== -1 && count < limit) {
    count += 1;
    i = bytes.indexOf(byte, i + 1);
  }
  return count;
}

type NestingError = 'too_deep' | 'bigint';

/**
 * Walks a value to at most `levels` more levels of nesting. Also refuses BigInt
 * (possible only in objects built in code, not parsed), which JSON.stringify throws on.
 */
function checkNesting(value: unknown, levels: number): NestingError | undefined {
  if (typeof value === 'bigint') return 'bigint';
  if (typeof value !== 'object' || value === null) return undefined;
  if (levels === 0) return 'too_deep';
  if (Array.isArray(value)) {
    for (const item of value) {
      const error = checkNesting(item, levels - 1);
      if (error !== undefined) return error;
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const error = checkNesting(record[key], levels - 1);
    if (error !== undefined) return error;
  }
  return undefined;
}

function invalid(reason: InvalidReason, error: string): Invalid {
  return { ok: false, reason, error };
}

function invalidType(value: unknown): ParseResult {
  if (value === undefined || value === null) {
    return invalid('unknown_type', `call has no "type": set type to one of ${TYPE_LIST}`);
  }
  if (typeof value !== 'string') {
    return invalid('unknown_type', `call "type" is ${describe(value)}, not a string: set type to one of ${TYPE_LIST}`);
  }
  const lower = value.toLowerCase();
  const hint = isCallType(lower) ? ` (types are lower case: did you mean "${lower}"?)` : '';
  return invalid('unknown_type', `unknown call type ${quote(value)}: expected one of ${TYPE_LIST}${hint}`);
}

function badField(where: string, field: string, value: unknown, expected: string, fix: string): Invalid {
  return invalid('bad_field', `${where} field "${field}" must be ${expected}, not ${describe(value)}: ${fix}`);
}

function badTimestamp(where: string, field: string, value: unknown): Invalid {
  const got = typeof value === 'string' ? quote(value) : describe(value);
  return invalid(
    'bad_timestamp',
    `${where} field "${field}" is not an ISO 8601 date-time: got ${got}; send it like "2026-05-01T12:00:00.000Z" or leave it out`,
  );
}

function badNesting(where: string, field: string, error: NestingError): Invalid {
  const message =
    error === 'too_deep'
      ? `${where} field "${field}" nests objects or arrays deeper than ${MAX_NESTING_DEPTH} levels: flatten it`
      : `${where} field "${field}" holds a BigInt, which JSON cannot carry: send it as a string or number`;
  return invalid('bad_field', message);
}

/** A JSON-quoted string, cut to QUOTE_LIMIT characters so an error never carries a payload. */
function quote(text: string): string {
  return text.length > QUOTE_LIMIT ? `${JSON.stringify(text.slice(0, QUOTE_LIMIT))}…` : JSON.stringify(text);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string':
      return `a string (${quote(value)})`;
    case 'number':
      return `a number (${String(value)})`;
    case 'bigint':
      return `a BigInt (${String(value)})`;
    case 'boolean':
      return `a boolean (${String(value)})`;
    case 'object':
      return 'an object';
    case 'undefined':
      return 'undefined';
    default:
      return `a ${typeof value}`;
  }
}
