/** Retry timing: pure, so the schedule is tested without a clock or a socket. */

/** NOTE: a server asking for more than this is capped, so one odd header cannot stall a client for hours. */
export const MAX_RETRY_AFTER_MS = 300_000;

/**
 * The wait before retry number `retry` (1 for the first retry): exponential from
 * `minMs`, capped at `maxMs`, with "equal jitter" (a random point in the upper half),
 * so that many clients failing together do not retry together yet never retry at once.
 */
export function backoffMs(retry: number, minMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, minMs * 2 ** Math.max(0, retry - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * A `Retry-After` header value in milliseconds: delay-seconds (`120`) or an HTTP date
 * (`Wed, 21 Oct 2026 07:28:00 GMT`), capped at MAX_RETRY_AFTER_MS; `undefined` when
 * absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (text === '') return undefined;
  let ms: number;
  if (/^\d+$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    // NOTE: HTTP dates start with the day name; Date.parse alone would read "-5" or "1.5" as dates.
    if (!/^[A-Za-z]{3},? /.test(text)) return undefined;
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  return Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS);
}
