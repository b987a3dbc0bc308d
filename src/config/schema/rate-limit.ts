// A destination's `settings.rateLimit`: paces its requests.

import { checkInt, checkPositiveNumber } from './basic-checks.js';
import { field, strictObject } from './zod-fields.js';

/** `settings.rateLimit`: paces a destination's requests (a token bucket per deliverer process). */
export interface RateLimitConfig {
  requestsPerSecond: number;
  /** Requests that may go at once after a quiet spell; by default one second's worth. */
  burst: number;
}

/** Most requests per second a rate limit may allow; more is no limit at all. */
const MAX_REQUESTS_PER_SECOND = 100_000;

export const rateLimitSchema = strictObject({
  requestsPerSecond: field(checkPositiveNumber(MAX_REQUESTS_PER_SECOND)),
  burst: field(checkInt(1, 1_000_000)).optional(),
}).transform(
  (r): RateLimitConfig => ({ requestsPerSecond: r.requestsPerSecond, burst: r.burst ?? Math.max(1, Math.ceil(r.requestsPerSecond)) }),
);
