// What goes to `<prefix>calls.invalid`: the record exactly as it came (bytes, key,
// headers, timestamp) plus an `error` header that says what is wrong and what to do.
// The one writer of such records: the router (records it consumed) and the gateway
// (calls and bodies it refused) both build them here.
import type { OutboundRecord, RecordHeaders } from '../kafka/index.js';
import { HEADER } from './headers.js';

/** A record as it came, or as it would have gone to `calls`. */
export interface OriginalRecord {
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: RecordHeaders | undefined;
  /** Epoch ms as a decimal string. */
  timestamp: string;
}

/**
 * The record for `calls.invalid`. The original headers are kept; an `error` header
 * already there (a record that went round once) is replaced by this one.
 */
export function invalidRecord(record: OriginalRecord, error: string): OutboundRecord {
  return {
    key: record.key,
    value: record.value,
    headers: { ...record.headers, [HEADER.error]: error },
    timestamp: record.timestamp,
  };
}
