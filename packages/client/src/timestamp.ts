/**
 * ISO 8601 timestamps as Segment clients send them, to and from epoch milliseconds: a
 * copy of the daemon's src/calls/timestamp.ts (see call-model.ts for why;
 * test/unit/client/timestamp-agreement.test.ts, in the repository, keeps them equal).
 *
 * Hand-written rather than `Date.parse`: `Date.parse` accepts far more than ISO 8601
 * (and what it accepts varies), reads a zone-less date-time as local time, rolls
 * 2026-02-30 over to March 2, and cannot read the Go library's `+0000` offsets.
 */

const MS_PER_MINUTE = 60_000;
const MS_PER_HOUR = 3_600_000;
const MS_PER_DAY = 86_400_000;

/** Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = month > 2 ? month - 3 : month + 9;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range with a four-digit year. */
export const MIN_TIMESTAMP_MS = daysFromCivil(1, 1, 1) * MS_PER_DAY;
export const MAX_TIMESTAMP_MS = daysFromCivil(10_000, 1, 1) * MS_PER_DAY - 1;

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
    return leap ? 29 : 28;
  }
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The value of the ASCII digit at `i`, or -1. */
function digit(text: string, i: number): number {
  const c = text.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/** Two digits at `i` as a number, or -1. */
function twoDigits(text: string, i: number): number {
  const a = digit(text, i);
  const b = digit(text, i + 1);
  return a < 0 || b < 0 ? -1 : a * 10 + b;
}

const DASH = 45; // -
const COLON = 58; // :
const DOT = 46; // .
const COMMA = 44; // ,
const PLUS = 43; // +
const SPACE = 32;
const UPPER_T = 84;
const LOWER_T = 116;
const UPPER_Z = 90;
const LOWER_Z = 122;

/**
 * Epoch milliseconds for an ISO 8601 / RFC 3339 date or date-time, or `undefined`.
 *
 * Accepted: `YYYY-MM-DD` (UTC midnight), or that followed by `T`, `t` or a space and
 * `hh:mm`, optionally `:ss`, optionally a fraction of 1–9 digits after `.` or `,`
 * (truncated to milliseconds), then `Z`/`z`, `±hh:mm`, `±hhmm` (the Go library's
 * `2009-11-10T23:00:00+0000`), `±hh`, or nothing.
 *
 * NOTE: a date-time without a zone is read as UTC. ISO 8601 calls it local time, but
 * the sender's locality is unknown here and the server's own zone would be a guess
 * that changes with the machine the daemon runs on.
 *
 * Rejected: anything else, impossible dates (month 13, Feb 30, hour 24, second 60),
 * and instants outside 0001-01-01T00:00:00.000Z – 9999-12-31T23:59:59.999Z, so that
 * {@link formatTimestamp} always yields the four-digit-year form.
 */
export function parseTimestamp(text: string): number | undefined {
  const n = text.length;
  // The longest accepted form: 2026-05-01T12:00:00.123456789+01:00 (35 characters).
  if (n < 10 || n > 35) return undefined;

  const y1 = twoDigits(text, 0);
  const y2 = twoDigits(text, 2);
  if (y1 < 0 || y2 < 0 || text.charCodeAt(4) !== DASH || text.charCodeAt(7) !== DASH) {
    return undefined;
  }
  const year = y1 * 100 + y2;
  const month = twoDigits(text, 5);
  const day = twoDigits(text, 8);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    return undefined;
  }
  let ms = daysFromCivil(year, month, day) * MS_PER_DAY;
  if (n === 10) return ms;

  const sep = text.charCodeAt(10);
  if (sep !== UPPER_T && sep !== LOWER_T && sep !== SPACE) return undefined;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  if (hour < 0 || hour > 23 || text.charCodeAt(13) !== COLON || minute < 0 || minute > 59) {
    return undefined;
  }
  ms += hour * MS_PER_HOUR + minute * MS_PER_MINUTE;

  let i = 16;
  if (text.charCodeAt(i) === COLON) {
    const second = twoDigits(text, i + 1);
    if (second < 0 || second > 59) return undefined;
    ms += second * 1000;
    i += 3;
    const mark = text.charCodeAt(i);
    if (mark === DOT || mark === COMMA) {
      i += 1;
      const start = i;
      let millis = 0;
      while (i < n) {
        const d = digit(text, i);
        if (d < 0) break;
        // Digits past the third are read (so they are validated) but truncated.
        if (i - start < 3) millis = millis * 10 + d;
        i += 1;
      }
      const digits = i - start;
      if (digits < 1 || digits > 9) return undefined;
      for (let k = digits; k < 3; k++) millis *= 10;
      ms += millis;
    }
  }

  if (i < n) {
    const zone = text.charCodeAt(i);
    if (zone === UPPER_Z || zone === LOWER_Z) {
      if (i + 1 !== n) return undefined;
    } else if (zone === PLUS || zone === DASH) {
      const offsetHours = twoDigits(text, i + 1);
      if (offsetHours < 0 || offsetHours > 23) return undefined;
      i += 3;
      let offsetMinutes = 0;
      if (i < n) {
        if (text.charCodeAt(i) === COLON) i += 1;
        offsetMinutes = twoDigits(text, i);
        if (offsetMinutes < 0 || offsetMinutes > 59 || i + 2 !== n) return undefined;
      }
      const offset = offsetHours * MS_PER_HOUR + offsetMinutes * MS_PER_MINUTE;
      // Local time = UTC + offset, so UTC = local − offset.
      ms = zone === PLUS ? ms - offset : ms + offset;
    } else {
      return undefined;
    }
  }

  return ms < MIN_TIMESTAMP_MS || ms > MAX_TIMESTAMP_MS ? undefined : ms;
}

/** `2026-05-01T12:00:00.000Z`: UTC with milliseconds. Throws RangeError for a non-finite value. */
export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString();
}
