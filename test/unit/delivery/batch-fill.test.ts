import { describe, expect, it } from 'vitest';
import { OpenBatch } from '../../../src/delivery/batch-fill.js';

/** An event as the batch sees it: a name and its body bytes. */
interface Ev {
  name: string;
  bytes: number;
  partition: number;
}
const ev = (name: string, bytes: number, partition = 0): Ev => ({ name, bytes, partition });
const newBatch = () => new OpenBatch<Ev>((e) => e.bytes);
const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);

describe('OpenBatch.join', () => {
  // json bodies: a batch of n bodies of b bytes in all is b + (n - 1) + 2 bytes.
  it.each<[string, { maxEvents: number; maxBytes: number }, number[], boolean[], string[], boolean]>([
    ['joins until maxEvents, then is closed (full)', { maxEvents: 3, maxBytes: 1_000 }, [10, 10, 10, 10], [true, true, true, false], ['e0', 'e1', 'e2'], true],
    ['an event that does not fit is refused and closes the batch', { maxEvents: 10, maxBytes: 25 }, [10, 10, 10], [true, true, false], ['e0', 'e1'], true],
    ['exactly maxBytes with brackets and commas: full', { maxEvents: 10, maxBytes: 23 }, [10, 10, 1], [true, true, false], ['e0', 'e1'], true],
    ['an event over maxBytes goes alone', { maxEvents: 10, maxBytes: 50 }, [100, 1], [true, false], ['e0'], true],
    ['room left: stays open', { maxEvents: 10, maxBytes: 1_000 }, [10, 10], [true, true], ['e0', 'e1'], false],
  ])('%s', (_name, limits, sizes, joined, entries, closed) => {
    const batch = newBatch();
    const full = { ...limits, maxWaitMs: 100 };
    expect(sizes.map((bytes, i) => batch.join(ev(`e${i}`, bytes), full, T0))).toEqual(joined);
    expect(batch.entries.map((e) => e.name)).toEqual(entries);
    expect(batch.closed).toBe(closed);
    expect(batch.waitsForMore(full)).toBe(!closed);
  });
});

describe('OpenBatch.closesAtMs and close', () => {
  const limits = { maxEvents: 10, maxBytes: 1_000, maxWaitMs: 200 };

  it.each<[string, number[], number | undefined]>([
    ['none joined: no time', [], undefined],
    ['maxWait after its first event', [T0], T0 + 200],
    ['later events do not move it', [T0, T0 + 150, T0 + 199], T0 + 200],
  ])('%s', (_name, joinedAt, closesAt) => {
    const batch = newBatch();
    joinedAt.forEach((at, i) => batch.join(ev(`e${i}`, 1), limits, at));
    expect(batch.closesAtMs(limits)).toBe(closesAt);
  });

  it('closed at maxWait: takes no more, and waits for no more', () => {
    const batch = newBatch();
    batch.join(ev('a', 1), limits, T0);
    batch.close();
    expect(batch.closed).toBe(true);
    expect(batch.waitsForMore(limits)).toBe(false);
  });

  it('empty: waits for nothing', () => {
    expect(newBatch().waitsForMore(limits)).toBe(false);
  });
});

describe('OpenBatch.drop', () => {
  const limits = { maxEvents: 3, maxBytes: 1_000, maxWaitMs: 100 };

  it.each<[string, number[], number, string[], string[]]>([
    ['a partition that went takes its events out', [0, 1, 0], 0, ['e0', 'e2'], ['e1']],
    ['a partition with none in the batch changes nothing', [0, 1], 7, [], ['e0', 'e1']],
    ['all of them', [1, 1], 1, ['e0', 'e1'], []],
  ])('%s', (_name, partitions, gone, dropped, kept) => {
    const batch = newBatch();
    partitions.forEach((partition, i) => batch.join(ev(`e${i}`, 10, partition), limits, T0));
    expect(batch.drop((e) => e.partition === gone).map((e) => e.name)).toEqual(dropped);
    expect(batch.entries.map((e) => e.name)).toEqual(kept);
  });

  it('counts only what is left: a batch full at maxEvents takes more once some went', () => {
    const batch = newBatch();
    [0, 1, 0].forEach((partition, i) => batch.join(ev(`e${i}`, 10, partition), { ...limits, maxEvents: 4 }, T0));
    batch.drop((e) => e.partition === 0);
    expect(batch.join(ev('e3', 10), { ...limits, maxEvents: 3 }, T0)).toBe(true);
    expect(batch.join(ev('e4', 10), { ...limits, maxEvents: 3 }, T0)).toBe(true);
    expect(batch.closed).toBe(true);
    expect(batch.entries.map((e) => e.name)).toEqual(['e1', 'e3', 'e4']);
  });
});
