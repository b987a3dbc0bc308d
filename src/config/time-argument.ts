// A TIME argument of the operator commands and the admin API (docs/cli.md): an ISO 8601
// time, or a duration back from now written as in the config (`30m`, `2h`, `7d`). Pure.
import { parseTimestamp } from '../calls/index.js';
import { parseDuration } from './duration.js';

/** What to give instead of a TIME that is not one. */
export const TIME_ARGUMENT_HELP = 'give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d)';

/** Epoch milliseconds for `text` read against `nowMs`; undefined when it is neither form. */
export function parseTimeArgument(text: string, nowMs: number): number | undefined {
  const back = parseDuration(text);
  if (back !== undefined) return nowMs - back;
  return parseTimestamp(text);
}
