// TIME arguments of `switchyard dlq list` and `replay` (docs/cli.md): an ISO 8601 time, or a
// duration back from now written as in the config (`30m`, `2h`, `7d`). Pure.
import { formatTimestamp } from '../calls/index.js';
import { parseTimeBounds } from '../config/time-argument.js';
import type { TimeRange } from '../delivery/dlq/dead-letters.js';

export type { TimeRange };

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** `--since` and `--until` together; refuses an empty range, which would match nothing by mistake. */
export function parseTimeRange(values: { since?: string | undefined; until?: string | undefined }, nowMs: number): Parsed<TimeRange> {
  return parseTimeBounds(values, nowMs, (bound) => `--${bound}`);
}

/** "dead-lettered since 2026-05-01T10:00:00.000Z", for messages; empty without a bound. */
export function describeTimeRange(range: TimeRange): string {
  const since = range.sinceMs === undefined ? undefined : formatTimestamp(range.sinceMs);
  const until = range.untilMs === undefined ? undefined : formatTimestamp(range.untilMs);
  if (since && until) return `dead-lettered from ${since} until ${until}`;
  if (since) return `dead-lettered since ${since}`;
  if (until) return `dead-lettered before ${until}`;
  return '';
}
