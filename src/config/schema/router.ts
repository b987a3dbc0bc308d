// `router` (docs/configuration.md#router): how the router treats the calls it reads.

import { parseDuration } from '../duration.js';
import { describe, fail, ok, withInput } from './check.js';
import type { Checked } from './check.js';
import { checkDuration } from './quantities.js';
import { field, strictObject } from './zod-fields.js';

export interface RouterConfig {
  /** YAML `dedupeWindow`: copies of a call routed within it are dropped; 0 turns it off (docs/kafka.md#copies-of-a-call). Read at start. */
  dedupeWindowMs: number;
}

/** `router.dedupeWindow`: up to a day (docs/kafka.md#copies-of-a-call). */
export const MAX_DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A duration up to a day, or 0 (off). */
const checkDedupeWindow = withInput({ anyOf: [{ $ref: '#/$defs/duration' }, { const: 0 }] }, (value: unknown): Checked<number> => {
  if (value === 0 || value === '0') return ok(0);
  if (typeof value === 'string' && parseDuration(value) === 0) return ok(0);
  const checked = checkDuration(value);
  if (!checked.ok) return fail(`${describe(value)} is not a dedupe window; write a duration up to 24h, e.g. "1h", or 0 to turn deduplication off`);
  if (checked.value > MAX_DEDUPE_WINDOW_MS) return fail(`${describe(value)} is longer than 24h, the longest dedupe window; give a shorter duration, or 0 to turn deduplication off`);
  return checked;
});

export const routerSchema = strictObject({
  dedupeWindow: field(checkDedupeWindow).prefault('1h'),
}).transform((r): RouterConfig => ({ dedupeWindowMs: r.dedupeWindow }));
