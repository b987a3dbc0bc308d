// A TIME argument of the operator commands and the admin API (docs/cli.md): an ISO 8601
// time, or a duration back from now written as in the config (`30m`, `2h`, `7d`). Pure.
import { formatTimestamp, parseTimestamp } from '../calls/index.js';
import { parseDuration } from './duration.js';

/** What to give instead of a TIME that is not one. */
export const TIME_ARGUMENT_HELP = 'give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d)';

/** Epoch milliseconds for `text` read against `nowMs`; undefined when it is neither form. */
export function parseTimeArgument(text: string, nowMs: number): number | undefined {
  const back = parseDuration(text);
  if (back !== undefined) return nowMs - back;
  return parseTimestamp(text);
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
