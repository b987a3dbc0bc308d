// A source's limits at the gateway (`sources[].limits`, docs/configuration.md#sources):
// calls and bytes written per second, each a token bucket holding `burst` seconds of its
// rate. A request over either is refused whole (429, nothing written) with the time
// after which it would pass. Per gateway process; the limits are read live, so a reload
// applies to the next request (a source whose limits changed starts with full buckets).
// Pure: the clock comes in as `nowMs` (test/unit/limits/source-limits.test.ts).
import { DEFAULT_SOURCE_LIMITS } from '../config/schema.js';
import type { SourceLimitsConfig } from '../config/schema.js';
import { TokenBucket } from './token-bucket.js';

export type LimitVerdict = { ok: true } | { ok: false; limit: 'calls' | 'bytes'; retryAfterMs: number };

interface SourceBuckets {
  limits: SourceLimitsConfig;
  calls: TokenBucket;
  bytes: TokenBucket;
}

const ADMITTED: LimitVerdict = { ok: true };

export class SourceLimiter {
  private readonly buckets = new Map<string, SourceBuckets>();

  /**
   * Before the body is read: refused while the source owes calls or bytes (an earlier
   * request took more than was left). Takes nothing.
   */
  check(sourceId: string, limits: SourceLimitsConfig | undefined, nowMs: number): LimitVerdict {
    return this.verdict(this.bucketsOf(sourceId, limits, nowMs), 1, 1, nowMs);
  }

  /** A request of `calls` calls writing `bytes` bytes: taken from both buckets when both allow it, else neither. */
  take(sourceId: string, limits: SourceLimitsConfig | undefined, calls: number, bytes: number, nowMs: number): LimitVerdict {
    const buckets = this.bucketsOf(sourceId, limits, nowMs);
    const verdict = this.verdict(buckets, calls, bytes, nowMs);
    if (!verdict.ok) return verdict;
    buckets.calls.take(calls, nowMs);
    buckets.bytes.take(bytes, nowMs);
    return verdict;
  }

  /** Forgets the sources not in `ids` (after a reload removed them). */
  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of this.buckets.keys()) if (!ids.has(id)) this.buckets.delete(id);
  }

  private verdict(buckets: SourceBuckets, calls: number, bytes: number, nowMs: number): LimitVerdict {
    const callsWait = buckets.calls.msUntil(calls, nowMs);
    const bytesWait = buckets.bytes.msUntil(bytes, nowMs);
    if (callsWait === 0 && bytesWait === 0) return ADMITTED;
    return callsWait >= bytesWait ? { ok: false, limit: 'calls', retryAfterMs: callsWait } : { ok: false, limit: 'bytes', retryAfterMs: bytesWait };
  }

  private bucketsOf(sourceId: string, configured: SourceLimitsConfig | undefined, nowMs: number): SourceBuckets {
    const limits = configured ?? DEFAULT_SOURCE_LIMITS;
    const known = this.buckets.get(sourceId);
    if (known !== undefined && sameLimits(known.limits, limits)) return known;
    const fresh: SourceBuckets = {
      limits,
      calls: new TokenBucket({ requestsPerSecond: limits.callsPerSecond, burst: Math.max(1, limits.callsPerSecond * limits.burst) }, nowMs),
      bytes: new TokenBucket({ requestsPerSecond: limits.bytesPerSecond, burst: Math.max(1, limits.bytesPerSecond * limits.burst) }, nowMs),
    };
    this.buckets.set(sourceId, fresh);
    return fresh;
  }
}

function sameLimits(a: SourceLimitsConfig, b: SourceLimitsConfig): boolean {
  return a === b || (a.callsPerSecond === b.callsPerSecond && a.bytesPerSecond === b.bytesPerSecond && a.burst === b.burst);
}

/** Retry-After in whole seconds, at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
