// Where an event that was not delivered goes next: a retry tier and its due time, or
// the dead-letter topic. Pure schedule maths, unit-tested on its own.
import type { RetryPolicy as DestinationRetryPolicy } from '../config/retry-policy.js';
import type { RetryTier } from '../config/schema.js';

/** What the schedule reads of a destination's policy (src/config/retry-policy.ts `retryPolicyOf`). */
export type RetryPolicy = Pick<DestinationRetryPolicy, 'tiers' | 'maxRetryWindowMs'>;

export type NextStep =
  | { kind: 'retry'; tier: RetryTier; dueAtMs: number }
  | { kind: 'dead-letter'; why: 'permanent' | 'window' };

export interface FailedAttempt {
  /** Attempts made so far, this one included (1 after the first). */
  attemptsMade: number;
  firstAttemptAtMs: number;
  /** When this attempt ended. */
  nowMs: number;
  /** Whether any URL failed in a way a later attempt may cure (fan-out.ts `EventSummary`). */
  worthRetrying: boolean;
  /** The longest `Retry-After` among the retryable answers. */
  retryAfterMs?: number;
}

/**
 * The n-th failed attempt goes to tier n (the last tier repeating), due after the
 * tier's delay or after `Retry-After` when that is later, but never past the end of the
 * window: the last try happens at the window's end, and a failure then is dead-lettered.
 *
 * A `Retry-After` longer than the tier's delay moves the event to the first later tier
 * whose delay covers it (its due time stays now + Retry-After). It is honoured up to the
 * policy's largest tier (docs/webhooks.md#retry-policy-per-destination): a receiver
 * asking for a day does not park an event beyond what its operator chose. NOTE: a lane holds a
 * retry tier's partition until its head message is due (retry-tier-wait.ts), so a
 * message due much later than its tier's delay would hold up the messages behind it; in
 * the tier that fits, due times stay roughly in order.
 */
export function planNextStep(attempt: FailedAttempt, policy: RetryPolicy): NextStep {
  if (!attempt.worthRetrying) return { kind: 'dead-letter', why: 'permanent' };
  const windowEndMs = attempt.firstAttemptAtMs + policy.maxRetryWindowMs;
  if (attempt.nowMs >= windowEndMs) return { kind: 'dead-letter', why: 'window' };
  const tiers = policy.tiers;
  if (tiers.length === 0) throw new RangeError('planNextStep: the retry policy has no tiers');

  const last = tiers.length - 1;
  const byAttempt = Math.min(Math.max(attempt.attemptsMade - 1, 0), last);
  const largestMs = Math.max(...tiers.map((t) => t.ms));
  const retryAfterMs = Math.min(attempt.retryAfterMs ?? 0, largestMs);
  const delayMs = Math.max(tiers[byAttempt]!.ms, retryAfterMs);
  let index = byAttempt;
  while (index < last && tiers[index]!.ms < delayMs) index += 1;
  return { kind: 'retry', tier: tiers[index]!, dueAtMs: Math.min(attempt.nowMs + delayMs, windowEndMs) };
}
