// The Kafka headers a delivery message carries from the router through the retry tiers
// to the dead-letter topic and back (docs/kafka.md). Pure: read once per message, written
// for retries, dead letters and replays.
import { formatTimestamp, parseTimestamp } from '../calls/index.js';
import type { RecordHeaders } from '../kafka/index.js';
import { ATTEMPT_HISTORY_HEADER, historyHeader } from './attempt-history.js';
import type { AttemptAnswer } from './attempt-history.js';
import { HEADER, freshDeliveryHeaders, headerText } from '../runtime/headers.js';

export interface Envelope {
  /** Attempts already made (`attempt`; 0 from the router and after a replay). */
  attemptsMade: number;
  /** `first-attempt-at`; undefined before the first attempt. */
  firstAttemptAtMs: number | undefined;
  /** `due-at` of a retry-tier message: not to be attempted before. */
  dueAtMs: number | undefined;
  /**
   * When the call was received, for the end-to-end histogram: the `received-at` header,
   * else the record's Kafka timestamp (where the router puts a recent receipt time:
   * src/router/plan-call.ts `receiptTimeCarrier`).
   */
  receivedAtMs: number | undefined;
  traceparent: string | undefined;
  /** Headers that were present but unreadable; the message is still delivered. */
  problems: readonly string[];
  /**
   * The failed answers so far, when they are not (only) in the record's `attempt-history`
   * header: a retry held in the lane (`ordering: user`) carries them here. Unset, they are
   * read from the header when needed (attempt-history.ts `readAnswers`).
   */
  answers?: readonly AttemptAnswer[];
}

/** Shared by every envelope without problems: one array less per message. */
const NO_PROBLEMS: readonly string[] = Object.freeze([]);

function epochMs(text: string | undefined, name: string, problems: string[]): number | undefined {
  if (text === undefined || text === '') return undefined;
  if (/^\d{1,16}$/.test(text)) return Number(text);
  problems.push(`header ${name} is ${JSON.stringify(text.slice(0, 40))}, not epoch milliseconds; ignored`);
  return undefined;
}

/** A record's Kafka timestamp (epoch ms as a decimal string, src/kafka/records.ts; -1 when the record has none). */
function recordTimeMs(timestamp: string | undefined): number | undefined {
  const ms = Number(timestamp);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

/**
 * Reads the delivery headers, and the record's timestamp for the receipt time. NOTE:
 * lenient by design: the body is what matters, so a bad header is reported in
 * `problems` and read as absent rather than holding back the event (a bad `attempt`
 * counts as 0, a bad `first-attempt-at` starts the window now).
 */
export function readEnvelope(headers: RecordHeaders | undefined, recordTimestamp?: string): Envelope {
  const problems: string[] = [];
  const attemptText = headerText(headers, HEADER.attempt);
  let attemptsMade = 0;
  if (attemptText !== undefined && attemptText !== '') {
    if (/^\d{1,9}$/.test(attemptText)) attemptsMade = Number(attemptText);
    else problems.push(`header attempt is ${JSON.stringify(attemptText.slice(0, 40))}, not a whole number; counted as 0`);
  }
  const firstText = headerText(headers, HEADER.firstAttemptAt);
  let firstAttemptAtMs: number | undefined;
  if (firstText !== undefined && firstText !== '') {
    firstAttemptAtMs = parseTimestamp(firstText);
    if (firstAttemptAtMs === undefined) {
      problems.push(`header first-attempt-at is ${JSON.stringify(firstText.slice(0, 40))}, not an ISO 8601 time; the retry window starts now`);
    }
  }
  const traceparent = headerText(headers, HEADER.traceparent);
  const dueAtMs = epochMs(headerText(headers, HEADER.dueAt), HEADER.dueAt, problems);
  const receivedAtMs = epochMs(headerText(headers, HEADER.receivedAt), HEADER.receivedAt, problems) ?? recordTimeMs(recordTimestamp);
  return {
    attemptsMade,
    firstAttemptAtMs,
    dueAtMs,
    receivedAtMs,
    traceparent: traceparent === '' ? undefined : traceparent,
    problems: problems.length === 0 ? NO_PROBLEMS : problems,
  };
}

/** Headers that describe one stage of the delivery; every other header travels unchanged. */
const STAGE_HEADERS: ReadonlySet<string> = new Set([HEADER.attempt, HEADER.firstAttemptAt, HEADER.lastAttemptAt, HEADER.dueAt, HEADER.error, ATTEMPT_HISTORY_HEADER]);

/**
 * The headers that travel unchanged, plus `received-at` when the original had the
 * receipt time only as its record timestamp: retries and dead letters are stamped
 * when they are written, so the receipt time must go along as a header.
 */
function carried(original: RecordHeaders | undefined, receivedAtMs: number | undefined): RecordHeaders {
  const out: RecordHeaders = {};
  if (original !== undefined) {
    for (const name of Object.keys(original)) {
      if (!STAGE_HEADERS.has(name)) out[name] = original[name];
    }
  }
  if (receivedAtMs !== undefined && out[HEADER.receivedAt] === undefined) out[HEADER.receivedAt] = String(receivedAtMs);
  return out;
}

/**
 * For `deliveries.<id>.retry.<tier>`: `source-id`, `message-id`, `traceparent`, `received-at`
 * carried; `error` says why the attempt failed, as a dead letter's does (what
 * `switchyard trace` shows as the last error: docs/follow-a-message.md); `attempt-history`
 * the failed answers so far (docs/webhooks.md#attempt-history), when there are any.
 */
export function retryHeaders(
  original: RecordHeaders | undefined,
  stage: { attemptsMade: number; firstAttemptAtMs: number; dueAtMs: number; error?: string | undefined; receivedAtMs?: number | undefined; answers?: readonly AttemptAnswer[] | undefined },
): RecordHeaders {
  const headers: RecordHeaders = {
    ...carried(original, stage.receivedAtMs),
    [HEADER.attempt]: String(stage.attemptsMade),
    [HEADER.firstAttemptAt]: formatTimestamp(stage.firstAttemptAtMs),
    [HEADER.dueAt]: String(stage.dueAtMs),
  };
  if (stage.error !== undefined) headers[HEADER.error] = stage.error;
  if (stage.answers !== undefined && stage.answers.length > 0) headers[ATTEMPT_HISTORY_HEADER] = historyHeader(stage.answers);
  return headers;
}

/** For `deliveries.<id>.dlq`: the originals plus why and when, and the failed answers. */
export function deadLetterHeaders(
  original: RecordHeaders | undefined,
  stage: { attemptsMade: number; firstAttemptAtMs: number; lastAttemptAtMs: number; error: string; receivedAtMs?: number | undefined; answers?: readonly AttemptAnswer[] | undefined },
): RecordHeaders {
  const headers: RecordHeaders = {
    ...carried(original, stage.receivedAtMs),
    [HEADER.attempt]: String(stage.attemptsMade),
    [HEADER.firstAttemptAt]: formatTimestamp(stage.firstAttemptAtMs),
    [HEADER.lastAttemptAt]: formatTimestamp(stage.lastAttemptAtMs),
    [HEADER.error]: stage.error,
  };
  if (stage.answers !== undefined && stage.answers.length > 0) headers[ATTEMPT_HISTORY_HEADER] = historyHeader(stage.answers);
  return headers;
}

/** A replayed dead letter starts afresh: `attempt` 0, empty `first-attempt-at`, no `error`, no `attempt-history`. */
export function replayHeaders(original: RecordHeaders | undefined): RecordHeaders {
  return freshDeliveryHeaders({ carried: carried(original, undefined) });
}

/** Room for a status and a whole answer excerpt (512 bytes) as most receivers write them. */
const MAX_REASON_CHARS = 600;

/**
 * The dead letter's `error`: `<url>: <reason>` per URL, joined by "; ". URLs are given
 * as printed (`webhooks[1] https://hooks.example.com`: index and origin, no user info,
 * path or query); a reason leads with what the receiver answered ("500 Internal Server
 * Error: boom: database down") and is kept to one line.
 */
export function describeFailures(failures: readonly { url: string; reason: string }[]): string {
  return failures
    .map(({ url, reason }) => {
      const line = reason.replace(/[\r\n]+/g, ' ');
      return `${url}: ${line.length > MAX_REASON_CHARS ? `${line.slice(0, MAX_REASON_CHARS - 3)}...` : line}`;
    })
    .join('; ');
}
