// Retry tiers: `delivery.retryTiers` for every destination, and a destination's own
// `settings.retry` (docs/webhooks.md#retry-policy-per-destination).

import { checkInt, checkList } from './basic-checks.js';
import { describe, fail, ok, withInput } from './check.js';
import type { Checked } from './check.js';
import { checkDuration, checkDurationBetween } from './quantities.js';
import { field, strictObject } from './zod-fields.js';

export interface RetryTier {
  /** As written in the config, e.g. "10s"; it is part of the retry topic's name. */
  name: string;
  ms: number;
}

export const DEFAULT_RETRY_TIERS: readonly string[] = ['10s', '1m', '10m', '1h'];

export const retryTiers = field(
  checkList(
    (value): Checked<RetryTier> => {
      const ms = checkDuration(value);
      return ms.ok ? ok({ name: value as string, ms: ms.value }) : ms;
    },
    { min: 1 },
  ),
  { type: 'array', minItems: 1, items: checkDuration.input },
);

/**
 * `settings.retry` (docs/webhooks.md#retry-policy-per-destination): only what the config
 * sets. YAML key `maxWindow` becomes `maxWindowMs`.
 */
export interface RetryConfig {
  tiers?: RetryTier[];
  maxWindowMs?: number;
  /** HTTP statuses made permanent at once (e.g. 410), over Segment's rules. */
  stopOn?: number[];
}

/** The longest retry window a destination may be given (`settings.retry.maxWindow`). */
export const MAX_DESTINATION_RETRY_WINDOW_MS = 30 * 86_400_000;

/** A status `settings.retry.stopOn` may list: 2xx are delivered and 1xx/3xx are never retried, so only 4xx and 5xx. */
const checkStopOnStatus = withInput(checkInt(400, 599).input!, (value: unknown): Checked<number> => {
  const n = checkInt(400, 599)(value);
  if (n.ok) return n;
  return fail(`must be an HTTP status from 400 to 599 (such as 410) that should dead-letter at once, got ${describe(value)}`);
});

export const retrySchema = strictObject({
  tiers: retryTiers.optional(),
  maxWindow: field(checkDurationBetween(1_000, MAX_DESTINATION_RETRY_WINDOW_MS)).optional(),
  stopOn: field(checkList(checkStopOnStatus)).optional(),
}).transform((r): RetryConfig => {
  const out: RetryConfig = {};
  if (r.tiers !== undefined) out.tiers = r.tiers;
  if (r.maxWindow !== undefined) out.maxWindowMs = r.maxWindow;
  if (r.stopOn !== undefined) out.stopOn = [...new Set(r.stopOn)];
  return out;
});
