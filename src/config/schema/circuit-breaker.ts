// `circuitBreaker` (docs/webhooks.md#circuit-breaker): in `delivery` for every destination,
// in a destination's settings for its own URLs.

import { checkFraction, checkInt } from './basic-checks.js';
import { fail, FROM_ENV } from './check.js';
import type { Checked } from './check.js';
import { checkDurationBetween } from './quantities.js';
import { field, strictObject } from './zod-fields.js';

/**
 * `circuitBreaker` (docs/webhooks.md#circuit-breaker): only what the config sets; the
 * rest are the defaults of src/delivery/circuit-breaker.ts. YAML keys `window`,
 * `failureRate`, `coolDown`, `maxCoolDown` become the `…Ms` and `failureRatio` fields.
 */
export interface CircuitBreakerConfig {
  windowMs?: number;
  minAttempts?: number;
  failureRatio?: number;
  unanswered?: number;
  coolDownMs?: number;
  maxCoolDownMs?: number;
}

/** A failure rate above 0, at most 1 (0.5: half of the window's attempts). */
function checkFailureRate(value: unknown): Checked<number> {
  const n = checkFraction(value);
  if (n.ok && n.value === 0) return fail('must be above 0 (0.5 opens a circuit when half of the attempts in the window failed), got 0');
  return n;
}
checkFailureRate.input = { anyOf: [{ type: 'number', exclusiveMinimum: 0, maximum: 1 }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };

/** Longest sliding window and cool-down a circuit breaker may be given. */
const MAX_CIRCUIT_WINDOW_MS = 3_600_000;
const MAX_CIRCUIT_COOL_DOWN_MS = 24 * 3_600_000;

export const circuitBreakerSchema = strictObject({
  window: field(checkDurationBetween(1_000, MAX_CIRCUIT_WINDOW_MS)).optional(),
  minAttempts: field(checkInt(1, 1_000_000)).optional(),
  failureRate: field(checkFailureRate).optional(),
  unanswered: field(checkInt(1, 1_000_000)).optional(),
  coolDown: field(checkDurationBetween(100, MAX_CIRCUIT_COOL_DOWN_MS)).optional(),
  maxCoolDown: field(checkDurationBetween(100, MAX_CIRCUIT_COOL_DOWN_MS)).optional(),
})
  .superRefine(
    (c, ctx) => {
      if (c.coolDown !== undefined && c.maxCoolDown !== undefined && c.maxCoolDown < c.coolDown) {
        ctx.addIssue({ code: 'custom', path: ['maxCoolDown'], message: 'is shorter than coolDown; the cool-down doubles from coolDown up to maxCoolDown, so give a maxCoolDown at least as long' });
      }
    },
  )
  .transform((c): CircuitBreakerConfig => {
    const out: CircuitBreakerConfig = {};
    if (c.window !== undefined) out.windowMs = c.window;
    if (c.minAttempts !== undefined) out.minAttempts = c.minAttempts;
    if (c.failureRate !== undefined) out.failureRatio = c.failureRate;
    if (c.unanswered !== undefined) out.unanswered = c.unanswered;
    if (c.coolDown !== undefined) out.coolDownMs = c.coolDown;
    if (c.maxCoolDown !== undefined) out.maxCoolDownMs = c.maxCoolDown;
    return out;
  });
