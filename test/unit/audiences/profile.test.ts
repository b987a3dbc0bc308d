import { describe, expect, it } from 'vitest';
import {
  applyCall,
  countRecent,
  deserializeProfile,
  dropMemberships,
  identityOf,
  membershipOf,
  memberships,
  newProfile,
  nextWake,
  profileKey,
  prune,
  recordOccurrence,
  ruleInputs,
  serializeProfile,
  setMembership,
} from '../../../src/audiences/profile.js';
import type { CallFacts, Profile } from '../../../src/audiences/profile.js';
import type { AudienceSet, EventSpec } from '../../../src/audiences/rules.js';

const NOW = Date.UTC(2026, 4, 1, 12);
const HOUR = 3_600_000;

function setWith(events: Record<string, EventSpec>): AudienceSet {
  return {
    audiences: [],
    events: new Map(Object.entries(events)),
    enabledDestinations: new Set(),
    sourceDestinations: new Map(),
  };
}

const exact3: EventSpec = { keep: 3, windowsMs: [HOUR], granularityMs: 1 };

describe('recordOccurrence: the newest `keep` times, ascending', () => {
  const cases: Array<[string, number[], EventSpec, number[]]> = [
    ['first', [100], exact3, [100, 1]],
    ['in order', [100, 200, 300], exact3, [100, 1, 200, 1, 300, 1]],
    ['drops the oldest beyond keep', [100, 200, 300, 400], exact3, [200, 1, 300, 1, 400, 1]],
    ['out of order is sorted', [300, 100, 200], exact3, [100, 1, 200, 1, 300, 1]],
    ['an old one beyond keep is dropped at once', [200, 300, 400, 100], exact3, [200, 1, 300, 1, 400, 1]],
    ['equal times share a pair', [100, 100, 200], exact3, [100, 2, 200, 1]],
    ['a shared pair is kept whole while any of it is needed', [100, 100, 200, 300], exact3, [100, 2, 200, 1, 300, 1]],
    ['a shared pair goes once none of it is needed', [100, 100, 200, 300, 400], exact3, [200, 1, 300, 1, 400, 1]],
    ['bucketed to the granularity', [1_000, 1_050, 1_100, 1_250], { keep: 100, windowsMs: [6_000], granularityMs: 100 }, [1_000, 2, 1_100, 1, 1_200, 1]],
  ];
  it.each(cases)('%s', (_name, times, spec, expected) => {
    let recent: number[] | undefined;
    for (const t of times) recent = recordOccurrence(recent, t, spec);
    expect(recent).toEqual(expected);
  });
});

describe('countRecent', () => {
  const cases: Array<[string, number[], number, number, number, number]> = [
    ['all inside', [NOW - 3, 1, NOW - 2, 1, NOW - 1, 1], 1, 10, NOW, 3],
    ['the window edge is inside', [NOW - 10, 1, NOW - 5, 2], 1, 10, NOW, 3],
    ['one ms past the edge is outside', [NOW - 11, 1, NOW - 5, 2], 1, 10, NOW, 2],
    ['a bucket counts while it overlaps the window', [NOW - 150, 4], 100, 100, NOW, 4],
    ['a bucket wholly before the window does not', [NOW - 200, 4], 100, 100, NOW, 0],
    ['future times count', [NOW + 1_000, 2], 1, 10, NOW, 2],
  ];
  it.each(cases)('%s', (_name, recent, granularity, within, now, expected) => {
    expect(countRecent(recent, granularity, within, now)).toBe(expected);
  });
});

function call(facts: Partial<CallFacts>): CallFacts {
  return { type: 'identify', sourceId: 'web', timestampMs: NOW, ...facts };
}

describe('applyCall', () => {
  it('records the sources that have seen the user, once each, whatever they feed', () => {
    const profile = newProfile('u:1', 0);
    const set = setWith({});
    expect(applyCall(profile, call({ type: 'page', sourceId: 'server' }), set)).toBe(true);
    expect(applyCall(profile, call({ type: 'page', sourceId: 'web' }), set)).toBe(true);
    expect(applyCall(profile, call({ type: 'page', sourceId: 'server' }), set)).toBe(false);
    expect(profile.seen).toEqual(['server', 'web']);
    expect(profile.traits).toBeUndefined();
  });

  it('keeps traits from every source, apart: an audience added later may read any', () => {
    const profile = newProfile('u:1', 0);
    applyCall(profile, call({ sourceId: 'server', traits: { plan: 'pro' } }), setWith({}));
    expect(ruleInputs(profile, ['server'], setWith({})).trait('plan')).toBe('pro');
    expect(ruleInputs(profile, ['web'], setWith({})).trait('plan')).toBeUndefined();
  });

  it('merges traits per key, last writer by call timestamp wins, whatever the arrival order', () => {
    const set = setWith({});
    const inOrder = newProfile('u:1', 0);
    const reversed = newProfile('u:1', 0);
    const a = call({ timestampMs: NOW, traits: { plan: 'pro', name: 'Ada' } });
    const b = call({ timestampMs: NOW + 1, traits: { plan: 'free' } });
    applyCall(inOrder, a, set);
    applyCall(inOrder, b, set);
    applyCall(reversed, b, set);
    applyCall(reversed, a, set);
    for (const profile of [inOrder, reversed]) {
      const view = ruleInputs(profile, ['web'], set);
      expect(view.trait('plan')).toBe('free');
      expect(view.trait('name')).toBe('Ada');
    }
    expect(serializeProfile(reversed)).toBe(serializeProfile(inOrder));
  });

  it('reports no change for an identify that changes nothing', () => {
    const set = setWith({});
    const profile = newProfile('u:1', 0);
    expect(applyCall(profile, call({ traits: { plan: 'pro', tags: ['a'] } }), set)).toBe(true);
    expect(applyCall(profile, call({ traits: { plan: 'pro', tags: ['a'] } }), set)).toBe(false);
    expect(applyCall(profile, call({ timestampMs: NOW - 1, traits: { plan: 'free' } }), set)).toBe(false);
  });

  it('reads a trait across the audience sources: the most recently set wins', () => {
    const set = setWith({});
    const profile = newProfile('u:1', 0);
    applyCall(profile, call({ sourceId: 'web', timestampMs: NOW + 5, traits: { plan: 'pro' } }), set);
    applyCall(profile, call({ sourceId: 'app', timestampMs: NOW, traits: { plan: 'free', app: 1 } }), set);
    expect(ruleInputs(profile, ['web', 'app'], set).trait('plan')).toBe('pro');
    expect(ruleInputs(profile, ['app'], set).trait('plan')).toBe('free');
    expect(ruleInputs(profile, ['web'], set).trait('app')).toBeUndefined();
  });

  it('counts only events some rule counts, per source, with totals and kept times', () => {
    const set = setWith({ 'Order Completed': exact3, 'Signed Up': { keep: 0, windowsMs: [], granularityMs: 1 } });
    const profile = newProfile('u:1', 0);
    expect(applyCall(profile, call({ type: 'track', event: 'Page Viewed' }), set)).toBe(true); // seen only
    expect(applyCall(profile, call({ type: 'track', event: 'Page Viewed' }), set)).toBe(false);
    for (let i = 0; i < 5; i++) applyCall(profile, call({ type: 'track', event: 'Order Completed', timestampMs: NOW - i * 1000 }), set);
    applyCall(profile, call({ type: 'track', event: 'Order Completed', sourceId: 'app', timestampMs: NOW }), set);
    applyCall(profile, call({ type: 'track', event: 'Signed Up' }), set);
    expect(profile.events).toEqual([
      { event: 'Order Completed', source: 'web', total: 5, recent: [NOW - 2000, 1, NOW - 1000, 1, NOW, 1] },
      { event: 'Order Completed', source: 'app', total: 1, recent: [NOW, 1] },
      { event: 'Signed Up', source: 'web', total: 1, recent: undefined },
    ]);
    const view = ruleInputs(profile, ['web', 'app'], set);
    expect(view.count('Order Completed', undefined, NOW)).toBe(6);
    expect(view.count('Order Completed', 1500, NOW)).toBe(3);
    expect(ruleInputs(profile, ['app'], set).count('Order Completed', undefined, NOW)).toBe(1);
  });
});

describe('nextWake and prune', () => {
  const set = setWith({ 'Order Completed': { keep: 2, windowsMs: [HOUR, 2 * HOUR], granularityMs: 1 } });
  function withOrders(times: number[]): Profile {
    const profile = newProfile('u:1', 0);
    for (const t of times) applyCall(profile, call({ type: 'track', event: 'Order Completed', timestampMs: t }), set);
    return profile;
  }

  it('wakes when the oldest kept time leaves the smallest window it is still in', () => {
    expect(nextWake(withOrders([NOW - 10, NOW]), set, NOW)).toBe(NOW - 10 + 1 + HOUR);
    // Out of the 1h window already; leaves the 2h window before NOW leaves the 1h one.
    expect(nextWake(withOrders([NOW - HOUR - 10, NOW]), set, NOW)).toBe(NOW - HOUR - 10 + 1 + 2 * HOUR);
    expect(nextWake(withOrders([NOW - 3 * HOUR]), set, NOW)).toBe(Infinity);
    expect(nextWake(newProfile('u:1', 0), set, NOW)).toBe(Infinity);
  });

  it('drops kept times older than every window and events no rule counts, never traits', () => {
    const profile = withOrders([NOW - 3 * HOUR, NOW - 10]);
    applyCall(profile, call({ traits: { plan: 'pro' } }), set);
    prune(profile, set, NOW);
    expect(profile.events).toEqual([{ event: 'Order Completed', source: 'web', total: 2, recent: [NOW - 10, 1] }]);
    prune(profile, setWith({}), NOW);
    expect(profile.events).toBeUndefined();
    expect(ruleInputs(profile, ['web'], set).trait('plan')).toBe('pro');
  });
});

describe('changelog format', () => {
  it('round-trips a full profile, odd trait names included', () => {
    const set = setWith({ 'Order Completed': exact3, 'Signed Up': { keep: 0, windowsMs: [], granularityMs: 1 } });
    const profile = newProfile('a:anon-1', 41);
    profile.applied = 99;
    applyCall(profile, call({ traits: JSON.parse('{"__proto__":"p","plan":"pro","nested":{"a":[1,2]}}') as Record<string, unknown> }), set);
    applyCall(profile, call({ type: 'track', event: 'Order Completed', timestampMs: NOW }), set);
    applyCall(profile, call({ type: 'track', event: 'Signed Up', sourceId: 'app' }), set);
    setMembership(profile, 'high_value', 3);
    const text = serializeProfile(profile);
    expect(JSON.parse(text)).toEqual({
      v: 1,
      b: 41,
      o: 99,
      s: ['web', 'app'],
      t: { web: JSON.parse(`{"__proto__":["p",${NOW}],"plan":["pro",${NOW}],"nested":[{"a":[1,2]},${NOW}]}`) as unknown },
      e: { 'Order Completed': { web: [1, [NOW, 1]] }, 'Signed Up': { app: [1] } },
      m: { high_value: 3 },
    });
    const back = deserializeProfile('a:anon-1', text);
    expect(back.ok).toBe(true);
    if (!back.ok) return;
    expect(serializeProfile(back.profile)).toBe(text);
    expect(ruleInputs(back.profile, ['web'], set).trait('__proto__')).toBe('p');
    expect(Object.getPrototypeOf(back.profile)).toBe(Object.prototype);
  });

  it('writes a bare profile compactly', () => {
    expect(serializeProfile(newProfile('u:1', 7))).toBe('{"v":1,"b":7,"o":-1,"s":[]}');
  });

  const bad: Array<[string, string, string, RegExp]> = [
    ['not JSON', 'u:1', '{', /not JSON/],
    ['not an object', 'u:1', '[1]', /not a JSON object/],
    ['another version', 'u:1', '{"v":2,"b":0,"o":0,"s":[]}', /format version 2/],
    ['bad key', 'x:1', '{"v":1,"b":0,"o":0,"s":[]}', /not "u:<userId>"/],
    ['bad offsets', 'u:1', '{"v":1,"b":"0","o":0,"s":[]}', /offsets/],
    ['bad trait pair', 'u:1', '{"v":1,"b":0,"o":0,"s":[],"t":{"web":{"plan":"pro"}}}', /\[value, timestampMs\]/],
    ['odd kept times', 'u:1', '{"v":1,"b":0,"o":0,"s":[],"e":{"E":{"web":[1,[5]]}}}', /pairs/],
    ['bad membership', 'u:1', '{"v":1,"b":0,"o":0,"s":[],"m":{"a":true}}', /whole number/],
  ];
  it.each(bad)('refuses %s with the reason', (_name, key, text, error) => {
    const result = deserializeProfile(key, text);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(error);
  });
});

describe('memberships', () => {
  it('are set, read, listed and dropped by audience key', () => {
    const profile = newProfile('u:1', 0);
    expect(membershipOf(profile, 'a')).toBeUndefined();
    setMembership(profile, 'a', 1);
    setMembership(profile, 'b', 2);
    setMembership(profile, 'a', 3);
    expect(membershipOf(profile, 'a')).toBe(3);
    expect(memberships(profile)).toEqual([
      ['a', 3],
      ['b', 2],
    ]);
    expect(dropMemberships(profile, (key) => key !== 'a')).toEqual([['a', 3]]);
    expect(memberships(profile)).toEqual([['b', 2]]);
    expect(dropMemberships(profile, () => false)).toEqual([['b', 2]]);
    expect(profile.members).toBeUndefined();
  });
});

describe('identity keys', () => {
  it('keeps a userId and an equal anonymousId apart', () => {
    expect(profileKey('x', undefined)).toBe('u:x');
    expect(profileKey(undefined, 'x')).toBe('a:x');
    expect(profileKey('x', 'y')).toBe('u:x');
    expect(identityOf('u:x')).toEqual({ userId: 'x' });
    expect(identityOf('a:x:y')).toEqual({ anonymousId: 'x:y' });
  });
});
