// A destination's `settings.autoDisable` (docs/webhooks.md#automatic-disabling).

import { checkInt } from './basic-checks.js';
import { checkDurationBetween } from './quantities.js';
import { field, strictObject } from './zod-fields.js';

/**
 * `settings.autoDisable` (docs/webhooks.md#automatic-disabling): a destination none of whose
 * attempts succeeded for `afterMs`, with at least `minAttempts` attempts, is disabled. YAML key `after`.
 */
export interface AutoDisableConfig {
  afterMs: number;
  minAttempts: number;
}

/** The longest `settings.autoDisable.after`; the shortest is a second (tests and demos). */
export const MAX_AUTO_DISABLE_AFTER_MS = 90 * 86_400_000;
/** `settings.autoDisable.minAttempts` when not given. */
export const DEFAULT_AUTO_DISABLE_MIN_ATTEMPTS = 1;

export const autoDisableSchema = strictObject({
  after: field(checkDurationBetween(1_000, MAX_AUTO_DISABLE_AFTER_MS)),
  minAttempts: field(checkInt(1, 1_000_000_000)).prefault(DEFAULT_AUTO_DISABLE_MIN_ATTEMPTS),
}).transform((a): AutoDisableConfig => ({ afterMs: a.after, minAttempts: a.minAttempts }));
