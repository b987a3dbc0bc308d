import { describe, expect, it } from 'vitest';
import { hourFigures, MINUTE_MS, minuteOf } from '../../../src/observability/minute-history.js';
import type { MinuteTotals } from '../../../src/observability/minute-history.js';

const T0 = Date.parse('2026-05-01T12:00:00.000Z');
const at = (minute: number, second = 0) => T0 + minute * MINUTE_MS + second * 1000;
const totals = (entries: Record<string, [number, number]>) => new Map<string, MinuteTotals>(Object.entries(entries).map(([id, [delivered, failed]]) => [id, { delivered, failed }]));

describe('hourFigures', () => {
  it('gives each minute the increase from its start to the next, the current minute up to now, oldest first', () => {
    const starts = new Map([
      [minuteOf(at(0, 20)), totals({})], // the process started at 12:00:20, every counter at 0
      [at(1), totals({ a: [5, 1] })],
      [at(2), totals({ a: [7, 4], b: [1, 0] })],
    ]);
    const figures = hourFigures(starts, totals({ a: [10, 4], b: [1, 2] }), at(2, 30), 4);
    expect(figures.fromMs).toBe(at(-1));
    expect(figures.byDestination.get('a')).toEqual({ delivered: [0, 5, 2, 3], failed: [0, 1, 3, 0] });
    expect(figures.byDestination.get('b')).toEqual({ delivered: [0, 0, 1, 0], failed: [0, 0, 0, 2] });
  });

  it('keeps only the last `minutes` minutes', () => {
    const starts = new Map([
      [at(0), totals({ a: [0, 0] })],
      [at(1), totals({ a: [3, 0] })],
      [at(2), totals({ a: [4, 0] })],
    ]);
    expect(hourFigures(starts, totals({ a: [6, 0] }), at(2, 59), 2).byDestination.get('a')).toEqual({ delivered: [1, 2], failed: [0, 0] });
  });

  it('puts the events of a minute whose start was missed in the minute before, and counts a counter that went down from 0', () => {
    const starts = new Map([
      [at(0), totals({ a: [0, 0] })],
      // no totals kept at 12:01 (a late timer)
      [at(2), totals({ a: [6, 0] })],
    ]);
    expect(hourFigures(starts, totals({ a: [2, 1] }), at(2, 10), 3).byDestination.get('a')).toEqual({ delivered: [6, 0, 2], failed: [0, 0, 1] });
  });

  it('has a row of zeros for a destination with no events, and nothing for one the counters do not know', () => {
    const figures = hourFigures(new Map([[at(0), totals({})]]), totals({ quiet: [0, 0] }), at(0, 5), 3);
    expect(figures.byDestination.get('quiet')).toEqual({ delivered: [0, 0, 0], failed: [0, 0, 0] });
    expect(figures.byDestination.has('other')).toBe(false);
  });
});
