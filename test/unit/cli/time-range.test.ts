import { describe, expect, it } from 'vitest';
import { describeTimeRange, parseTimeRange } from '../../../src/cli/time-range.js';
import { inTimeRange } from '../../../src/delivery/dlq/dead-letters.js';

const NOW = Date.UTC(2026, 4, 1, 12, 0, 0); // 2026-05-01T12:00:00.000Z

describe('parseTimeRange: one TIME argument', () => {
  it.each([
    ['2h', NOW - 2 * 3_600_000],
    ['30m', NOW - 30 * 60_000],
    ['7d', NOW - 7 * 86_400_000],
    ['90s', NOW - 90_000],
    ['0s', NOW],
    ['2026-05-01T10:00:00Z', Date.UTC(2026, 4, 1, 10)],
    ['2026-05-01T10:00:00.250Z', Date.UTC(2026, 4, 1, 10, 0, 0, 250)],
    ['2026-05-01T12:00:00+02:00', Date.UTC(2026, 4, 1, 10)],
    ['2026-04-30', Date.UTC(2026, 3, 30)],
  ])('%s → %d', (text, ms) => {
    expect(parseTimeRange({ since: text }, NOW)).toEqual({ ok: true, value: { sinceMs: ms } });
  });

  it.each([['yesterday'], [''], ['2'], ['-2h'], ['2 h'], ['2H'], ['2026-13-01T00:00:00Z'], ['2026-02-30'], ['1714557600000'], ['2h ago']])(
    '%j is refused with a message naming the option and the accepted forms',
    (text) => {
      const result = parseTimeRange({ until: text }, NOW);
      expect(result.ok).toBe(false);
      if (!result.ok) {
        expect(result.message).toContain(`--until ${JSON.stringify(text)} is not a time`);
        expect(result.message).toContain('ISO 8601');
        expect(result.message).toContain('2h');
      }
    },
  );
});

describe('parseTimeRange', () => {
  it('reads both bounds, either bound, or none', () => {
    expect(parseTimeRange({ since: '2h', until: '1h' }, NOW)).toEqual({ ok: true, value: { sinceMs: NOW - 7_200_000, untilMs: NOW - 3_600_000 } });
    expect(parseTimeRange({ since: '2h' }, NOW)).toEqual({ ok: true, value: { sinceMs: NOW - 7_200_000 } });
    expect(parseTimeRange({ until: '2026-05-01T00:00:00Z' }, NOW)).toEqual({ ok: true, value: { untilMs: Date.UTC(2026, 4, 1) } });
    expect(parseTimeRange({}, NOW)).toEqual({ ok: true, value: {} });
  });

  it('refuses an empty bound: a --since=$SINCE that lost its value must not open the range to every letter', () => {
    const result = parseTimeRange({ since: '', until: '1h' }, NOW);
    expect(result).toEqual({ ok: false, message: expect.stringContaining('--since "" is not a time') });
  });

  it('refuses an empty or reversed range, naming both times', () => {
    for (const values of [{ since: '1h', until: '2h' }, { since: '1h', until: '1h' }]) {
      const result = parseTimeRange(values, NOW);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.message).toMatch(/^--since \(2026-05-01T11:00:00.000Z\) is not before --until \(2026-05-01T1[01]:00:00.000Z\)/);
    }
  });

  it('passes on the first bad bound', () => {
    const result = parseTimeRange({ since: 'soon', until: '1h' }, NOW);
    expect(result).toEqual({ ok: false, message: expect.stringContaining('--since "soon"') });
  });
});

describe('inTimeRange', () => {
  const range = { sinceMs: 1_000, untilMs: 2_000 };
  it.each([
    [999, false],
    [1_000, true],
    [1_999, true],
    [2_000, false],
    [undefined, false],
  ])('%s in [1000, 2000): %s', (ms, inside) => {
    expect(inTimeRange(range, ms)).toBe(inside);
  });

  it('an open range keeps every letter, one without a time too', () => {
    expect(inTimeRange({}, undefined)).toBe(true);
    expect(inTimeRange({ sinceMs: 5 }, 4)).toBe(false);
    expect(inTimeRange({ untilMs: 5 }, 4)).toBe(true);
  });
});

describe('describeTimeRange', () => {
  it.each([
    [{ sinceMs: 0, untilMs: 1_000 }, 'dead-lettered from 1970-01-01T00:00:00.000Z until 1970-01-01T00:00:01.000Z'],
    [{ sinceMs: 0 }, 'dead-lettered since 1970-01-01T00:00:00.000Z'],
    [{ untilMs: 0 }, 'dead-lettered before 1970-01-01T00:00:00.000Z'],
    [{}, ''],
  ])('%j', (range, text) => {
    expect(describeTimeRange(range)).toBe(text);
  });
});
