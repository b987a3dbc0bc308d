import { describe, expect, it } from 'vitest';
import { SeenPairCache } from '../../../src/audiences/seen-cache.js';
import { sourcesLeft } from '../../../src/audiences/seen-follower.js';

function following(maxPairs = 1_000): SeenPairCache {
  const cache = new SeenPairCache(maxPairs);
  cache.setFollowing(true);
  return cache;
}

/** Claims the pair and acknowledges its record at once; returns whether a record was handed out. */
function write(cache: SeenPairCache, userId: string, sourceId: string): boolean {
  const pair = cache.claim(userId, sourceId);
  if (pair !== undefined) cache.acknowledged([pair]);
  return pair !== undefined;
}

describe('SeenPairCache', () => {
  it('hands out a record once per pair, and again for a new source or user', () => {
    const cache = following();
    expect([write(cache, 'u-1', 'web'), write(cache, 'u-1', 'web'), write(cache, 'u-1', 'app'), write(cache, 'u-2', 'web')]).toEqual([true, false, true, true]);
    expect(cache.size).toBe(3);
  });

  it('does not hand out a pending pair twice, and hands it out again once abandoned', () => {
    const cache = following();
    const first = cache.claim('u-1', 'web');
    expect(first).toEqual({ userId: 'u-1', sourceId: 'web', epoch: expect.any(Number) });
    expect(cache.claim('u-1', 'web')).toBeUndefined();
    cache.abandoned([first!]);
    const again = cache.claim('u-1', 'web');
    expect(again).toBeDefined();
    cache.acknowledged([again!]);
    expect(cache.claim('u-1', 'web')).toBeUndefined();
  });

  it('bounds the characters of the user ids it holds, not only the pairs: long ids age out sooner', () => {
    const cache = new SeenPairCache(1_000, Date.now, 10_000);
    cache.setFollowing(true);
    const long = (i: number) => `${i}-${'x'.repeat(995)}`;
    for (let i = 0; i < 100; i++) expect(write(cache, long(i), 'web')).toBe(true);
    expect(cache.idChars).toBeLessThanOrEqual(10_000);
    // The most recent pairs are still cached; an id over half the bound is never cached.
    expect(write(cache, long(99), 'web')).toBe(false);
    const huge = 'h'.repeat(6_000);
    expect([write(cache, huge, 'web'), write(cache, huge, 'web')]).toEqual([true, true]);
    expect(cache.idChars).toBeLessThanOrEqual(10_000);
  });

  it('caches nothing while not following user.sources', () => {
    const cache = new SeenPairCache(100);
    expect([write(cache, 'u-1', 'web'), write(cache, 'u-1', 'web')]).toEqual([true, true]);
    expect(cache.size).toBe(0);
  });

  it('does not cache a pair handed out before following began, or before a forget', () => {
    const cache = new SeenPairCache(100);
    const early = cache.claim('u-1', 'web')!;
    cache.setFollowing(true);
    cache.acknowledged([early]);
    expect(cache.size).toBe(0);
    const racing = cache.claim('u-1', 'web')!;
    // The processor erased u-1 (the record was before the deletion) and the follower saw it before the ack came.
    cache.forget('u-1');
    cache.acknowledged([racing]);
    expect(write(cache, 'u-1', 'web')).toBe(true);
  });

  it('forgets a deleted user entirely, or only the sources a change removed', () => {
    const cache = following();
    for (const [user, source] of [['u-1', 'web'], ['u-1', 'app'], ['u-2', 'web'], ['u-3', 'web'], ['u-3', 'app']] as const) write(cache, user, source);
    cache.forget('u-1');
    cache.forget('u-3', ['app']);
    expect([write(cache, 'u-1', 'web'), write(cache, 'u-1', 'app'), write(cache, 'u-2', 'web'), write(cache, 'u-3', 'web'), write(cache, 'u-3', 'app')]).toEqual([
      true,
      true,
      false,
      true,
      false,
    ]);
  });

  it('returns the dropped pairs a call found since a time: calls that wrote nothing after the deletion', () => {
    let now = 1_000_000;
    const cache = new SeenPairCache(100, () => now);
    cache.setFollowing(true);
    write(cache, 'u-1', 'web'); // written, never found since
    write(cache, 'u-1', 'app');
    write(cache, 'u-1', 'server');
    now += 500;
    expect(write(cache, 'u-1', 'app')).toBe(false); // found at +500 ms
    expect(write(cache, 'u-1', 'server')).toBe(false);
    const deletedAt = cache.tickAt(now - 200);
    expect(cache.forget('u-1', ['server'], deletedAt)).toEqual([{ userId: 'u-1', sourceId: 'app' }]);
    expect(cache.forget('u-1', [], cache.tickAt(now + 1_000))).toEqual([]);
    expect(write(cache, 'u-1', 'server')).toBe(true);
  });

  it('a pair in flight when its user is forgotten is handed out again to the next call', () => {
    const cache = following();
    const inFlight = cache.claim('u-1', 'web')!;
    const kept = cache.claim('u-1', 'app')!;
    expect(cache.claim('u-1', 'web')).toBeUndefined();
    // The follower reads the erasure of web while its record is in flight (it may be before the deletion).
    cache.forget('u-1', ['app']);
    const again = cache.claim('u-1', 'web');
    expect(again).toBeDefined();
    expect(cache.claim('u-1', 'app')).toBeUndefined();
    // The first record's ack neither caches the pair nor ends the new claim's pending state.
    cache.acknowledged([inFlight, kept]);
    expect(cache.claim('u-1', 'web')).toBeUndefined();
    cache.acknowledged([again!]);
    expect(cache.claim('u-1', 'web')).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('counts in 100 ms ticks from its creation, small integers for years', () => {
    const cache = new SeenPairCache(10, () => 5_000);
    expect([cache.tickAt(5_000), cache.tickAt(5_099), cache.tickAt(5_100), cache.tickAt(4_900)]).toEqual([0, 0, 1, -1]);
    expect(cache.tickAt(5_000 + 3 * 365 * 86_400_000)).toBeLessThan(2 ** 30);
  });

  it('stays within its bound: pairs in use stay, the others age out', () => {
    const cache = following(10);
    write(cache, 'hot', 'web');
    for (let i = 0; i < 100; i++) {
      write(cache, `u-${i}`, 'web');
      expect(write(cache, 'hot', 'web')).toBe(false);
      expect(cache.size).toBeLessThanOrEqual(10);
    }
    expect(write(cache, 'u-0', 'web')).toBe(true);
    expect(write(cache, 'u-99', 'web')).toBe(false);
  });

  it('clears when it stops following', () => {
    const cache = following();
    write(cache, 'u-1', 'web');
    cache.setFollowing(false);
    expect(cache.size).toBe(0);
    expect(cache.following).toBe(false);
  });

  it('refuses a bound it cannot keep', () => {
    expect(() => new SeenPairCache(1)).toThrow(/maxPairs must be a whole number ≥ 2, got 1/);
  });
});

describe('sourcesLeft', () => {
  it.each([
    ['a list', '["web","app"]', ['web', 'app']],
    ['a tombstone', null, undefined],
    ['not JSON', '{', undefined],
    ['not a list of ids', '[1]', undefined],
  ])('reads %s', (_name, text, expected) => {
    expect(sourcesLeft(text === null ? null : Buffer.from(text))).toEqual(expected);
  });
});
