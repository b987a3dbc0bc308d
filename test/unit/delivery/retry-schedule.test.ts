import { describe, expect, it } from 'vitest';
import { planNextStep } from '../../../src/delivery/retry-schedule.js';
import type { RetryPolicy } from '../../../src/delivery/retry-schedule.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);

const policy: RetryPolicy = {
  tiers: [
    { name: '10s', ms: 10 * S },
    { name: '1m', ms: M },
    { name: '10m', ms: 10 * M },
    { name: '1h', ms: H },
  ],
  maxRetryWindowMs: 4 * H,
};

describe('planNextStep', () => {
  it.each([
    // attemptsMade, now (after T0), expected tier, due after now
    [1, 0, '10s', 10 * S],
    [2, 10 * S, '1m', M],
    [3, 70 * S, '10m', 10 * M],
    [4, 11 * M, '1h', H],
    [5, H + 11 * M, '1h', H], // the last tier repeats
    [9, 2 * H, '1h', H],
  ])('failure %i goes to tier %s', (attemptsMade, sinceFirst, tier, delay) => {
    const nowMs = T0 + sinceFirst;
    expect(planNextStep({ attemptsMade, firstAttemptAtMs: T0, nowMs, worthRetrying: true }, policy)).toEqual({
      kind: 'retry',
      tier: policy.tiers.find((t) => t.name === tier),
      dueAtMs: nowMs + delay,
    });
  });

  it('dead-letters a failure with nothing retryable at once', () => {
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: false }, policy)).toEqual({ kind: 'dead-letter', why: 'permanent' });
  });

  it('dead-letters once the window from the first attempt is over', () => {
    expect(planNextStep({ attemptsMade: 8, firstAttemptAtMs: T0, nowMs: T0 + 4 * H, worthRetrying: true }, policy)).toEqual({ kind: 'dead-letter', why: 'window' });
    expect(planNextStep({ attemptsMade: 8, firstAttemptAtMs: T0, nowMs: T0 + 5 * H, worthRetrying: true }, policy)).toEqual({ kind: 'dead-letter', why: 'window' });
  });

  it('never schedules past the window: the last try is at its end', () => {
    const nowMs = T0 + 4 * H - 5 * M;
    expect(planNextStep({ attemptsMade: 7, firstAttemptAtMs: T0, nowMs, worthRetrying: true }, policy)).toEqual({
      kind: 'retry',
      tier: policy.tiers[3],
      dueAtMs: T0 + 4 * H,
    });
  });

  it('honours a Retry-After later than the tier, in the first tier that covers it', () => {
    const step = planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: 30 * S }, policy);
    expect(step).toEqual({ kind: 'retry', tier: policy.tiers[1], dueAtMs: T0 + 30 * S });
  });

  it('a Retry-After shorter than the tier changes nothing', () => {
    const step = planNextStep({ attemptsMade: 2, firstAttemptAtMs: T0, nowMs: T0 + 10 * S, worthRetrying: true, retryAfterMs: 5 * S }, policy);
    expect(step).toEqual({ kind: 'retry', tier: policy.tiers[1], dueAtMs: T0 + 10 * S + M });
  });

  it('a Retry-After beyond every tier is honoured up to the largest tier, in the last tier', () => {
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: H }, policy)).toEqual({
      kind: 'retry',
      tier: policy.tiers[3],
      dueAtMs: T0 + H,
    });
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: 2 * H }, policy)).toEqual({
      kind: 'retry',
      tier: policy.tiers[3],
      dueAtMs: T0 + H,
    });
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: 9 * 24 * H }, policy)).toEqual({
      kind: 'retry',
      tier: policy.tiers[3],
      dueAtMs: T0 + H,
    });
  });

  it('caps a Retry-After by the policy it is given: a destination of its own tiers', () => {
    const own: RetryPolicy = { tiers: [{ name: '1s', ms: S }, { name: '5s', ms: 5 * S }], maxRetryWindowMs: H };
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: 120 * S }, own)).toEqual({
      kind: 'retry',
      tier: own.tiers[1],
      dueAtMs: T0 + 5 * S,
    });
  });

  it('the window still ends a Retry-After that the largest tier allows', () => {
    const short: RetryPolicy = { tiers: [{ name: '10s', ms: 10 * S }, { name: '1h', ms: H }], maxRetryWindowMs: 30 * M };
    expect(planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true, retryAfterMs: 2 * H }, short)).toEqual({
      kind: 'retry',
      tier: short.tiers[1],
      dueAtMs: T0 + 30 * M,
    });
  });

  it('works with one tier, and an attempt count of 0 is read as the first failure', () => {
    const one: RetryPolicy = { tiers: [{ name: '200ms', ms: 200 }], maxRetryWindowMs: 5 * S };
    expect(planNextStep({ attemptsMade: 0, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true }, one)).toEqual({ kind: 'retry', tier: one.tiers[0], dueAtMs: T0 + 200 });
    expect(planNextStep({ attemptsMade: 12, firstAttemptAtMs: T0, nowMs: T0 + 3 * S, worthRetrying: true }, one)).toEqual({ kind: 'retry', tier: one.tiers[0], dueAtMs: T0 + 3 * S + 200 });
  });

  it('refuses a policy without tiers', () => {
    expect(() => planNextStep({ attemptsMade: 1, firstAttemptAtMs: T0, nowMs: T0, worthRetrying: true }, { tiers: [], maxRetryWindowMs: H })).toThrow(/no tiers/);
  });
});
