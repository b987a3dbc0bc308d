// The client package keeps its own copy of the timestamp code (packages/client/src/timestamp.ts,
// a copy of src/calls/timestamp.ts), so that it builds alone. The client stamps and checks
// `timestamp` and `sentAt` with it, the gateway with the daemon's: a text one reads, the
// other must read to the same instant, and a text one refuses, the other must refuse.
// Compared here on a table that walks every rule of parseTimestamp (each accepted form and
// each refusal) and on generated strings; formatTimestamp on a table of instants.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as daemon from '../../../src/calls/index.js';
import * as client from '../../../packages/client/src/timestamp.js';

/** [what, text, whether it is read]: the last column keeps the table honest about which side of a rule each row is on. */
const PARSE_TABLE: [string, string, boolean][] = [
  ['a date alone: UTC midnight', '2026-05-01', true],
  ['a date-time in UTC', '2026-05-01T12:34:56Z', true],
  ['a lower-case t and z', '2026-05-01t12:34:56z', true],
  ['a space for the T', '2026-05-01 12:34:56Z', true],
  ['no seconds', '2026-05-01T12:34Z', true],
  ['no zone: read as UTC', '2026-05-01T12:34:56', true],
  ['milliseconds', '2026-05-01T12:34:56.789Z', true],
  ['a comma before the fraction', '2026-05-01T12:34:56,789Z', true],
  ['one digit of fraction', '2026-05-01T12:34:56.7Z', true],
  ['nine digits of fraction, truncated', '2026-05-01T12:34:56.123456789Z', true],
  ['ten digits of fraction', '2026-05-01T12:34:56.1234567890Z', false],
  ['a dot without digits', '2026-05-01T12:34:56.Z', false],
  ['a fraction without seconds', '2026-05-01T12:34.5Z', false],
  ['an offset ±hh:mm', '2026-05-01T12:34:56+02:00', true],
  ['a negative offset', '2026-05-01T12:34:56-05:30', true],
  ["the Go library's ±hhmm", '2009-11-10T23:00:00+0000', true],
  ['an offset of hours only', '2026-05-01T12:34:56+05', true],
  ['the longest form', '2026-05-01T12:00:00.123456789+01:00', true],
  ['an offset hour of 24', '2026-05-01T12:34:56+24:00', false],
  ['an offset minute of 60', '2026-05-01T12:34:56+05:60', false],
  ['an offset of one digit', '2026-05-01T12:34:56+0', false],
  ['an offset with a trailing character', '2026-05-01T12:34:56+02:00x', false],
  ['a Z with a trailing space', '2026-05-01T12:34:56Z ', false],
  ['an unknown zone letter', '2026-05-01T12:34:56Q', false],
  ['a leap day', '2024-02-29', true],
  ['February 29 of a common year', '2026-02-29', false],
  ['February 29 of 2000 (divisible by 400)', '2000-02-29', true],
  ['February 29 of 1900 (divisible by 100)', '1900-02-29', false],
  ['April 31', '2026-04-31', false],
  ['month 13', '2026-13-01', false],
  ['month 00', '2026-00-10', false],
  ['day 00', '2026-05-00', false],
  ['hour 24', '2026-05-01T24:00:00Z', false],
  ['minute 60', '2026-05-01T12:60:00Z', false],
  ['second 60 (no leap seconds)', '2026-05-01T23:59:60Z', false],
  ['the first instant of year 1', '0001-01-01T00:00:00.000Z', true],
  ['year 0', '0000-12-31T23:59:59Z', false],
  ['the last instant of year 9999', '9999-12-31T23:59:59.999Z', true],
  ['an offset that leaves year 1', '0001-01-01T00:00:00+00:01', false],
  ['an offset that passes year 9999', '9999-12-31T23:59:59-00:01', false],
  ['a short year', '226-05-01', false],
  ['a five-digit year', '+02026-05-01', false],
  ['slashes', '2026/05/01', false],
  ['one-digit month and day', '2026-5-1', false],
  ['another separator', '2026-05-01x12:34:56Z', false],
  ['hours without minutes', '2026-05-01T12Z', false],
  ['a dot for the colon', '2026-05-01T12.34.56Z', false],
  ['non-ASCII digits', '２０２６-05-01', false],
  ['the empty string', '', false],
  ['words', 'yesterday', false],
  ['an epoch number as text', '1700000000000', false],
  ['over 35 characters', '2026-05-01T12:00:00.123456789+01:00 ', false],
];

/** Instants to write: the bounds, the epoch, before it, a fraction of a millisecond. */
const FORMAT_TABLE: [string, number][] = [
  ['the epoch', 0],
  ['the first instant', daemon.MIN_TIMESTAMP_MS],
  ['the last instant', daemon.MAX_TIMESTAMP_MS],
  ['before the epoch', -1],
  ['a day', 86_400_000],
  ['a fraction of a millisecond', 1_700_000_000_000.7],
  ['a leap day', Date.UTC(2024, 1, 29, 12)],
];

describe("the client's timestamps agree with the gateway's", () => {
  it('shares the bounds', () => {
    expect(client.MIN_TIMESTAMP_MS).toBe(daemon.MIN_TIMESTAMP_MS);
    expect(client.MAX_TIMESTAMP_MS).toBe(daemon.MAX_TIMESTAMP_MS);
  });

  it.each(PARSE_TABLE)('reads %s (%j) the same', (_what, text, read) => {
    expect(daemon.parseTimestamp(text) !== undefined).toBe(read);
    expect(client.parseTimestamp(text)).toBe(daemon.parseTimestamp(text));
  });

  it.each(FORMAT_TABLE)('writes %s the same', (_what, ms) => {
    expect(client.formatTimestamp(ms)).toBe(daemon.formatTimestamp(ms));
  });

  it.each([Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])('refuses to write %d, both with a RangeError', (ms) => {
    expect(() => daemon.formatTimestamp(ms)).toThrow(RangeError);
    expect(() => client.formatTimestamp(ms)).toThrow(RangeError);
  });

  it('on generated strings: shaped like a date-time with each part in range or just past it, any string, any instant', () => {
    const digits = (n: number) => fc.array(fc.constantFrom(...'0123456789'), { minLength: n, maxLength: n }).map((d) => d.join(''));
    const part = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    // Strings shaped like a date-time, each part in range or just past it, with odd zones.
    const shaped = fc
      .tuple(
        fc.oneof(fc.integer({ min: 0, max: 9999 }).map((y) => String(y).padStart(4, '0')), digits(4)),
        part(13),
        part(32),
        fc.constantFrom('T', 't', ' ', 'x'),
        part(25),
        part(61),
        fc.option(part(61)),
        fc.option(fc.tuple(fc.constantFrom('.', ','), fc.integer({ min: 0, max: 11 }).chain(digits))),
        fc.constantFrom('', 'Z', 'z', '+00:00', '-0130', '+23', '-23:59', '+24:00', '+05:60', '+0', 'Q', 'Z '),
      )
      .map(([y, mo, d, sep, h, mi, s, frac, zone]) => `${y}-${mo}-${d}${sep}${h}:${mi}${s === null ? '' : `:${s}`}${s !== null && frac !== null ? frac[0] + frac[1] : ''}${zone}`);
    fc.assert(
      fc.property(fc.oneof(shaped, fc.string(), fc.date({ noInvalidDate: true }).map((d) => d.toISOString())), (text) => {
        expect(client.parseTimestamp(text)).toBe(daemon.parseTimestamp(text));
      }),
      { numRuns: 5_000 },
    );
    fc.assert(
      fc.property(fc.integer({ min: daemon.MIN_TIMESTAMP_MS, max: daemon.MAX_TIMESTAMP_MS }), (ms) => {
        expect(client.formatTimestamp(ms)).toBe(daemon.formatTimestamp(ms));
      }),
    );
  });
});
