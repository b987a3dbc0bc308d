// What goes to `<prefix>calls.invalid`: the record exactly as it came (bytes, key,
// headers, timestamp) plus an `error` header that says what is wrong and what to do.
import type { InvalidReason } from '../calls/index.js';
import { HEADER } from '../kafka/index.js';
import type { OutboundRecord, RecordHeaders } from '../kafka/index.js';

/** A record as the router consumed it. */
export interface InboundRecord {
  topic: string;
  partition: number;
  offset: string;
  /** Epoch ms as kafkajs gives it (a string). */
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: RecordHeaders;
}

/** The `reason` label of switchyard_calls_invalid_total. */
export type InvalidRecordReason =
  | InvalidReason
  /** The `source-id` header or the `writeKey` names no configured source. */
  | 'unknown_source'
  /** Neither a `source-id` header nor a `writeKey`. */
  | 'missing_source'
  /** A record on `deletions` that is not a usable deletion request. */
  | 'bad_deletion_request'
  /** The router failed on this record (a bug); kept so nothing is lost. */
  | 'internal_error';

export interface InvalidOutcome {
  kind: 'invalid';
  reason: InvalidRecordReason;
  /** For a person: what is wrong, where, and what to do. Goes into the `error` header. */
  error: string;
}

export function invalid(reason: InvalidRecordReason, error: string): InvalidOutcome {
  return { kind: 'invalid', reason, error };
}

/**
 * The record for `calls.invalid`. The original headers are kept; an `error` header
 * already there (a record that went round once) is replaced by this one.
 */
export function invalidRecord(record: InboundRecord, error: string): OutboundRecord {
  return {
    key: record.key,
    value: record.value,
    headers: { ...record.headers, [HEADER.error]: error },
    timestamp: record.timestamp,
  };
}

/** The invalid outcome for an exception thrown while handling a record: a bug, but never a crash or a loss. */
export function internalError(what: string, error: unknown): InvalidOutcome {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return invalid(
    'internal_error',
    `the router failed on this ${what} (${detail}); it is kept here unchanged: report it with this record and produce it again once fixed`,
  );
}
