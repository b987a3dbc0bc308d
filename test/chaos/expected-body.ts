// The webhook body docs/webhooks.md prescribes for a call, written from the contract alone
// (not with src/calls/render.ts): what the harness compares every received body with.

const PLACEHOLDER_TIMESTAMP = '<timestamp>';
const PLACEHOLDER_MESSAGE_ID = '<messageId>';
const TIMESTAMP_SHAPE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** An id field: a non-empty string, or a finite number as its string form; null and "" are absent. */
function idField(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

function textField(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function objectField(value: unknown): Record<string, unknown> | undefined {
  return isPlainObject(value) ? value : undefined;
}

/**
 * The body for a valid call as JSON text: the contract's key order, absent fields left
 * out. `timestamp` and `messageId` are given (the harness may not know them: see
 * {@link normalizeReceivedBody}).
 */
export function renderExpectedBody(call: Record<string, unknown>, ids: { messageId: string; timestamp: string }): string {
  const head = {
    version: 1,
    type: call.type,
    userId: call.type === 'alias' ? undefined : idField(call.userId),
    anonymousId: idField(call.anonymousId),
    messageId: ids.messageId,
    timestamp: ids.timestamp,
  };
  const context = objectField(call.context);
  switch (call.type) {
    case 'identify':
      return JSON.stringify({ ...head, traits: objectField(call.traits), context });
    case 'track':
      return JSON.stringify({ ...head, event: textField(call.event), properties: objectField(call.properties), context });
    case 'page':
      return JSON.stringify({ ...head, name: textField(call.name), category: textField(call.category), properties: objectField(call.properties), context });
    case 'screen':
      return JSON.stringify({ ...head, name: textField(call.name), properties: objectField(call.properties), context });
    case 'group':
      return JSON.stringify({ ...head, groupId: idField(call.groupId), traits: objectField(call.traits), context });
    case 'alias':
      return JSON.stringify({ ...head, 'Previous ID': idField(call.previousId), 'User ID': idField(call.userId), context });
    default:
      throw new TypeError(`renderExpectedBody: not a call type: ${String(call.type)}`);
  }
}

/** The expected body of a call whose timestamp (and maybe messageId) the service chose. */
export function expectedBodyWithPlaceholders(call: Record<string, unknown>, knownMessageId: string | undefined): string {
  return renderExpectedBody(call, { messageId: knownMessageId ?? PLACEHOLDER_MESSAGE_ID, timestamp: PLACEHOLDER_TIMESTAMP });
}

/**
 * A received body with its timestamp (and, unless `knownMessageId`, its messageId)
 * replaced by the placeholders, after checking they have the contract's form; or a
 * description of why it cannot be compared.
 */
export function normalizeReceivedBody(text: string, knownMessageId: string | undefined): { ok: true; text: string } | { ok: false; problem: string } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, problem: `body is not JSON: ${text.slice(0, 120)}` };
  }
  if (!isPlainObject(body)) return { ok: false, problem: `body is not an object: ${text.slice(0, 120)}` };
  if (typeof body.timestamp !== 'string' || !TIMESTAMP_SHAPE.test(body.timestamp)) {
    return { ok: false, problem: `timestamp ${JSON.stringify(body.timestamp)} is not UTC ISO 8601 with milliseconds` };
  }
  body.timestamp = PLACEHOLDER_TIMESTAMP;
  if (knownMessageId === undefined) {
    if (typeof body.messageId !== 'string' || body.messageId === '') return { ok: false, problem: 'body has no messageId' };
    body.messageId = PLACEHOLDER_MESSAGE_ID;
  }
  // NOTE: the body came from JSON.stringify, so parsing and serializing it again gives
  // the same bytes (docs/webhooks.md); only the two placeholders differ.
  return { ok: true, text: JSON.stringify(body) };
}
