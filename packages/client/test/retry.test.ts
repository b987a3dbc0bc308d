import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, backoffMs, parseRetryAfter } from '../src/retry.js';

describe('backoffMs', () => {
  it.each([
    // retry, lowest (random 0), highest (random 1)
    [1, 50, 100],
    [2, 100, 200],
    [3, 200, 400],
    [10, 15_000, 30_000], // 100 × 2^9 = 51 200, capped at 30 000
    [60, 15_000, 30_000], // no overflow far out
  ])('retry %i waits %i–%i ms (min 100, max 30 000)', (retry, low, high) => {
    expect(backoffMs(retry, 100, 30_000, () => 0)).toBe(low);
    expect(backoffMs(retry, 100, 30_000, () => 1)).toBe(high);
    const any = backoffMs(retry, 100, 30_000);
    expect(any).toBeGreaterThanOrEqual(low);
    expect(any).toBeLessThanOrEqual(high);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-05-01T12:00:00.000Z');
  it.each([
    ['2', 2_000],
    [' 120 ', 120_000],
    ['0', 0],
    ['Fri, 01 May 2026 12:00:30 GMT', 30_000],
    ['Fri, 01 May 2026 11:00:00 GMT', 0], // in the past: at once
    ['86400', MAX_RETRY_AFTER_MS], // a day: capped
    ['soon', undefined],
    ['-5', undefined],
    ['1.5', undefined],
    ['', undefined],
    [null, undefined],
    [undefined, undefined],
  ])('%j → %j ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
