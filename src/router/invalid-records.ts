// Why a record goes to `<prefix>calls.invalid` (the reason label and the `error`
// header's text); the record itself is written by src/runtime/invalid-record.ts.
import type { InvalidReason } from '../calls/index.js';

/** A record as the router consumed it: the port's inbound record. */
export type { InboundRecord } from '../kafka/index.js';

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

/** The record for `calls.invalid`: one writer for the router and the gateway (src/runtime/invalid-record.ts). */
export { invalidRecord } from '../runtime/invalid-record.js';

/** The invalid outcome for an exception thrown while handling a record: a bug, but never a crash or a loss. */
export function internalError(what: string, error: unknown): InvalidOutcome {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return invalid(
    'internal_error',
    `the router failed on this ${what} (${detail}); it is kept here unchanged: report it with this record and produce it again once fixed`,
  );
}
