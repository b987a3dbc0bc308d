/**
 * Webhook request bodies (docs/webhooks.md), rendered once per call and sent as is.
 *
 * Each body is JSON.stringify of an object literal written in the contract's key
 * order: V8 keeps insertion order for non-integer keys, and JSON.stringify leaves out
 * keys whose value is undefined, which is how absent optional fields disappear. The
 * free-form objects are the ones JSON.parse produced, so a receiver that parses and
 * re-serializes a body gets the same bytes, and the same X-Signature.
 */
import type { Call, CallWithMessageId } from './call.js';
import { formatTimestamp, parseTimestamp } from './timestamp.js';

/** Webhook payload version; absent on delete bodies. */
export const BODY_VERSION = 1;

/**
 * The webhook body for a call: `version, type, userId, anonymousId, messageId,
 * timestamp`, then the type's fields, then `context`; alias bodies carry
 * `"Previous ID"` and `"User ID"` instead of userId.
 *
 * `timestamp` is the call's own (`timestampMs`, already corrected for clock skew by
 * the gateway) or else `fallbackTimestampMs`: when the service received the call (the
 * Kafka record's timestamp for direct producers).
 *
 * A body never lacks messageId: the gateway fills a missing one, and for calls that
 * producers wrote straight to Kafka the router does, with `withMessageId` (choose an
 * id derived from topic, partition and offset so a re-processed call keeps its id).
 */
export function renderBody(call: CallWithMessageId, fallbackTimestampMs: number): string {
  return JSON.stringify(bodyFields(call, fallbackTimestampMs));
}

/**
 * The webhook body as an object: exactly what `JSON.parse(renderBody(…))` gives (the
 * same keys in the same order, absent fields left out), without rendering and
 * parsing. Its free-form objects are the call's own: shared, never to be modified.
 * What a destination's filter and transform read (docs/webhooks.md#shaping).
 */
export function bodyObject(call: CallWithMessageId, fallbackTimestampMs: number): Record<string, unknown> {
  const fields = bodyFields(call, fallbackTimestampMs);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The body's fields in the contract's order; absent ones are undefined (JSON.stringify leaves them out). */
function bodyFields(call: CallWithMessageId, fallbackTimestampMs: number): Record<string, unknown> {
  const messageId = call.messageId;
  // NOTE: the type promises a messageId; this guards against casts and plain-JS callers.
  if (typeof messageId !== 'string' || messageId === '') {
    throw new TypeError(`renderBody: ${call.type} call has no messageId; fill it with withMessageId first`);
  }
  const timestamp = call.timestampMs === undefined ? formatTimestamp(fallbackTimestampMs) : ownTimestamp(call, call.timestampMs);
  switch (call.type) {
    case 'identify':
      return {
        version: BODY_VERSION,
        type: 'identify',
        userId: call.userId,
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        traits: call.traits,
        context: call.context,
      };
    case 'track':
      return {
        version: BODY_VERSION,
        type: 'track',
        userId: call.userId,
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        event: call.event,
        properties: call.properties,
        context: call.context,
      };
    case 'page':
      return {
        version: BODY_VERSION,
        type: 'page',
        userId: call.userId,
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        name: call.name,
        category: call.category,
        properties: call.properties,
        context: call.context,
      };
    case 'screen':
      return {
        version: BODY_VERSION,
        type: 'screen',
        userId: call.userId,
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        name: call.name,
        properties: call.properties,
        context: call.context,
      };
    case 'group':
      return {
        version: BODY_VERSION,
        type: 'group',
        userId: call.userId,
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        groupId: call.groupId,
        traits: call.traits,
        context: call.context,
      };
    case 'alias':
      // The seed names the two identity fields with a space, exactly so.
      return {
        version: BODY_VERSION,
        type: 'alias',
        anonymousId: call.anonymousId,
        messageId,
        timestamp,
        'Previous ID': call.previousId,
        'User ID': call.userId,
        context: call.context,
      };
  }
}

/**
 * The call's own `timestamp` as the body writes it. NOTE: when the call's text is already
 * in the body's form (`2026-05-01T12:00:00.000Z`) and names this very instant, it is the
 * text formatting would give, so it is used as it is: formatting costs about half a
 * microsecond per call on the router's hot path. Any other text (another form, or a
 * Call whose `timestampMs` was corrected after parsing) is formatted.
 */
function ownTimestamp(call: Call, timestampMs: number): string {
  const text = call.raw.timestamp;
  return typeof text === 'string' && inBodyForm(text) && parseTimestamp(text) === timestampMs ? text : formatTimestamp(timestampMs);
}

/** The shape of `YYYY-MM-DDThh:mm:ss.sssZ` (the digits are parseTimestamp's to check). */
function inBodyForm(text: string): boolean {
  return (
    text.length === 24 &&
    text.charCodeAt(4) === 45 && // -
    text.charCodeAt(7) === 45 &&
    text.charCodeAt(10) === 84 && // T
    text.charCodeAt(13) === 58 && // :
    text.charCodeAt(16) === 58 &&
    text.charCodeAt(19) === 46 && // .
    text.charCodeAt(23) === 90 // Z
  );
}

/** The body sent for a deletion request: only type, userId and timestamp, no version. */
export function renderDeleteBody(userId: string, timestampMs: number): string {
  return JSON.stringify({ type: 'delete', userId, timestamp: formatTimestamp(timestampMs) });
}

export interface AudienceIdentify {
  userId?: string;
  anonymousId?: string;
  messageId: string;
  timestampMs: number;
  /** snake_case of the audience name, e.g. `high_value_users`. */
  traitKey: string;
  /** true: entered the audience; false: left it. */
  member: boolean;
}

/** The identify sent when a user enters or leaves an audience: `traits: {<traitKey>: member}`. */
export function renderAudienceIdentify(p: AudienceIdentify): string {
  if (p.userId === undefined && p.anonymousId === undefined) {
    throw new TypeError('renderAudienceIdentify: needs a userId or an anonymousId');
  }
  return JSON.stringify({
    version: BODY_VERSION,
    type: 'identify',
    userId: p.userId,
    anonymousId: p.anonymousId,
    messageId: p.messageId,
    timestamp: formatTimestamp(p.timestampMs),
    // A computed key is an own property even when it is "__proto__".
    traits: { [p.traitKey]: p.member },
  });
}

/** The Kafka key for a call and its deliveries: userId, else anonymousId. */
export function routingKey(call: Call): string {
  const key = call.userId ?? call.anonymousId;
  if (key === undefined) throw new TypeError(`routingKey: ${call.type} call has neither userId nor anonymousId`);
  return key;
}
