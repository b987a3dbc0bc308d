import { describe, expect, it } from 'vitest';
import { PartitionProgress, decodeFinished, encodeFinished } from '../../../src/kafka/offset-progress.js';

const big = (xs: number[]) => xs.map((x) => BigInt(x));

describe('encodeFinished / decodeFinished', () => {
  it.each([
    [10, [], ''],
    [10, [12], 'sy1:2.1'],
    [10, [11, 12, 13], 'sy1:1.3'],
    [10, [11, 12, 15, 16, 17, 30], 'sy1:1.2,2.3,c.1'],
    [0, [100_000], `sy1:${(100_000).toString(36)}.1`],
  ])('base %d, finished %j → %s', (base, finished, text) => {
    expect(encodeFinished(BigInt(base), big(finished))).toBe(text);
    expect(decodeFinished(BigInt(base), text)).toEqual(big(finished));
  });

  it('round-trips offsets beyond a double, relative to the base', () => {
    const base = 2n ** 60n;
    const finished = [base + 1n, base + 2n, base + 40n];
    expect(decodeFinished(base, encodeFinished(base, finished))).toEqual(finished);
  });

  it('leaves out the runs that do not fit, keeping the lowest (fewer skipped: duplicates, never a loss)', () => {
    const finished = Array.from({ length: 2_000 }, (_, i) => BigInt(100 + 2 * i)); // every other offset: 2,000 runs
    const text = encodeFinished(99n, finished, 200);
    expect(text.length).toBeLessThanOrEqual(200);
    const decoded = decodeFinished(99n, text);
    expect(decoded.length).toBeGreaterThan(10);
    expect(decoded).toEqual(finished.slice(0, decoded.length));
  });

  it.each([null, undefined, '', 'some other committer', 'sy1:', 'sy1:1.0', 'sy1:x', 'sy1:1.2,,3.1', 'sy1:1.2;DROP'])('reads nothing from %j', (metadata) => {
    expect(decodeFinished(5n, metadata)).toEqual([]);
  });
});

describe('PartitionProgress', () => {
  it.each([
    // committed, metadata, finished in this order, → next, finished above
    ['10', null, [], '10', 0],
    ['10', null, ['10'], '11', 0],
    ['10', null, ['12', '11'], '10', 2],
    ['10', null, ['12', '11', '10'], '13', 0],
    ['10', null, ['9', '10', '10'], '11', 0], // below the commit, and again: no-ops
    ['10', 'sy1:1.2', [], '10', 2], // 11 and 12 finished before the takeover
    ['10', 'sy1:1.2', ['10'], '13', 0],
    ['-1', null, [], '-1', 0], // no commit yet
  ])('commit %s %j, then %j → next %s, %d above', (committed, metadata, finished, next, above) => {
    const progress = new PartitionProgress(committed, metadata);
    for (const offset of finished) progress.finish(offset);
    expect(progress.next).toBe(next);
    expect(progress.finishedAbove).toBe(above);
  });

  it('skips what the metadata lists, and commits the same list back', () => {
    const progress = new PartitionProgress('100', encodeFinished(100n, big([102, 103, 110])));
    expect(['100', '101', '102', '103', '104', '110'].map((o) => progress.isFinished(o))).toEqual([false, false, true, true, false, true]);
    progress.finish('101');
    expect(progress.commitPoint()).toEqual({ offset: '100', metadata: 'sy1:1.3,6.1' });
    progress.finish('100');
    expect(progress.commitPoint()).toEqual({ offset: '104', metadata: 'sy1:6.1' });
  });

  it('startAt moves the start up (an older group\'s commit, a gap), never down', () => {
    const progress = new PartitionProgress('-1', null);
    progress.startAt('50');
    expect(progress.next).toBe('50');
    progress.finish('52');
    progress.startAt('52');
    expect(progress.next).toBe('53'); // 52 was finished already
    progress.startAt('7');
    expect(progress.next).toBe('53');
    expect(progress.isFinished('49')).toBe(true);
  });

  it('counts changes, so a commit knows whether it covered the latest', () => {
    const progress = new PartitionProgress('0', null);
    const before = progress.changeCount;
    progress.finish('1');
    progress.finish('1');
    expect(progress.changeCount).toBe(before + 1);
  });

  it('agrees with the contiguous-prefix rule for every finishing order', () => {
    const offsets = ['100', '101', '102', '103', '104'];
    const permutations = (items: string[]): string[][] =>
      items.length <= 1 ? [items] : items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
    for (const order of permutations(offsets)) {
      const progress = new PartitionProgress('100', null);
      const done = new Set<string>();
      for (const offset of order) {
        progress.finish(offset);
        done.add(offset);
        let expected = 100;
        while (done.has(String(expected))) expected += 1;
        expect(progress.next).toBe(String(expected));
        // A takeover from this commit skips exactly the finished ones.
        const takeover = new PartitionProgress(progress.commitPoint().offset, progress.commitPoint().metadata);
        expect(offsets.filter((o) => takeover.isFinished(o)).sort()).toEqual([...done].sort());
      }
    }
  });
});
