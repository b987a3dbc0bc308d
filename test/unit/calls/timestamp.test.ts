import { describe, expect, it } from 'vitest';
import {
  MAX_TIMESTAMP_MS,
  MIN_TIMESTAMP_MS,
  formatTimestamp,
  parseTimestamp,
} from '../../../src/calls/index.js';

const NOON = Date.UTC(2026, 4, 1, 12, 0, 0, 0);

describe('parseTimestamp accepts the ISO 8601 forms clients send', () => {
  const cases: Array<[string, number]> = [
    ['2026-05-01T12:00:00.000Z', NOON],
    ['2026-05-01T12:00:00Z', NOON],
    ['2026-05-01T12:00Z', NOON],
    ['2026-05-01t12:00:00z', NOON],
    ['2026-05-01 12:00:00Z', NOON],
    ['2026-05-01T12:00:00', NOON], // no zone: read as UTC (documented)
    // The Go library: no milliseconds, no colon in the offset.
    ['2009-11-10T23:00:00+0000', Date.UTC(2009, 10, 10, 23, 0, 0)],
    ['2026-05-01T12:00:00+00:00', NOON],
    ['2026-05-01T12:00:00-00:00', NOON],
    ['2026-05-01T13:00:00+01:00', NOON],
    ['2026-05-01T13:00:00+0100', NOON],
    ['2026-05-01T13:00:00+01', NOON],
    ['2026-05-01T06:30:00-0530', NOON],
    ['2026-05-01T06:30:00-05:30', NOON],
    ['2026-05-01T17:30:00.250+05:30', NOON + 250],
    ['2026-01-01T00:30:00+01:00', Date.UTC(2025, 11, 31, 23, 30)],
    ['2025-12-31T23:30:00-01:00', Date.UTC(2026, 0, 1, 0, 30)],
    // Fractions of 1 to 9 digits, truncated (not rounded) to milliseconds.
    ['2026-05-01T12:00:00.1Z', NOON + 100],
    ['2026-05-01T12:00:00.12Z', NOON + 120],
    ['2026-05-01T12:00:00.123Z', NOON + 123],
    ['2026-05-01T12:00:00.1239Z', NOON + 123],
    ['2026-05-01T12:00:00.123456789Z', NOON + 123],
    ['2026-05-01T12:00:00.999999999Z', NOON + 999],
    ['2026-05-01T12:00:00,5Z', NOON + 500],
    ['2026-05-01T12:00:00.123456789+01:00', NOON + 123 - 3_600_000],
    // Date only: UTC midnight.
    ['2026-05-01', Date.UTC(2026, 4, 1)],
    ['2024-02-29', Date.UTC(2024, 1, 29)],
    ['2000-02-29', Date.UTC(2000, 1, 29)],
    ['1969-12-31T23:59:59.999Z', -1],
    ['1970-01-01T00:00:00.000Z', 0],
    // Date.parse handles years below 100 in ISO form (Date.UTC would map them to 19xx).
    ['0001-01-01T00:00:00.000Z', Date.parse('0001-01-01T00:00:00.000Z')],
    ['0099-03-01', Date.parse('0099-03-01T00:00:00.000Z')],
    ['9999-12-31T23:59:59.999Z', Date.parse('9999-12-31T23:59:59.999Z')],
  ];
  it.each(cases)('%s', (text, expected) => {
    expect(parseTimestamp(text)).toBe(expected);
  });

  it('bounds the range at 0001-01-01 and 9999-12-31 UTC', () => {
    expect(MIN_TIMESTAMP_MS).toBe(Date.parse('0001-01-01T00:00:00.000Z'));
    expect(MAX_TIMESTAMP_MS).toBe(Date.parse('9999-12-31T23:59:59.999Z'));
  });
});

describe('parseTimestamp rejects garbage and impossible dates', () => {
  const cases: string[] = [
    '',
    'garbage',
    'yesterday',
    '1715000000000',
    'Fri, 01 May 2026 12:00:00 GMT',
    '2026-13-01',
    '2026-00-10',
    '2026-05-00',
    '2026-05-32',
    '2026-02-30',
    '2025-02-29',
    '1900-02-29',
    '2026-04-31',
    '0000-01-01',
    '+002026-05-01T12:00:00Z',
    '-000001-01-01T00:00:00Z',
    '2026-5-1',
    '20260501',
    '2026/05/01',
    '２０２６-05-01',
    ' 2026-05-01',
    '2026-05-01 ',
    '2026-05-01T',
    '2026-05-01T12',
    '2026-05-01T12:0Z',
    '2026-05-01X12:00:00Z',
    '2026-05-01T24:00:00Z',
    '2026-05-01T12:60:00Z',
    '2026-05-01T12:00:60Z',
    '2026-05-01T12:00:00.Z',
    '2026-05-01T12:00:00.1234567890Z',
    '2026-05-01T12:00:00.12a3Z',
    '2026-05-01T12:00:00ZZ',
    '2026-05-01T12:00:00Z ',
    '2026-05-01T12:00:00+1:00',
    '2026-05-01T12:00:00+01:',
    '2026-05-01T12:00:00+010',
    '2026-05-01T12:00:00+01000',
    '2026-05-01T12:00:00+0100Z',
    '2026-05-01T12:00:00+24:00',
    '2026-05-01T12:00:00+01:60',
    '2026-05-01T12:00:00 +0000',
    '2026-05-01T12:00:00 UTC',
    '2026-05-01T12:00:00.123+01:00junk',
    // In range as written, out of range once converted to UTC.
    '9999-12-31T23:00:00-05:00',
    '0001-01-01T00:30:00+01:00',
  ];
  it.each(cases)('%j', (text) => {
    expect(parseTimestamp(text)).toBeUndefined();
  });
});

describe('formatTimestamp', () => {
  it.each([
    [NOON, '2026-05-01T12:00:00.000Z'],
    [NOON + 7, '2026-05-01T12:00:00.007Z'],
    [0, '1970-01-01T00:00:00.000Z'],
    [-1, '1969-12-31T23:59:59.999Z'],
    [Date.parse('0001-01-01T00:00:00.000Z'), '0001-01-01T00:00:00.000Z'],
    [Date.parse('9999-12-31T23:59:59.999Z'), '9999-12-31T23:59:59.999Z'],
  ])('%d → %s', (ms, expected) => {
    expect(formatTimestamp(ms)).toBe(expected);
  });

  it('round-trips through parseTimestamp', () => {
    for (const ms of [NOON, NOON + 999, -62_135_596_800_000, 253_402_300_799_999, 1_234_567_890_123]) {
      expect(parseTimestamp(formatTimestamp(ms))).toBe(ms);
    }
  });
});
