// A destination's `settings.batch` (docs/webhooks.md#batches): many events in one request.

import { checkInt, oneOf } from './basic-checks.js';
import { describe, fail, withInput } from './check.js';
import type { Checked } from './check.js';
import { formatDuration } from '../duration.js';
import { checkDuration, checkSize } from './quantities.js';
import { field, strictObject } from './zod-fields.js';

/** `settings.batch`: a request carries a JSON array of up to `maxEvents` bodies, `maxBytes` in all, closed `maxWait` after its first event. */
export interface BatchConfig {
  maxEvents: number;
  maxBytes: number;
  /** YAML key `maxWait`. */
  maxWaitMs: number;
  /** `json`: a JSON array of the bodies; `ndjson`: one body per line (`application/x-ndjson`). */
  format: BatchFormat;
}

export type BatchFormat = 'json' | 'ndjson';

/** The most events one batch request may carry (Segment's own batches go up to 4,000). */
export const MAX_BATCH_EVENTS = 4_000;
/** The largest batch body, and the smallest `maxBytes` (a bound below one ordinary event would make every batch one event). */
export const MAX_BATCH_BYTES = 4 * 1_048_576;
const MIN_BATCH_BYTES = 1_024;
/**
 * The longest `maxWait`. NOTE: the events of an open batch wait in the deliverer's memory,
 * taken from their partitions and not yet sent; a minute is already far past what a
 * receiver that batches for cost gains from waiting.
 */
export const MAX_BATCH_WAIT_MS = 60_000;

function checkDurationUpTo(maxMs: number) {
  return withInput(checkDuration.input!, (value: unknown): Checked<number> => {
    const ms = checkDuration(value);
    if (ms.ok && ms.value > maxMs) return fail(`${describe(value)} is longer than ${formatDuration(maxMs)}, the longest a batch may wait for more events; give a shorter duration`);
    return ms;
  });
}

export const batchSchema = strictObject({
  maxEvents: field(checkInt(1, MAX_BATCH_EVENTS)).prefault(100),
  maxBytes: field(checkSize(MIN_BATCH_BYTES, MAX_BATCH_BYTES)).prefault('512KB'),
  maxWait: field(checkDurationUpTo(MAX_BATCH_WAIT_MS)).prefault('1s'),
  format: field(oneOf(['json', 'ndjson'] as const)).prefault('json'),
}).transform((b): BatchConfig => ({ maxEvents: b.maxEvents, maxBytes: b.maxBytes, maxWaitMs: b.maxWait, format: b.format }));
