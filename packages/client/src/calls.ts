/**
 * What each method of the client takes, and how one becomes a queued call: checked at
 * once (so a bad call throws in the caller's code, not later in the background),
 * given a messageId and a timestamp, and serialized once.
 */
import { isPlainObject, validateCall } from './call-model.js';
import { formatTimestamp, parseTimestamp } from './timestamp.js';
import { AnalyticsValidationError } from './errors.js';
import type { BatchLimits, QueuedCall } from './transport.js';

/** Fields every call takes. */
export interface CommonFields {
  /** The user's id in your database. A call needs a userId or an anonymousId. */
  userId?: string;
  /** An id for a visitor not (yet) known by userId. */
  anonymousId?: string;
  /** A unique id for this call, kept when given (for deduplication); a UUID otherwise. */
  messageId?: string;
  /** When the call happened, for historical import (a Date or an ISO 8601 string); now when absent. */
  timestamp?: Date | string;
  /** Facts about the device, page, IP and so on, not about the user. */
  context?: Record<string, unknown>;
  /** Turns destinations on or off for this call, e.g. `{ All: false, Webhooks: true }`. */
  integrations?: Record<string, boolean | Record<string, unknown>>;
}

export interface IdentifyCall extends CommonFields {
  traits?: Record<string, unknown>;
}

export interface TrackCall extends CommonFields {
  /** The event name, e.g. `Order Completed`. Required. */
  event: string;
  properties?: Record<string, unknown>;
}

export interface PageCall extends CommonFields {
  name?: string;
  category?: string;
  /** `path`, `referrer`, `title` and `url` are recognized; others are kept. */
  properties?: Record<string, unknown>;
}

export interface ScreenCall extends CommonFields {
  name?: string;
  properties?: Record<string, unknown>;
}

export interface GroupCall extends CommonFields {
  /** The group's id. Required. */
  groupId: string;
  traits?: Record<string, unknown>;
}

export interface AliasCall extends CommonFields {
  /** The id the user has now. Required. */
  userId: string;
  /** The id the user had before (often the anonymousId). Required. */
  previousId: string;
}

export interface CallInputs {
  identify: IdentifyCall;
  track: TrackCall;
  page: PageCall;
  screen: ScreenCall;
  group: GroupCall;
  alias: AliasCall;
}

/** The six call types (the gateway's own list, restated so that the declarations stand alone). */
export type CallType = keyof CallInputs;

/** Who sends: put in every call's `context.library`, as Segment's libraries do. */
export interface Library {
  name: string;
  version: string;
}

/** The fields each type carries after the common ones, in the order they are serialized. */
const TYPE_FIELDS: Record<CallType, readonly string[]> = {
  identify: ['traits'],
  track: ['event', 'properties'],
  page: ['name', 'category', 'properties'],
  screen: ['name', 'properties'],
  group: ['groupId', 'traits'],
  alias: ['previousId'],
};

/**
 * Checks one call and turns it into what is queued; throws AnalyticsValidationError
 * (with nothing queued) when it cannot be sent as given.
 */
export function buildCall<T extends CallType>(
  type: T,
  input: CallInputs[T],
  nowMs: number,
  newMessageId: () => string,
  library: Library,
  limits: Pick<BatchLimits, 'maxCallBytes' | 'maxCallBytesWhy'>,
): QueuedCall {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AnalyticsValidationError(
      'bad_field',
      `${type}() takes one object of fields, e.g. analytics.${type}({ userId: 'u-1', ... }); got ${describe(input)}`,
    );
  }
  const fields = input as unknown as Record<string, unknown>;
  checkRequired(type, fields);

  const messageId = absent(fields.messageId) ? newMessageId() : fields.messageId;
  const timestamp = timestampText(type, fields.timestamp, nowMs);

  const context = fields.context;
  const message: Record<string, unknown> = {
    type,
    userId: fields.userId,
    anonymousId: fields.anonymousId,
    messageId,
    timestamp,
  };
  for (const name of TYPE_FIELDS[type]) message[name] = fields[name];
  // Only a plain object gets the library added; anything else is left for validateCall to refuse.
  message.context = isPlainObject(context) ? withLibrary(context, library) : context === undefined ? { library } : context;
  message.integrations = fields.integrations;
  // Absent fields are left out; null and an empty id mean absent, as the gateway reads them.
  for (const key of Object.keys(message)) {
    const value = message[key];
    if (value === undefined || value === null || (value === '' && (key === 'userId' || key === 'anonymousId'))) {
      delete message[key];
    }
  }

  const checked = validateCall(message);
  if (!checked.ok) {
    throw new AnalyticsValidationError(checked.reason === 'bad_timestamp' ? 'bad_timestamp' : 'bad_field', checked.error);
  }

  let json: string;
  try {
    json = JSON.stringify(message);
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    throw new AnalyticsValidationError(
      'bad_field',
      `${type} call cannot be serialized as JSON (${detail}): send plain objects, strings, numbers and booleans`,
    );
  }
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > limits.maxCallBytes) {
    const why = limits.maxCallBytesWhy === undefined ? '' : ` (${limits.maxCallBytesWhy})`;
    throw new AnalyticsValidationError(
      'too_large',
      `${type} call is ${bytes} bytes as JSON, over the ${limits.maxCallBytes}-byte limit per call${why}: send less data in traits, properties or context`,
    );
  }

  const key = checked.call.userId ?? checked.call.anonymousId;
  // validateCall refuses a call without either, so this only guards the types.
  if (key === undefined) throw new AnalyticsValidationError('missing_identity', `${type} call has no userId or anonymousId`);
  return { json, bytes, key, type, messageId: messageId as string, message };
}

function checkRequired(type: CallType, fields: Record<string, unknown>): void {
  if (type === 'alias') {
    if (absent(fields.userId)) {
      throw new AnalyticsValidationError(
        'missing_user_id',
        "alias() needs the user's new id: set userId (and previousId to the id they had before)",
      );
    }
    if (absent(fields.previousId)) {
      throw new AnalyticsValidationError(
        'missing_previous_id',
        'alias() needs the id the user had before: set previousId (often the anonymousId)',
      );
    }
    return;
  }
  if (absent(fields.userId) && absent(fields.anonymousId)) {
    throw new AnalyticsValidationError(
      'missing_identity',
      `${type}() needs to know who: set userId (the user's id) or anonymousId (for a visitor not known yet)`,
    );
  }
  if (type === 'track' && absent(fields.event)) {
    throw new AnalyticsValidationError('missing_event', "track() needs an event name: set event, e.g. 'Order Completed'");
  }
  if (type === 'group' && absent(fields.groupId)) {
    throw new AnalyticsValidationError('missing_group_id', "group() needs the group's id: set groupId");
  }
  if (!absent(fields.messageId) && typeof fields.messageId !== 'string') {
    throw new AnalyticsValidationError(
      'bad_field',
      `${type}() field messageId must be a string, not ${describe(fields.messageId)}: set a unique string or leave it out`,
    );
  }
}

/** `null`, `undefined` and `''` all mean "not given", as the gateway reads them. */
function absent(value: unknown): value is undefined | null | '' {
  return value === undefined || value === null || value === '';
}

function timestampText(type: CallType, value: unknown, nowMs: number): string {
  if (absent(value)) return formatTimestamp(nowMs);
  if (value instanceof Date) {
    const ms = value.getTime();
    if (Number.isNaN(ms)) {
      throw new AnalyticsValidationError('bad_timestamp', `${type}() timestamp is an invalid Date: pass a valid Date or leave it out`);
    }
    return formatTimestamp(ms);
  }
  const ms = typeof value === 'string' ? parseTimestamp(value) : undefined;
  if (ms === undefined) {
    throw new AnalyticsValidationError(
      'bad_timestamp',
      `${type}() timestamp must be a Date or an ISO 8601 string such as "2026-05-01T12:00:00.000Z"; got ${describe(value)}`,
    );
  }
  return formatTimestamp(ms);
}

function withLibrary(context: Record<string, unknown>, library: Library): Record<string, unknown> {
  return context.library === undefined ? { ...context, library } : context;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}
