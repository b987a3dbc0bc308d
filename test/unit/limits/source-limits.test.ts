import { describe, expect, it } from 'vitest';
import { SourceLimiter, retryAfterSeconds } from '../../../src/limits/source-limits.js';

const T0 = 1_000_000;
// 10 calls and 1,000 bytes a second, 2 s of each at once.
const LIMITS = { callsPerSecond: 10, bytesPerSecond: 1_000, burst: 2 };

describe('SourceLimiter', () => {
  it('admits up to the burst of calls, then refuses with the time until one more passes', () => {
    const limiter = new SourceLimiter();
    for (let i = 0; i < 20; i++) expect(limiter.take('web', LIMITS, 1, 10, T0)).toEqual({ ok: true });
    expect(limiter.take('web', LIMITS, 1, 10, T0)).toEqual({ ok: false, limit: 'calls', retryAfterMs: 100 });
    expect(limiter.take('web', LIMITS, 1, 10, T0 + 100)).toEqual({ ok: true });
  });

  it('refuses over the bytes, and a refused request takes nothing from either bucket', () => {
    const limiter = new SourceLimiter();
    expect(limiter.take('web', LIMITS, 1, 1_500, T0)).toEqual({ ok: true });
    expect(limiter.take('web', LIMITS, 1, 600, T0)).toEqual({ ok: false, limit: 'bytes', retryAfterMs: 100 });
    // Nothing was taken by the refusal: 19 calls and 500 bytes are left.
    expect(limiter.take('web', LIMITS, 19, 500, T0)).toEqual({ ok: true });
    expect(limiter.take('web', LIMITS, 1, 0, T0)).toMatchObject({ ok: false, limit: 'calls' });
  });

  it('admits a request larger than the burst on full buckets; the debt refuses the next until earned back', () => {
    const limiter = new SourceLimiter();
    expect(limiter.take('web', LIMITS, 50, 10, T0)).toEqual({ ok: true });
    // 30 calls owed at 10 a second, then one more call: 3.1 s.
    expect(limiter.check('web', LIMITS, T0)).toEqual({ ok: false, limit: 'calls', retryAfterMs: 3_100 });
    expect(limiter.check('web', LIMITS, T0 + 3_100)).toEqual({ ok: true });
  });

  it('keeps each source apart, and starts full buckets when its limits change', () => {
    const limiter = new SourceLimiter();
    expect(limiter.take('web', LIMITS, 20, 0, T0)).toEqual({ ok: true });
    expect(limiter.check('web', LIMITS, T0).ok).toBe(false);
    expect(limiter.check('ios', LIMITS, T0)).toEqual({ ok: true });
    expect(limiter.check('web', { ...LIMITS }, T0).ok).toBe(false);
    expect(limiter.check('web', { ...LIMITS, callsPerSecond: 20 }, T0)).toEqual({ ok: true });
  });

  it('uses the default limits when none are given, and forgets removed sources', () => {
    const limiter = new SourceLimiter();
    // 2,000 calls a second for 5 s.
    expect(limiter.take('web', undefined, 10_000, 0, T0)).toEqual({ ok: true });
    expect(limiter.check('web', undefined, T0)).toMatchObject({ ok: false, limit: 'calls' });
    limiter.keepOnly(new Set(['ios']));
    expect(limiter.check('web', undefined, T0)).toEqual({ ok: true });
  });
});

describe('retryAfterSeconds', () => {
  it.each([
    [0, 1],
    [1, 1],
    [1_000, 1],
    [1_001, 2],
    [39_500, 40],
  ])('%d ms → %d s', (ms, seconds) => {
    expect(retryAfterSeconds(ms)).toBe(seconds);
  });
});
