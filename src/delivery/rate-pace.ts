// A destination's `rateLimit`, if any, as its lane applies it: one token bucket per
// lane (token-bucket.ts), new when the configured limit changes.
import type { PreparedDestination } from './destination-settings.js';
import { TokenBucket } from '../limits/token-bucket.js';

export class RatePace {
  private bucket: TokenBucket | undefined;

  /** `maxSlowSpellMs`: how long a 429's slow-down may last at most (the retry window). */
  constructor(private readonly maxSlowSpellMs: number) {}

  /** How long to wait before `requests` requests may go out (0: at once); the tokens are reserved. */
  reserve(settings: PreparedDestination, requests: number, nowMs: number): number {
    if (requests === 0) return 0;
    return this.bucketFor(settings)?.reserve(requests, nowMs) ?? 0;
  }

  /** NOTE: a 429 with Retry-After slows the destination's pace until it has passed. */
  slowDown(untilMs: number, nowMs: number): void {
    this.bucket?.slowDown(untilMs, nowMs);
  }

  private bucketFor(settings: PreparedDestination): TokenBucket | undefined {
    const limit = settings.rateLimit;
    if (limit === undefined) return (this.bucket = undefined);
    const bucket = this.bucket;
    if (bucket?.limit.requestsPerSecond !== limit.requestsPerSecond || bucket.limit.burst !== limit.burst) {
      this.bucket = new TokenBucket(limit, Date.now(), this.maxSlowSpellMs);
    }
    return this.bucket;
  }
}
