/**
 * HTTP to the gateway, in the shape of Segment's tracking API:
 * `POST <endpoint>/v1/batch` with `{"batch":[…],"sentAt":"…"}` and the write key as
 * the Basic auth user name (empty password).
 */
import { MAX_CALL_BYTES } from './call-model.js';
import { AnalyticsConfigError } from './errors.js';
import { parseRetryAfter } from './retry.js';
import type { BatchLimits, QueuedCall, RefusedCall, SendResult, Transport } from './transport.js';

export interface HttpTransportOptions {
  /** Base URL of the gateway, e.g. `http://localhost:8080`; `/v1/batch` is appended. */
  endpoint: string;
  writeKey: string;
  /** A request with no complete answer after this long is given up and retried. */
  timeoutMs: number;
  userAgent: string;
  /** Cuts secrets out of text a server sent back before it goes into errors. */
  redact: (text: string) => string;
}

/** The gateway's limit per request (docs/http-api.md), measured on the whole body. */
export const MAX_BATCH_BYTES = 500 * 1024;
/** The gateway's limit of calls per request (docs/http-api.md). */
export const MAX_BATCH_CALLS = 2_500;

const BODY_START = '{"batch":[';
// `"sentAt":"2026-05-01T12:00:00.000Z"}`: the timestamp is always 24 characters.
const BODY_END_BYTES = Buffer.byteLength('],"sentAt":"2026-05-01T12:00:00.000Z"}');
/** How much of a server's error answer goes into an error message. */
const ANSWER_TEXT_LIMIT = 300;

/**
 * What the gateway adds to each call before it checks the 32 KB limit (docs/http-api.md):
 * `,"receivedAt":"<24 characters>"` and `,"sentAt":"<24 characters>"`.
 * NOTE: the gateway measures the call as stored, so a call the client let through at
 * exactly 32 KB would be refused there; the client keeps this much room.
 */
export const GATEWAY_ADDED_BYTES = ',"receivedAt":""'.length + 24 + ',"sentAt":""'.length + 24;

/** Exact sizes of a batch body as batchBody() writes it. */
export const HTTP_BATCH_LIMITS: BatchLimits = {
  maxCallBytes: MAX_CALL_BYTES - GATEWAY_ADDED_BYTES,
  maxCallBytesWhy: `32 KB less the ${GATEWAY_ADDED_BYTES} bytes of receivedAt and sentAt the gateway adds to each call`,
  maxCalls: MAX_BATCH_CALLS,
  maxBytes: MAX_BATCH_BYTES,
  // Each call counts one byte for the comma before it, and the first has none: hence −1.
  overheadBytes: BODY_START.length + BODY_END_BYTES - 1,
  callBytes: (call) => call.bytes + 1,
};

export function batchUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new AnalyticsConfigError(`endpoint ${JSON.stringify(endpoint)} is not a URL: set it like "http://localhost:8080"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AnalyticsConfigError(`endpoint ${JSON.stringify(url.origin)} must start with http:// or https://`);
  }
  if (url.username !== '' || url.password !== '') {
    throw new AnalyticsConfigError(
      'endpoint must not carry a user name or password: the write key (first argument of new Analytics) is the credential',
    );
  }
  if (url.search !== '' || url.hash !== '') {
    throw new AnalyticsConfigError(`endpoint must be a base URL without ?query or #fragment, like "https://gateway.example.com"`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/batch`;
  return url;
}

/** The request body: the calls exactly as serialized when queued, and the time of this attempt. */
export function batchBody(batch: readonly QueuedCall[], sentAtIso: string): string {
  return `${BODY_START}${batch.map((call) => call.json).join(',')}],"sentAt":${JSON.stringify(sentAtIso)}}`;
}

export function createHttpTransport(options: HttpTransportOptions): Transport {
  const url = batchUrl(options.endpoint);
  const description = `${url.origin}${url.pathname}`;
  const headers = {
    'content-type': 'application/json',
    'user-agent': options.userAgent,
    authorization: `Basic ${Buffer.from(`${options.writeKey}:`, 'utf8').toString('base64')}`,
  };
  return {
    description,
    limits: HTTP_BATCH_LIMITS,
    async send(batch: readonly QueuedCall[]): Promise<SendResult> {
      // NOTE: sentAt is the time of this attempt, not of the first: the gateway corrects
      // each call's timestamp by (receivedAt − sentAt), so a stale sentAt would shift it.
      const body = batchBody(batch, new Date().toISOString());
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers,
          body,
          // A redirect would be followed as a GET or cross to another origin: say so instead.
          redirect: 'manual',
          signal: AbortSignal.timeout(options.timeoutMs),
        });
        text = await response.text();
      } catch (err) {
        return { kind: 'retryable', reason: networkReason(err, options.timeoutMs), cause: err };
      }
      return classifyAnswer(response.status, response.headers, text, options.redact, Date.now());
    },
    async close(): Promise<void> {
      // fetch keeps no connection this transport owns: nothing to release.
    },
  };
}

/** What an HTTP answer means for the batch: pure, so every status is tested without a server. */
export function classifyAnswer(
  status: number,
  headers: Headers,
  text: string,
  redact: (text: string) => string,
  nowMs: number,
): SendResult {
  if (status >= 200 && status < 300) {
    const refused = refusedCalls(text, redact);
    return refused.length === 0 ? { kind: 'success' } : { kind: 'success', refused };
  }
  const reason = `HTTP ${status}${answerText(text, redact)}`;
  if (status === 408 || status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(headers.get('retry-after'), nowMs);
    return retryAfterMs === undefined ? { kind: 'retryable', reason, status } : { kind: 'retryable', reason, status, retryAfterMs };
  }
  if (status >= 300 && status < 400) {
    const location = headers.get('location');
    const where = location === null ? '' : ` to ${redact(location)}`;
    return { kind: 'failure', reason: `${reason}: the endpoint redirects${where}; set endpoint to the final address`, status };
  }
  return { kind: 'failure', reason, status };
}

/**
 * The calls a 200 answer lists as kept aside (`{"success":true,"invalid":[{index, code,
 * message}]}`): the gateway stored them in calls.invalid and accepted the rest.
 */
function refusedCalls(text: string, redact: (text: string) => string): RefusedCall[] {
  if (!text.includes('"invalid"')) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  const invalid = (parsed as { invalid?: unknown } | null)?.invalid;
  if (!Array.isArray(invalid)) return [];
  const refused: RefusedCall[] = [];
  for (const item of invalid as unknown[]) {
    const { index, code, message } = (item ?? {}) as { index?: unknown; code?: unknown; message?: unknown };
    if (typeof index !== 'number') continue;
    refused.push({
      index,
      code: typeof code === 'string' ? code : 'invalid',
      message: redact(typeof message === 'string' ? message : 'refused as invalid'),
    });
  }
  return refused;
}

/** `: <code>: <message>` from a gateway error body (`{"success":false,"code","message"}`), else its text. */
function answerText(text: string, redact: (text: string) => string): string {
  if (text === '') return '';
  let shown = text;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null) {
      const { code, message } = parsed as { code?: unknown; message?: unknown };
      if (typeof message === 'string') shown = typeof code === 'string' ? `${code}: ${message}` : message;
    }
  } catch {
    // Not JSON: the text itself.
  }
  shown = redact(shown.trim());
  return `: ${shown.length > ANSWER_TEXT_LIMIT ? `${shown.slice(0, ANSWER_TEXT_LIMIT)}…` : shown}`;
}

function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
    return `no complete answer within ${timeoutMs} ms`;
  }
  // fetch reports network failures as TypeError('fetch failed') with the cause inside.
  const cause = err instanceof Error ? (err.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause !== undefined && cause !== null) {
    const code = typeof cause.code === 'string' ? cause.code : undefined;
    const message = typeof cause.message === 'string' ? cause.message : undefined;
    return `network error: ${[code, message].filter((part) => part !== undefined).join(' ')}`;
  }
  return `network error: ${err instanceof Error ? err.message : String(err)}`;
}
