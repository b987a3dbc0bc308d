// A TIME argument of the operator commands and the admin API (docs/cli.md): an ISO 8601
// time, or a duration back from now written as in the config (`30m`, `2h`, `7d`). Pure.
import { formatTimestamp, parseTimestamp } from '../calls/index.js';
import { parseDuration } from './duration.js';

/** What to give instead of a TIME that is not one. */
export const TIME_ARGUMENT_HELP = 'give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d), not before 1970-01-01';

/**
 * Epoch milliseconds for `text` read against `nowMs`; undefined when it is neither form or
 * falls before 1970-01-01T00:00:00Z. NOTE: Kafka reads a negative time in a ListOffsets
 * request as "the end" (-1) or "the start" (-2) of a partition, and refuses the others;
 * no record of ours is that old, so such a time is refused here, before it reaches Kafka.
 */
export function parseTimeArgument(text: string, nowMs: number): number | undefined {
  const back = parseDuration(text);
  const at = back !== undefined ? nowMs - back : parseTimestamp(text);
  return at !== undefined && at >= 0 ? at : undefined;
}

/** A `since`/`until` pair in epoch milliseconds; an absent bound leaves that side open. */
export interface TimeBounds {
  sinceMs?: number;
  untilMs?: number;
}

/**
 * `since` and `until` read against `nowMs` (an absent one leaves its side open; an empty one
 * is not a time: a replay whose `--since=$SINCE` lost its value must not take every letter);
 * refuses an empty range, which would match nothing by mistake. `label` names a bound in
 * the messages as its reader wrote it: `--since` on the command line, `since` in the admin API.
 */
export function parseTimeBounds(
  values: { since?: string | undefined; until?: string | undefined },
  nowMs: number,
  label: (bound: 'since' | 'until') => string,
): { ok: true; value: TimeBounds } | { ok: false; message: string } {
  const range: TimeBounds = {};
  for (const bound of ['since', 'until'] as const) {
    const text = values[bound];
    if (text === undefined) continue;
    const at = parseTimeArgument(text, nowMs);
    if (at === undefined) return { ok: false, message: `${label(bound)} ${JSON.stringify(text)} is not a time: ${TIME_ARGUMENT_HELP}` };
    range[bound === 'since' ? 'sinceMs' : 'untilMs'] = at;
  }
  if (range.sinceMs !== undefined && range.untilMs !== undefined && range.sinceMs >= range.untilMs) {
    return {
      ok: false,
      message: `${label('since')} (${formatTimestamp(range.sinceMs)}) is not before ${label('until')} (${formatTimestamp(range.untilMs)}): swap them or widen the range`,
    };
  }
  return { ok: true, value: range };
}
