import { describe, expect, it } from 'vitest';
import { HeldRetries } from '../../../src/delivery/held-retries.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);

/** Holds each [name, due after T0] in that order. */
function held(entries: [string, number][]): HeldRetries<string> {
  const retries = new HeldRetries<string>();
  for (const [name, dueIn] of entries) retries.hold(name, T0 + dueIn);
  return retries;
}

describe('HeldRetries', () => {
  it.each<[string, [string, number][], number, string[], number | undefined]>([
    ['nothing due yet', [['a', 100]], 99, [], T0 + 100],
    ['due at its time exactly', [['a', 100]], 100, ['a'], undefined],
    ['the due ones, oldest due first, whatever the order they were held in', [['a', 300], ['b', 100], ['c', 200]], 250, ['b', 'c'], T0 + 300],
    ['equal due times: in the order they were held', [['a', 100], ['b', 50], ['c', 100]], 100, ['b', 'a', 'c'], undefined],
    ['none held', [], 1_000, [], undefined],
  ])('%s', (_name, entries, at, due, next) => {
    const retries = held(entries);
    expect(retries.takeDue(T0 + at)).toEqual(due);
    expect(retries.nextDueAtMs()).toBe(next);
    expect(retries.size).toBe(entries.length - due.length);
  });

  it('takes each event once', () => {
    const retries = held([['a', 100]]);
    expect(retries.takeDue(T0 + 100)).toEqual(['a']);
    expect(retries.takeDue(T0 + 200)).toEqual([]);
  });

  it.each<[string, [string, number][], string, string[], number | undefined]>([
    ["drops a revoked partition's events (p0: the first letter)", [['p0-a', 100], ['p1-a', 200], ['p0-b', 50]], 'p0', ['p1-a'], T0 + 200],
    ['keeps all when none went', [['p1-a', 100]], 'p0', ['p1-a'], T0 + 100],
  ])('%s', (_name, entries, gone, left, next) => {
    const retries = held(entries);
    retries.drop((name) => name.startsWith(gone));
    expect(retries.nextDueAtMs()).toBe(next);
    expect(retries.takeDue(T0 + 10_000)).toEqual(left);
  });

  it('clear forgets every event', () => {
    const retries = held([['a', 1], ['b', 2]]);
    retries.clear();
    expect(retries.size).toBe(0);
    expect(retries.nextDueAtMs()).toBeUndefined();
  });
});
