// A token bucket: a destination's rate limit (`settings.rateLimit`) in front of its
// sender (src/delivery/rate-pace.ts), and a source's limits at the gateway
// (src/limits/source-limits.ts). Pure: the clock comes in as `nowMs`
// (test/unit/limits/token-bucket.test.ts).
import type { RateLimitConfig } from '../config/schema.js';

/** Each 429 with Retry-After halves the pace, down to this share of the configured rate. */
const SLOWEST_SHARE = 1 / 16;
const HALVE_AT_MOST_EVERY_MS = 1_000;

/**
 * Tokens are reserved, not just taken: `reserve` always succeeds and says how long to
 * wait before sending, running the bucket into debt when it is empty. NOTE: so callers
 * that wait at once (the partitions of a destination) are served in the order they
 * asked and the pace holds exactly, without a queue or a timer in here.
 *
 * A receiver that answers 429 with `Retry-After` gets a slower pace (`slowDown`) until
 * the latest such Retry-After has passed, or `maxSlowSpellMs` (the retry window) has:
 * then the configured rate is back. NOTE: without that cap, one 429 saying
 * "Retry-After: 31536000" would hold the destination at half pace for a year.
 */
export class TokenBucket {
  private tokens: number;
  private updatedMs: number;
  private slowRate: number;
  private slowUntilMs = 0;
  private lastSlowDownMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly limit: RateLimitConfig,
    nowMs: number,
    private readonly maxSlowSpellMs = Number.POSITIVE_INFINITY,
  ) {
    if (!(limit.requestsPerSecond > 0) || !Number.isFinite(limit.requestsPerSecond)) {
      throw new RangeError(`TokenBucket: requestsPerSecond must be a positive number, got ${limit.requestsPerSecond}`);
    }
    if (!(limit.burst >= 1)) throw new RangeError(`TokenBucket: burst must be at least 1, got ${limit.burst}`);
    this.tokens = limit.burst;
    this.updatedMs = nowMs;
    this.slowRate = limit.requestsPerSecond;
  }

  /** Requests per second in force at `nowMs`. */
  rate(nowMs: number): number {
    return nowMs < this.slowUntilMs ? this.slowRate : this.limit.requestsPerSecond;
  }

  /** Takes `n` tokens; returns how many milliseconds to wait before sending (0: now). */
  reserve(n: number, nowMs: number): number {
    this.refill(nowMs);
    this.tokens -= n;
    if (this.tokens >= 0) return 0;
    return Math.ceil(this.msToEarn(-this.tokens, nowMs));
  }

  /**
   * Milliseconds until `n` tokens could be taken (0: now). A request larger than the
   * bucket may be taken once the bucket is full; the debt it leaves is earned back at the
   * rate before the next one. NOTE: so a burst of 1 call can still admit a batch of 100.
   */
  msUntil(n: number, nowMs: number): number {
    this.refill(nowMs);
    const needed = Math.min(n, this.limit.burst);
    if (this.tokens >= needed) return 0;
    return Math.ceil(this.msToEarn(needed - this.tokens, nowMs));
  }

  /** Takes `n` tokens (the caller checked msUntil first); the bucket may go into debt. */
  take(n: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokens -= n;
  }

  /**
   * A 429 with Retry-After: half the pace until `untilMs` (a later one extends it).
   * NOTE: the requests in flight when a receiver starts refusing all come back 429 at
   * once; halving once per second keeps a burst of them from counting as many.
   */
  slowDown(untilMs: number, nowMs: number): void {
    this.refill(nowMs);
    if (nowMs - this.lastSlowDownMs >= HALVE_AT_MOST_EVERY_MS) {
      this.slowRate = Math.max(this.limit.requestsPerSecond * SLOWEST_SHARE, this.rate(nowMs) / 2);
      this.lastSlowDownMs = nowMs;
    }
    this.slowUntilMs = Math.max(this.slowUntilMs, Math.min(untilMs, nowMs + this.maxSlowSpellMs));
  }

  /** Earns tokens for the time since the last update, at the rate in force then. */
  private refill(nowMs: number): void {
    if (nowMs <= this.updatedMs) return;
    let earned: number;
    if (this.updatedMs < this.slowUntilMs && nowMs > this.slowUntilMs) {
      earned = ((this.slowUntilMs - this.updatedMs) * this.slowRate + (nowMs - this.slowUntilMs) * this.limit.requestsPerSecond) / 1000;
    } else {
      earned = ((nowMs - this.updatedMs) * this.rate(this.updatedMs)) / 1000;
    }
    this.tokens = Math.min(this.limit.burst, this.tokens + earned);
    this.updatedMs = nowMs;
  }

  /** Time to earn `debt` tokens from `nowMs`, across the end of a slow spell. */
  private msToEarn(debt: number, nowMs: number): number {
    if (nowMs < this.slowUntilMs) {
      const slowMs = this.slowUntilMs - nowMs;
      const earnedSlow = (slowMs * this.slowRate) / 1000;
      if (earnedSlow >= debt) return (debt / this.slowRate) * 1000;
      return slowMs + ((debt - earnedSlow) / this.limit.requestsPerSecond) * 1000;
    }
    return (debt / this.limit.requestsPerSecond) * 1000;
  }
}
