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

describe('OpenBatch.join', () => {
  // json bodies: a batch of n bodies of b bytes in all is b + (n - 1) + 2 bytes; ndjson: b + n.
  it.each<[string, { maxEvents: number; maxBytes: number; format?: 'json' | 'ndjson' }, number[], boolean[], string[], boolean]>([
    ['joins until maxEvents, then is closed (full)', { maxEvents: 3, maxBytes: 1_000 }, [10, 10, 10, 10], [true, true, true, false], ['e0', 'e1', 'e2'], true],
    ['an event that does not fit is refused and closes the batch', { maxEvents: 10, maxBytes: 25 }, [10, 10, 10], [true, true, false], ['e0', 'e1'], true],
    ['exactly maxBytes with brackets and commas: full', { maxEvents: 10, maxBytes: 23 }, [10, 10, 1], [true, true, false], ['e0', 'e1'], true],
    ['ndjson: a line feed after each body', { maxEvents: 10, maxBytes: 22, format: 'ndjson' }, [10, 10, 1], [true, true, false], ['e0', 'e1'], true],
    ['an event over maxBytes goes alone', { maxEvents: 10, maxBytes: 50 }, [100, 1], [true, false], ['e0'], true],
    ['room left: stays open', { maxEvents: 10, maxBytes: 1_000 }, [10, 10], [true, true], ['e0', 'e1'], false],
  ])('%s', (_name, limits, sizes, joined, entries, closed) => {
    const batch = newBatch();
    expect(sizes.map((bytes, i) => batch.join(ev(`e${i}`, bytes), limits))).toEqual(joined);
    expect(batch.entries.map((e) => e.name)).toEqual(entries);
    expect(batch.closed).toBe(closed);
    expect(batch.waitsForMore(limits)).toBe(!closed);
  });

  it('closed at maxWait (by the lane): takes no more, and waits for no more', () => {
    const limits = { maxEvents: 10, maxBytes: 1_000 };
    const batch = newBatch();
    batch.join(ev('a', 1), limits);
    batch.closed = true;
    expect(batch.waitsForMore(limits)).toBe(false);
  });
});

describe('OpenBatch.drop', () => {
  const limits = { maxEvents: 3, maxBytes: 1_000 };

  it.each<[string, number[], number, string[], string[]]>([
    ['a partition that went takes its events out', [0, 1, 0], 0, ['e0', 'e2'], ['e1']],
    ['a partition with none in the batch changes nothing', [0, 1], 7, [], ['e0', 'e1']],
    ['all of them', [1, 1], 1, ['e0', 'e1'], []],
  ])('%s', (_name, partitions, gone, dropped, kept) => {
    const batch = newBatch();
    partitions.forEach((partition, i) => batch.join(ev(`e${i}`, 10, partition), limits));
    expect(batch.drop((e) => e.partition === gone).map((e) => e.name)).toEqual(dropped);
    expect(batch.entries.map((e) => e.name)).toEqual(kept);
  });

  it('counts only what is left (a closed batch stays closed): full at maxEvents, it takes more once some went', () => {
    const batch = newBatch();
    [0, 1, 0].forEach((partition, i) => batch.join(ev(`e${i}`, 10, partition), { ...limits, maxEvents: 4 }));
    batch.drop((e) => e.partition === 0);
    expect(batch.join(ev('e3', 10), limits)).toBe(true);
    expect(batch.join(ev('e4', 10), limits)).toBe(true);
    expect(batch.closed).toBe(true);
    expect(batch.entries.map((e) => e.name)).toEqual(['e1', 'e3', 'e4']);
  });
});
