// Durations in config are strings with a unit ("10s", "1.5m", "30d") so that a bare
// number can never be misread as seconds when milliseconds were meant, or vice versa.

const UNIT_MS = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
} as const;

type Unit = keyof typeof UNIT_MS;

// Largest first: formatDuration picks the largest unit that divides evenly.
const UNITS_DESCENDING: readonly Unit[] = ['d', 'h', 'm', 's', 'ms'];

export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Milliseconds for `500ms`, `10s`, `1.5s`, `1m`, `4h`, `30d`; `undefined` for anything
 * else (no sign, no spaces, no bare numbers, no other units). A result must be a whole
 * number of milliseconds: timers and Kafka headers work in whole milliseconds, and a
 * silently rounded `0.5ms` would not be what the operator wrote.
 */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text);
  if (!match) return undefined;
  const [, amount, unit] = match as unknown as [string, string, Unit];
  const exact = Number(amount) * UNIT_MS[unit];
  // NOTE: 1.1 * 1000 is 1100.0000000000002 in binary floating point, so compare with a
  // tolerance far below one millisecond instead of demanding an exact integer.
  const ms = Math.round(exact);
  if (Math.abs(exact - ms) > 1e-6 || !Number.isSafeInteger(ms)) return undefined;
  return ms;
}

/**
 * The shortest exact text for `ms` in the largest unit that divides it
 * (`5000` → `5s`, `90000` → `90s`, `1500` → `1500ms`), so the output always parses back
 * to the same value with parseDuration. Values that cannot be written as a duration
 * (negative, fractional, not finite) are printed as plain milliseconds.
 */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms <= 0) return `${ms}ms`;
  for (const unit of UNITS_DESCENDING) {
    if (ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
