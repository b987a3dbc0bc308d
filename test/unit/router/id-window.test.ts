import { describe, expect, it } from 'vitest';
import { IdSet, IdWindow, hashId } from '../../../src/router/dedupe/id-window.js';

const HOUR = 3_600_000;

describe('hashId', () => {
  it('differs by source and by messageId, never (0, 0), and is stable', () => {
    const a = hashId('web', 'm-1');
    expect(hashId('web', 'm-1')).toEqual(a);
    expect(hashId('ios', 'm-1')).not.toEqual(a);
    expect(hashId('web', 'm-2')).not.toEqual(a);
    // The boundary between source and id is part of the hash.
    expect(hashId('we', 'bm-1')).not.toEqual(a);
    for (let i = 0; i < 1_000; i++) expect(hashId('s', String(i)).lo & 1).toBe(1);
  });

  it('has no collision among 200,000 ids', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200_000; i++) {
      const { hi, lo } = hashId('web', `ajs-${i.toString(16)}-${i % 7}`);
      seen.add(`${hi}:${lo}`);
    }
    expect(seen.size).toBe(200_000);
  });
});

describe('IdSet', () => {
  it('adds each hash once, and keeps them all as it grows', () => {
    const set = new IdSet();
    const hashes = Array.from({ length: 5_000 }, (_, i) => hashId('web', `m-${i}`));
    for (const hash of hashes) expect(set.add(hash)).toBe(true);
    for (const hash of hashes) expect(set.add(hash)).toBe(false);
    expect(hashes.every((hash) => set.has(hash))).toBe(true);
    expect(set.has(hashId('web', 'm-5000'))).toBe(false);
    expect(set.count).toBe(5_000);
  });
});

describe('IdWindow', () => {
  it.each([
    // [added at, asked at, copy?]
    [0, 1, true],
    [0, HOUR - 1, true],
    [0, HOUR, true], // within the window, its bound included
    [0, 2 * HOUR, false], // long gone
  ])('an id added at %i ms asked at %i ms: copy %s', (addedAt, askedAt, copy) => {
    const window = new IdWindow(HOUR);
    window.add(hashId('web', 'm-1'), addedAt);
    expect(window.has(hashId('web', 'm-1'), askedAt)).toBe(copy);
    expect(window.has(hashId('web', 'm-2'), askedAt)).toBe(false);
  });

  it('forgets whole generations once their newest id left the window, and remembers at most a quarter longer', () => {
    const window = new IdWindow(HOUR);
    window.add(hashId('web', 'old'), 0);
    // The same generation (a quarter of the window each).
    window.add(hashId('web', 'mid'), HOUR / 4 - 1);
    // A generation of its own.
    window.add(hashId('web', 'new'), HOUR / 4);
    expect(window.has(hashId('web', 'old'), HOUR + HOUR / 4 - 1)).toBe(true); // a quarter too long, at most
    window.add(hashId('web', 'newer'), HOUR + HOUR / 4);
    expect(window.has(hashId('web', 'old'), HOUR + HOUR / 4)).toBe(false);
    expect(window.has(hashId('web', 'mid'), HOUR + HOUR / 4)).toBe(false);
    expect(window.has(hashId('web', 'new'), HOUR + HOUR / 4)).toBe(true);
    expect(window.size).toBe(2);
  });

  it('keeps every id of a large window in at most 32 bytes each', () => {
    const window = new IdWindow(HOUR);
    const n = 300_000;
    for (let i = 0; i < n; i++) window.add(hashId('web', `m-${i}`), Math.floor((i / n) * HOUR * 0.9));
    for (let i = 0; i < n; i += 997) expect(window.has(hashId('web', `m-${i}`), HOUR * 0.9)).toBe(true);
    expect(window.has(hashId('web', 'never'), HOUR * 0.9)).toBe(false);
    expect(window.size).toBe(n);
    expect(window.bytes / n).toBeLessThanOrEqual(32);
  });

  it('takes an id whose time goes back into the newest generation', () => {
    const window = new IdWindow(HOUR);
    window.add(hashId('web', 'a'), HOUR);
    window.add(hashId('web', 'b'), HOUR - 5_000);
    expect(window.has(hashId('web', 'b'), HOUR)).toBe(true);
  });
});
