// What an operator sees of one dead letter (`switchyard dlq list`, `replay`): when it was
// dead-lettered, its message id, attempts and the reason per URL. Pure.
import { formatTimestamp, parseTimestamp } from '../../calls/index.js';
import type { RecordHeaders } from '../../kafka/index.js';
import type { TimeBounds } from '../../config/time-argument.js';
import { HEADER, headerText } from '../../runtime/headers.js';

/**
 * Dead-lettering times to keep: `sinceMs <= t < untilMs`; an absent bound is open. The
 * pair the operator commands and the admin API read (config/time-argument.ts).
 */
export type TimeRange = TimeBounds;

export function inTimeRange(range: TimeRange, ms: number | undefined): boolean {
  if (range.sinceMs === undefined && range.untilMs === undefined) return true;
  if (ms === undefined) return false;
  return (range.sinceMs === undefined || ms >= range.sinceMs) && (range.untilMs === undefined || ms < range.untilMs);
}

export interface DeadLetter {
  messageId: string | null;
  /** `last-attempt-at`, else the record's Kafka timestamp. */
  deadLetteredAtMs: number | undefined;
  attempts: number | null;
  /** The `error` header: `<url>: <reason>` per URL, joined by "; ". */
  error: string | null;
  partition: number;
  offset: bigint;
}

/** Where a letter stands in the order of compareByTime: what a page of letters continues after. */
export type LetterPosition = Pick<DeadLetter, 'deadLetteredAtMs' | 'partition' | 'offset'>;

export interface DeadLetterRecord {
  partition: number;
  offset: bigint;
  value: Buffer | null;
  headers: RecordHeaders | undefined;
  timestamp: string;
}

/** The message id from the header; else from the body, for letters written by hand or by an older version. */
function messageIdOf(record: DeadLetterRecord): string | null {
  const header = headerText(record.headers, HEADER.messageId);
  if (header !== undefined && header !== '') return header;
  if (record.value === null) return null;
  try {
    const body = JSON.parse(record.value.toString('utf8')) as { messageId?: unknown };
    return typeof body.messageId === 'string' ? body.messageId : null;
  } catch {
    return null;
  }
}

export function readDeadLetter(record: DeadLetterRecord): DeadLetter {
  const lastAttempt = headerText(record.headers, HEADER.lastAttemptAt);
  const recordMs = Number(record.timestamp);
  const deadLetteredAtMs =
    (lastAttempt === undefined ? undefined : parseTimestamp(lastAttempt)) ?? (Number.isSafeInteger(recordMs) && recordMs > 0 ? recordMs : undefined);
  const attemptText = headerText(record.headers, HEADER.attempt);
  const error = headerText(record.headers, HEADER.error);
  return {
    messageId: messageIdOf(record),
    deadLetteredAtMs,
    attempts: attemptText !== undefined && /^\d{1,9}$/.test(attemptText) ? Number(attemptText) : null,
    error: error === undefined || error === '' ? null : error,
    partition: record.partition,
    offset: record.offset,
  };
}

/**
 * The order `dlq list` prints letters in (docs/cli.md#operator-commands): oldest first by
 * dead-lettering time, letters without a time last; ties by partition, then offset.
 */
export function compareByTime(a: LetterPosition, b: LetterPosition): number {
  const at = a.deadLetteredAtMs ?? Number.POSITIVE_INFINITY;
  const bt = b.deadLetteredAtMs ?? Number.POSITIVE_INFINITY;
  if (at !== bt) return at < bt ? -1 : 1;
  if (a.partition !== b.partition) return a.partition - b.partition;
  return a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0;
}

/**
 * Collects letters read in any order (partitions interleave, and a partition's letters
 * are in the order they were written, not strictly by time) and gives back the `limit`
 * oldest, oldest first; every one without a limit.
 * NOTE: with a limit it holds at most twice that many at once (it drops the newer half
 * when full); without one, every letter added, until the end.
 */
export class OldestLetters<T extends { letter: DeadLetter }> {
  private kept: T[] = [];
  /** How many letters were added in all. */
  seen = 0;

  constructor(private readonly limit = Number.POSITIVE_INFINITY) {}

  add(entry: T): void {
    this.seen += 1;
    if (this.limit <= 0) return;
    this.kept.push(entry);
    if (this.kept.length >= 2 * this.limit) this.trim();
  }

  /** How many letters it holds now. */
  get held(): number {
    return this.kept.length;
  }

  /** The kept letters, oldest first. */
  oldest(): T[] {
    this.trim();
    return this.kept;
  }

  private trim(): void {
    this.kept.sort((a, b) => compareByTime(a.letter, b.letter));
    if (this.kept.length > this.limit) this.kept.length = this.limit;
  }
}

/** One letter as `dlq list --json` and `GET /v1/dead-letters` give it, with the keys in the order of docs/cli.md. */
export function deadLetterFields(letter: DeadLetter): { messageId: string | null; deadLetteredAt: string | null; attempts: number | null; error: string | null; offset: number; partition: number } {
  return {
    messageId: letter.messageId,
    deadLetteredAt: letter.deadLetteredAtMs === undefined ? null : formatTimestamp(letter.deadLetteredAtMs),
    attempts: letter.attempts,
    error: letter.error,
    offset: Number(letter.offset),
    partition: letter.partition,
  };
}

/** One line of `dlq list --json`. */
export function deadLetterJson(letter: DeadLetter): string {
  return JSON.stringify(deadLetterFields(letter));
}

/** One line for a person: time, message id, attempts, where, and why. */
export function deadLetterLine(letter: DeadLetter, note?: string): string {
  const at = letter.deadLetteredAtMs === undefined ? '(no time)' : formatTimestamp(letter.deadLetteredAtMs);
  const attempts = letter.attempts === null ? '?' : String(letter.attempts);
  return [
    at,
    letter.messageId ?? '(no message id)',
    `attempts=${attempts}`,
    `partition=${letter.partition}`,
    `offset=${letter.offset}`,
    ...(note ? [note] : []),
    `error=${letter.error ?? '(none)'}`,
  ].join('  ');
}
