// What one webhook request came to: a value, never an exception. Pure, so every
// status and error code is unit-tested without a socket (test/unit/delivery).
import { STATUS_CODES } from 'node:http';
import { BLOCKED_ADDRESS_CODE } from './private-network.js';

/**
 * The `outcome` label values of `switchyard_delivery_attempts_total` (docs/metrics.md).
 * `blocked`: `delivery.blockPrivateNetworks` refused the address; no request was sent.
 * `circuit_open`: the URL's circuit breaker skipped it; no request was sent.
 * `auth`: no token from the destination's OAuth2 token endpoint; no request was sent.
 */
export const OUTCOME_LABELS = ['2xx', '4xx', '5xx', 'timeout', 'network', 'tls', 'blocked', 'circuit_open', 'auth'] as const;
export type OutcomeLabel = (typeof OUTCOME_LABELS)[number];

/** delivered: a 2xx. retryable: try again later. permanent: trying again will not help. */
export type Verdict = 'delivered' | 'retryable' | 'permanent';

export interface AttemptResult {
  outcome: OutcomeLabel;
  verdict: Verdict;
  /** The HTTP status, when an answer came. */
  status?: number;
  /** For people: "400 Bad Request", "self-signed certificate", "no complete answer within 5s". */
  reason: string;
  /** From a `Retry-After` header of a retryable answer. */
  retryAfterMs?: number;
  /**
   * The first bytes of the answer body of a status that did not deliver, control
   * characters escaped (attempt-history.ts `responseExcerpt`); absent when it was empty.
   */
  response?: string;
}

/**
 * Statuses retried although they are not 5xx, as Segment documents for its
 * destinations: 408 Request Timeout, 410 Gone (Segment retries it: an endpoint being
 * moved or redeployed answers it for a while), 429 Too Many Requests, and 460 (AWS load
 * balancers: the client closed the connection before the answer).
 */
const RETRIED_4XX: ReadonlySet<number> = new Set([408, 410, 429, 460]);

/** 5xx statuses that say the receiver will never take this request: retrying cannot help. */
const PERMANENT_5XX: ReadonlySet<number> = new Set([
  501, // Not Implemented: the receiver does not support POST here
  505, // HTTP Version Not Supported
]);

/** Names Node's STATUS_CODES does not know. */
const EXTRA_STATUS_NAMES: ReadonlyMap<number, string> = new Map([[460, 'Client Closed Request']]);

/** A status for people: "503 Service Unavailable". */
export function statusText(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? EXTRA_STATUS_NAMES.get(status) ?? 'Unknown Status'}`;
}

/**
 * An HTTP answer, by Segment's rules (docs/webhooks.md#delivery-and-retries): 5xx except 501 and 505, 408, 410,
 * 429 and 460 are retryable; 501, 505 and every other 4xx are permanent.
 *
 * NOTE: a 3xx is permanent (redirects are never followed: the operator configures the
 * final URL) and counted under the `4xx` label: docs/metrics.md fixes the label values and
 * has no `3xx`, and like a 4xx it says the request, not the receiver, is wrong.
 */
export function classifyStatus(status: number, retryAfter: string | undefined, nowMs: number): AttemptResult {
  const reason = statusText(status);
  if (status >= 200 && status < 300) return { outcome: '2xx', verdict: 'delivered', status, reason };
  if (status >= 500 && status < 600) {
    if (PERMANENT_5XX.has(status)) return { outcome: '5xx', verdict: 'permanent', status, reason };
    return withRetryAfter({ outcome: '5xx', verdict: 'retryable', status, reason }, retryAfter, nowMs);
  }
  if (RETRIED_4XX.has(status)) return withRetryAfter({ outcome: '4xx', verdict: 'retryable', status, reason }, retryAfter, nowMs);
  if (status >= 300 && status < 400) {
    return { outcome: '4xx', verdict: 'permanent', status, reason: `${reason} (redirects are not followed; configure the final URL)` };
  }
  return { outcome: '4xx', verdict: 'permanent', status, reason };
}

/**
 * A destination's `settings.retry.stopOn` (docs/webhooks.md#retry-policy-per-destination):
 * an answer whose status it lists is permanent at once, its `Retry-After` dropped; other
 * results stay as Segment's rules made them. Used as `result` is read (fan-out.ts
 * `summarize`), so a change of `stopOn` applies to the next answer.
 */
export function stopOnStatus<R extends AttemptResult>(result: R, stopOn: ReadonlySet<number>): R {
  if (result.verdict !== 'retryable' || result.status === undefined || !stopOn.has(result.status)) return result;
  const { retryAfterMs: _dropped, ...rest } = result;
  return { ...rest, verdict: 'permanent', reason: `${result.reason} (listed in settings.retry.stopOn: not retried)` } as R;
}

function withRetryAfter(result: AttemptResult, header: string | undefined, nowMs: number): AttemptResult {
  const retryAfterMs = parseRetryAfter(header, nowMs);
  return retryAfterMs === undefined ? result : { ...result, retryAfterMs };
}

/**
 * `Retry-After` as milliseconds from now: delay-seconds (`120`) or an HTTP-date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`). A date in the past is 0; anything else is undefined.
 */
export function parseRetryAfter(header: string | undefined, nowMs: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : undefined;
  }
  // HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, or the obsolete RFC 850 and asctime forms;
  // Date.parse reads all three. A bare number with a sign or a fraction is not valid.
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** The request did not get a complete answer (headers and body) in time. */
export function timedOut(timeoutMs: number): AttemptResult {
  return { outcome: 'timeout', verdict: 'retryable', reason: `no complete answer within ${formatMs(timeoutMs)}` };
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * Certificate verification failures: the TLS handshake fails, so no request is sent,
 * and retrying cannot help until the receiver changes its certificate (docs/webhooks.md#delivery-and-retries).
 */
const CERTIFICATE_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'INVALID_PURPOSE',
  'PATH_LENGTH_EXCEEDED',
  'HOSTNAME_MISMATCH',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Connection-level failures worth a retry, with wording for the dead-letter `error`. */
const NETWORK_ERRORS: ReadonlyMap<string, string> = new Map([
  ['ECONNREFUSED', 'connection refused'],
  ['ECONNRESET', 'connection reset by the receiver'],
  ['EPIPE', 'connection closed while sending'],
  ['ENOTFOUND', 'host name not found (DNS)'],
  ['EAI_AGAIN', 'host name lookup failed temporarily (DNS)'],
  ['EHOSTUNREACH', 'host unreachable'],
  ['ENETUNREACH', 'network unreachable'],
  ['ENETDOWN', 'network down'],
  ['ETIMEDOUT', 'connection timed out'],
  ['EADDRNOTAVAIL', 'no local address available'],
  ['UND_ERR_SOCKET', 'connection closed by the receiver'],
  ['UND_ERR_CLOSED', 'connection closed'],
  ['UND_ERR_DESTROYED', 'connection destroyed'],
  ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'answer shorter or longer than its Content-Length'],
  ['HPE_INVALID_CONSTANT', 'answer is not valid HTTP'],
]);

/** Errors that say the request itself can never be sent as built. */
const PERMANENT_REQUEST_ERRORS = new Set(['UND_ERR_INVALID_ARG', 'UND_ERR_NOT_SUPPORTED', 'ERR_INVALID_URL', 'ERR_INVALID_CHAR']);

const TIMEOUT_ERRORS = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The code of an error or of the first cause that has one (undici wraps some). */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * NOTE: Node 24 ends a certificate error's message with advice about its own command
 * line ("; if the root CA is installed locally, try running Node.js with --use-system-ca"),
 * which the daemon's operator does not type and Node 22 does not add: the dead letter's
 * `error` header keeps Node's wording of the failure only, the same on 22 and 24.
 */
const NODE_CA_ADVICE = /; if the root CA is installed locally, try running Node\.js with --use-system-ca\.?$/;

function certificateFailure(error: unknown): string {
  return messageOf(error).replace(NODE_CA_ADVICE, '');
}

/** A request that failed without an HTTP answer (our own deadline is handled by the sender). */
export function classifyError(error: unknown, timeoutMs: number): AttemptResult {
  const code = errorCode(error);
  // The message names the address and why (private-network.ts).
  if (code === BLOCKED_ADDRESS_CODE) return { outcome: 'blocked', verdict: 'permanent', reason: messageOf(error) };
  if (code !== undefined && CERTIFICATE_ERRORS.has(code)) {
    // Node's wording is what people search for ("self-signed certificate").
    return { outcome: 'tls', verdict: 'permanent', reason: certificateFailure(error) };
  }
  if (code !== undefined && TIMEOUT_ERRORS.has(code)) return timedOut(timeoutMs);
  if (code !== undefined && PERMANENT_REQUEST_ERRORS.has(code)) {
    return { outcome: 'network', verdict: 'permanent', reason: `request could not be built: ${messageOf(error)}` };
  }
  if (code !== undefined && (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'))) {
    // A handshake that failed for another reason than the certificate (protocol
    // mismatch, a reset mid-handshake) may work on another try.
    return { outcome: 'tls', verdict: 'retryable', reason: `TLS handshake failed: ${messageOf(error)}` };
  }
  const known = code === undefined ? undefined : NETWORK_ERRORS.get(code);
  // NOTE: an unknown error is retryable: the window still ends it with a dead letter,
  // while calling it permanent would dead-letter events on a transient glitch.
  return { outcome: 'network', verdict: 'retryable', reason: known ?? (code ? `${messageOf(error)} (${code})` : messageOf(error)) };
}

/** The destination's token endpoint gave no token (`reason` names its origin and why): retried, as a receiver's 503 is. */
export function authFailed(reason: string): AttemptResult {
  return { outcome: 'auth', verdict: 'retryable', reason };
}
