// Every failed attempt of a message, as its retry-tier and dead-letter records carry it
// (the `attempt-history` header, docs/webhooks.md#attempt-history): per URL that failed,
// when, which URL (index and origin), the status or why no answer came, how long it took,
// and the first bytes of the receiver's answer body. Pure: read when a record is written
// or traced, never on the way to a 2xx.
import { formatTimestamp, parseTimestamp } from '../calls/index.js';
import type { RecordHeaders } from '../kafka/index.js';
import { headerText } from '../runtime/headers.js';
import { statusText } from './classify.js';
import type { AttemptResult } from './classify.js';

/** The header (JSON array, oldest first); a replay drops it, as it drops `attempt` (envelope.ts). */
export const ATTEMPT_HISTORY_HEADER = 'attempt-history';

/**
 * The answers kept: the newest 10, whatever URL gave them (the `attempt` header still
 * counts every attempt). NOTE: 10 holds every attempt of the default 4 h window for a
 * one-URL destination (10s, 1m, 10m, then hourly: 8 attempts); with excerpts of 512 bytes
 * it bounds the header near 6 KB for plain-text answers, written with each retry.
 */
export const MAX_HISTORY_ANSWERS = 10;

/** Bytes of an answer body kept: the start, where receivers say what went wrong. */
export const MAX_RESPONSE_BYTES = 512;

/** One failed answer of one URL. Keys in this order in the header. */
export interface AttemptAnswer {
  /** When the attempt started (ISO 8601, ms). */
  at: string;
  urlIndex: number;
  /** The URL's origin: scheme, host and port, never user info, path or query. */
  origin: string;
  /** The HTTP status, when an answer came; else `error`. */
  status?: number;
  /** Why no answer came ("no complete answer within 5s", "connection refused"). */
  error?: string;
  latencyMs: number;
  /** The first bytes of the answer body, control characters escaped; absent when empty. */
  response?: string;
}

/** One answer as the trace gives it (docs/follow-a-message.md#the-document): no origin, it names the URL by index. */
export type TracedAnswer = Omit<AttemptAnswer, 'origin'>;

/**
 * Text that prints as one inert line: C0 and C1 controls, DEL, the line and paragraph
 * separators and the bidirectional overrides are written as `\n`, `\r`, `\t` or `\u00XX`.
 * NOTE: a receiver's answer reaches terminals (`dlq list`, `trace`) and logs: an escape
 * sequence or a line break in it must not act there.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}

/**
 * The start of an answer body as kept: at most MAX_RESPONSE_BYTES bytes read as UTF-8 (a
 * character cut at the end dropped), escaped; undefined when empty. A compressed body
 * (`Content-Encoding` other than identity) is not shown, only said to be.
 */
export function responseExcerpt(start: Buffer, contentEncoding?: string): string | undefined {
  if (start.length === 0) return undefined;
  const encoding = contentEncoding?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') return `(a body in ${escapeControls(encoding.slice(0, 40))} encoding, not shown)`;
  // A body longer than kept: drop a character the cut split (its lead byte and the continuation bytes before the cut).
  const bytes = start.length > MAX_RESPONSE_BYTES ? withoutCutCharacter(start.subarray(0, MAX_RESPONSE_BYTES)) : start;
  const text = escapeControls(bytes.toString('utf8'));
  return text === '' ? undefined : text;
}

function withoutCutCharacter(bytes: Buffer): Buffer {
  for (let back = 1; back <= 4 && back <= bytes.length; back++) {
    const byte = bytes[bytes.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const needs = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needs > back ? bytes.subarray(0, bytes.length - back) : bytes;
  }
  return bytes;
}

/** A failed result for people: its reason, then what the receiver answered ("500 Internal Server Error: boom: database down"). */
export function answerText(result: Pick<AttemptResult, 'reason' | 'response'>): string {
  return result.response === undefined ? result.reason : `${result.reason}: ${result.response}`;
}

/** The same for a kept answer ("503 Service Unavailable", "500 Internal Server Error: boom", "connection refused"). */
export function keptAnswerText(answer: Pick<AttemptAnswer, 'status' | 'error' | 'response'>): string {
  const head = answer.status !== undefined ? statusText(answer.status) : (answer.error ?? 'no answer');
  return answer.response === undefined ? head : `${head}: ${answer.response}`;
}

/**
 * The answers of one attempt that did not deliver, by URL index: results with an outcome
 * a request (or the token endpoint, `auth`) produced. Not kept: a 2xx, a cancelled
 * request (its outcome is unknown), a URL its circuit skipped (no request was made).
 */
export function answersOf(results: readonly UrlAnswer[], atMs: number, origins: readonly string[]): AttemptAnswer[] {
  const at = formatTimestamp(atMs);
  const answers: AttemptAnswer[] = [];
  for (const { index, result } of [...results].sort((a, b) => a.index - b.index)) {
    if (result.outcome === 'cancelled' || result.outcome === 'circuit_open' || result.verdict === 'delivered') continue;
    const answer: AttemptAnswer = {
      at,
      urlIndex: index,
      origin: origins[index] ?? '?',
      ...(result.status !== undefined ? { status: result.status } : { error: result.reason }),
      latencyMs: Math.round(result.durationMs),
    };
    if (result.response !== undefined) answer.response = result.response;
    answers.push(answer);
  }
  return answers;
}

/** One URL's result of an attempt (fan-out.ts `UrlResult`, said here without importing it: fan-out.ts imports this module). */
export interface UrlAnswer {
  index: number;
  result: (AttemptResult & { durationMs: number }) | { outcome: 'cancelled'; durationMs: number };
}

/** `earlier` then `latest`, the newest MAX_HISTORY_ANSWERS kept. */
export function appendAnswers(earlier: readonly AttemptAnswer[], latest: readonly AttemptAnswer[]): AttemptAnswer[] {
  const all = [...earlier, ...latest];
  return all.length > MAX_HISTORY_ANSWERS ? all.slice(all.length - MAX_HISTORY_ANSWERS) : all;
}

/** The header's value. */
export function historyHeader(answers: readonly AttemptAnswer[]): string {
  return JSON.stringify(answers);
}

/**
 * The answers a record carries, oldest first; none when it has no header. NOTE: lenient,
 * as envelope.ts is: an entry that is not one this module wrote is left out, and a header
 * that is not JSON reads as none; the delivery goes on either way.
 */
export function readAnswers(headers: RecordHeaders | undefined): AttemptAnswer[] {
  const text = headerText(headers, ATTEMPT_HISTORY_HEADER);
  if (text === undefined || text === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  const answers: AttemptAnswer[] = [];
  for (const item of parsed.slice(-MAX_HISTORY_ANSWERS)) {
    const answer = asAnswer(item);
    if (answer !== undefined) answers.push(answer);
  }
  return answers;
}

function asAnswer(item: unknown): AttemptAnswer | undefined {
  if (typeof item !== 'object' || item === null) return undefined;
  const { at, urlIndex, origin, status, error, latencyMs, response } = item as Record<string, unknown>;
  if (typeof at !== 'string' || parseTimestamp(at) === undefined) return undefined;
  if (!Number.isSafeInteger(urlIndex) || (urlIndex as number) < 0 || typeof origin !== 'string') return undefined;
  if (typeof latencyMs !== 'number' || !Number.isFinite(latencyMs)) return undefined;
  let outcome: { status: number } | { error: string };
  if (Number.isSafeInteger(status)) outcome = { status: status as number };
  else if (typeof error === 'string') outcome = { error: escapeControls(error) };
  else return undefined;
  const answer: AttemptAnswer = { at, urlIndex: urlIndex as number, origin: escapeControls(origin), ...outcome, latencyMs };
  if (typeof response === 'string' && response !== '') answer.response = escapeControls(response.slice(0, 6 * MAX_RESPONSE_BYTES));
  return answer;
}

/** The newest answer of one URL, if the history still holds one. */
export function lastAnswerOf(answers: readonly AttemptAnswer[], urlIndex: number): AttemptAnswer | undefined {
  for (let i = answers.length - 1; i >= 0; i--) if (answers[i]!.urlIndex === urlIndex) return answers[i];
  return undefined;
}

/** The answers as `trace` lists them. */
export function tracedAnswers(answers: readonly AttemptAnswer[]): TracedAnswer[] {
  return answers.map(({ origin: _origin, ...rest }) => rest);
}
