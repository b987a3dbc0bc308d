import { describe, expect, it } from 'vitest';
import { OffsetTracker, lastContiguousFinished } from '../../../src/delivery/offset-tracker.js';

describe('lastContiguousFinished', () => {
  it.each([
    [[], [], undefined],
    [['5'], [], undefined],
    [['5'], ['5'], '5'],
    [['5', '6', '7'], ['6', '7'], undefined],
    [['5', '6', '7'], ['5', '7'], '5'],
    [['5', '6', '7'], ['5', '6'], '6'],
    [['5', '6', '7'], ['7', '6', '5'], '7'],
    [['5', '9', '12'], ['5', '9'], '9'], // gaps between offsets (compaction, control records)
  ])('started %j, finished %j → %s', (started, finished, expected) => {
    expect(lastContiguousFinished(started, new Set(finished))).toBe(expected);
  });
});

describe('OffsetTracker', () => {
  it('resolves only below the oldest unfinished message', () => {
    const tracker = new OffsetTracker();
    const a = tracker.start('10');
    const b = tracker.start('11');
    const c = tracker.start('12');
    expect(tracker.resolvable()).toBeUndefined();
    tracker.finish(c);
    expect(tracker.resolvable()).toBeUndefined();
    tracker.finish(a);
    expect(tracker.resolvable()).toBe('10');
    expect(tracker.inFlight).toBe(1);
    tracker.finish(b);
    expect(tracker.resolvable()).toBe('12');
    expect(tracker.inFlight).toBe(0);
  });

  it('agrees with lastContiguousFinished for every finishing order', () => {
    const offsets = ['100', '101', '103', '104', '110'];
    const permutations = (items: number[]): number[][] =>
      items.length <= 1 ? [items] : items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
    for (const order of permutations([0, 1, 2, 3, 4])) {
      const tracker = new OffsetTracker();
      const tickets = offsets.map((o) => tracker.start(o));
      const finished = new Set<string>();
      for (const i of order) {
        tracker.finish(tickets[i]!);
        finished.add(offsets[i]!);
        expect(tracker.resolvable()).toBe(lastContiguousFinished(offsets, finished));
      }
    }
  });

  it('finishing twice counts once', () => {
    const tracker = new OffsetTracker();
    const a = tracker.start('1');
    tracker.start('2');
    tracker.finish(a);
    tracker.finish(a);
    expect(tracker.inFlight).toBe(1);
    expect(tracker.resolvable()).toBe('1');
  });

  it('refuses offsets out of order and unknown tickets', () => {
    const tracker = new OffsetTracker();
    tracker.start('9');
    expect(() => tracker.start('9')).toThrow(/offset order/);
    expect(() => tracker.start('8')).toThrow(/offset order/);
    expect(() => tracker.finish(5)).toThrow(/unknown ticket/);
  });

  it('compares offsets as numbers, not text', () => {
    const tracker = new OffsetTracker();
    tracker.start('9');
    expect(() => tracker.start('10')).not.toThrow();
  });
});
