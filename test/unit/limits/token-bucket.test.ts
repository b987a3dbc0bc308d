import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../../src/limits/token-bucket.js';

/** The waits `reserve` hands out for requests asked for at the given times (n tokens each). */
function waits(bucket: TokenBucket, asks: [at: number, n: number][]): number[] {
  return asks.map(([at, n]) => bucket.reserve(n, at));
}

describe('TokenBucket', () => {
  it.each<[string, { requestsPerSecond: number; burst: number }, [number, number][], number[]]>([
    ['the burst goes at once, then one per 1/rate', { requestsPerSecond: 10, burst: 3 }, [[0, 1], [0, 1], [0, 1], [0, 1], [0, 1]], [0, 0, 0, 100, 200]],
    ['callers asking at once are served in order: each later one waits longer', { requestsPerSecond: 20, burst: 1 }, [[0, 1], [0, 1], [0, 1], [0, 1]], [0, 50, 100, 150]],
    ['tokens come back with time, up to the burst', { requestsPerSecond: 10, burst: 2 }, [[0, 2], [100, 1], [10_000, 1], [10_000, 1], [10_000, 1]], [0, 0, 0, 0, 100]],
    ['an event to three URLs takes three tokens', { requestsPerSecond: 10, burst: 3 }, [[0, 3], [0, 3]], [0, 300]],
    ['a fractional rate: one request every 2 s', { requestsPerSecond: 0.5, burst: 1 }, [[0, 1], [0, 1], [1_000, 1]], [0, 2_000, 3_000]],
    ['a wait is rounded up to whole milliseconds', { requestsPerSecond: 3, burst: 1 }, [[0, 1], [0, 1]], [0, 334]],
  ])('%s', (_name, limit, asks, expected) => {
    expect(waits(new TokenBucket(limit, 0), asks)).toEqual(expected);
  });

  it('holds the configured rate over a long run of callers that wait as told', () => {
    const bucket = new TokenBucket({ requestsPerSecond: 20, burst: 1 }, 0);
    // Four partitions, each sending its next request as soon as its wait is over.
    const next = [0, 0, 0, 0];
    const sent: number[] = [];
    while (sent.length < 400) {
      const p = next.indexOf(Math.min(...next));
      const at = next[p]!;
      const wait = bucket.reserve(1, at);
      sent.push(at + wait);
      next[p] = at + wait;
    }
    sent.sort((a, b) => a - b);
    // 400 requests at 20/s: the last goes out at 19.95 s (the first one was free).
    expect(sent.at(-1)).toBeGreaterThanOrEqual(19_950);
    expect(sent.at(-1)).toBeLessThanOrEqual(19_960);
    // Never more than the burst plus the rate in any second.
    for (let start = 0; start < 19_000; start += 250) {
      expect(sent.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(21);
    }
  });

  describe('a 429 with Retry-After', () => {
    it('halves the pace until it has passed, then the configured rate is back', () => {
      const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 1 }, 0);
      expect(bucket.reserve(1, 0)).toBe(0);
      bucket.slowDown(5_000, 0);
      expect(bucket.rate(0)).toBe(5);
      expect(bucket.rate(4_999)).toBe(5);
      expect(bucket.rate(5_000)).toBe(10);
      // The token spent at 0 comes back at the slow pace: 200 ms instead of 100.
      expect(bucket.reserve(1, 0)).toBe(200);
      // After the Retry-After the bucket refills at the full rate again.
      expect(bucket.reserve(1, 10_000)).toBe(0);
      expect(bucket.reserve(1, 10_000)).toBe(100);
    });

    it('a wait that runs past the end of the slow spell is paced slow, then fast', () => {
      const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 1 }, 0);
      bucket.reserve(1, 0);
      bucket.slowDown(100, 0);
      // Debt of 1 token: 100 ms at 5/s earns 0.5, the other 0.5 takes 50 ms at 10/s.
      expect(bucket.reserve(1, 0)).toBe(150);
    });

    it('halves once per second at most (a burst of 429s counts once), never below 1/16 of the rate', () => {
      const bucket = new TokenBucket({ requestsPerSecond: 64, burst: 1 }, 0);
      bucket.slowDown(60_000, 0);
      bucket.slowDown(60_000, 10);
      bucket.slowDown(60_000, 999);
      expect(bucket.rate(1_000)).toBe(32);
      for (let s = 1; s <= 10; s++) bucket.slowDown(60_000, s * 1_000);
      expect(bucket.rate(11_000)).toBe(4);
    });

    it('a slow spell lasts at most the longest slow spell given (the retry window), whatever the Retry-After', () => {
      const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 1 }, 0, 60_000);
      // A receiver that answers "Retry-After: 31536000" (a year) once.
      bucket.slowDown(31_536_000_000, 0);
      expect(bucket.rate(59_999)).toBe(5);
      expect(bucket.rate(60_000)).toBe(10);
    });

    it('a later Retry-After extends the slow spell; an earlier one does not shorten it', () => {
      const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 1 }, 0);
      bucket.slowDown(5_000, 0);
      bucket.slowDown(2_000, 1_500);
      expect(bucket.rate(4_999)).toBeLessThan(10);
      bucket.slowDown(8_000, 3_000);
      expect(bucket.rate(7_999)).toBeLessThan(10);
      expect(bucket.rate(8_000)).toBe(10);
    });
  });

  it('refuses a rate or burst that cannot work', () => {
    expect(() => new TokenBucket({ requestsPerSecond: 0, burst: 1 }, 0)).toThrow(RangeError);
    expect(() => new TokenBucket({ requestsPerSecond: Number.NaN, burst: 1 }, 0)).toThrow(RangeError);
    expect(() => new TokenBucket({ requestsPerSecond: 1, burst: 0 }, 0)).toThrow(RangeError);
  });
});

describe('TokenBucket.msUntil and take (the gateway: refuse rather than wait)', () => {
  it('says how long until n tokens are there, taking nothing', () => {
    const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 3 }, 0);
    expect(bucket.msUntil(3, 0)).toBe(0);
    bucket.take(3, 0);
    expect(bucket.msUntil(1, 0)).toBe(100);
    expect(bucket.msUntil(1, 0)).toBe(100);
    expect(bucket.msUntil(2, 50)).toBe(150);
  });

  it('asks only for a full bucket for more than the burst, and the debt is earned back first', () => {
    const bucket = new TokenBucket({ requestsPerSecond: 10, burst: 3 }, 0);
    expect(bucket.msUntil(8, 0)).toBe(0);
    bucket.take(8, 0);
    // -5 tokens: 0.5 s to earn them back, then 0.1 s for one more.
    expect(bucket.msUntil(1, 0)).toBe(600);
    expect(bucket.msUntil(8, 0)).toBe(800);
  });
});
