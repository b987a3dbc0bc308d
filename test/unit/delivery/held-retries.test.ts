import { describe, expect, it } from 'vitest';
import { HeldRetries } from '../../../src/delivery/held-retries.js';
import type { Timers } from '../../../src/delivery/held-retries.js';

/** A clock the test moves: timers by number, each with its due time; `to(ms)` runs the due ones in due order (equal times in the order set). */
function fakeClock() {
  let now = 0;
  let next = 0;
  const pending = new Map<number, { at: number; callback: () => void }>();
  const timers: Timers<number> = {
    set: (callback, ms) => {
      pending.set(++next, { at: now + ms, callback });
      return next;
    },
    clear: (handle) => void pending.delete(handle),
  };
  const to = (ms: number) => {
    for (;;) {
      const due = [...pending].filter(([, t]) => t.at <= ms).sort(([a, x], [b, y]) => x.at - y.at || a - b)[0];
      if (due === undefined) break;
      pending.delete(due[0]);
      now = due[1].at;
      due[1].callback();
    }
    now = ms;
  };
  return { timers, to, pending };
}

/** Holds each [name, ms] in that order; returns the retries and the names in the order they came due. */
function held(entries: [string, number][]) {
  const clock = fakeClock();
  const retries = new HeldRetries<string, number>(clock.timers);
  const due: string[] = [];
  for (const [name, ms] of entries) retries.hold(name, ms, (entry) => due.push(entry));
  return { retries, due, clock };
}

describe('HeldRetries', () => {
  it.each<[string, [string, number][], number, string[]]>([
    ['nothing due yet', [['a', 100]], 99, []],
    ['due at its time exactly', [['a', 100]], 100, ['a']],
    ['each at its own time, whatever the order they were held in', [['a', 300], ['b', 100], ['c', 200]], 250, ['b', 'c']],
    ['equal times: in the order they were held', [['a', 100], ['b', 50], ['c', 100]], 100, ['b', 'a', 'c']],
    ['a time in the past waits 0', [['a', -500]], 0, ['a']],
    ['none held', [], 1_000, []],
  ])('%s', (_name, entries, at, due) => {
    const h = held(entries);
    h.clock.to(at);
    expect(h.due).toEqual(due);
    expect(h.retries.size).toBe(entries.length - due.length);
  });

  it('each event comes due once', () => {
    const h = held([['a', 100]]);
    h.clock.to(100);
    h.clock.to(1_000);
    expect(h.due).toEqual(['a']);
  });

  it.each<[string, [string, number][], string, string[]]>([
    ["drops a revoked partition's events, their timers cleared (p0: the first two letters)", [['p0-a', 100], ['p1-a', 200], ['p0-b', 50]], 'p0', ['p1-a']],
    ['keeps all when none went', [['p1-a', 100]], 'p0', ['p1-a']],
  ])('%s', (_name, entries, gone, left) => {
    const h = held(entries);
    h.retries.drop((name) => name.startsWith(gone));
    expect(h.clock.pending.size).toBe(left.length);
    h.clock.to(10_000);
    expect(h.due).toEqual(left);
  });

  it('clear forgets every event and clears every timer', () => {
    const h = held([['a', 1], ['b', 2]]);
    h.retries.clear();
    expect(h.retries.size).toBe(0);
    expect(h.clock.pending.size).toBe(0);
  });
});
