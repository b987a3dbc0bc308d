import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseCallBytes } from '../../../src/calls/index.js';
import { parseConfigText } from '../../../src/config/load.js';
import { applyRecords, createPartitionState, dueProfiles, loadProfile, loadUserSources, sweepProfiles } from '../../../src/audiences/engine.js';
import type { EngineOutput, EventRecord, PartitionState } from '../../../src/audiences/engine.js';
import { audienceMessageId } from '../../../src/audiences/diff.js';
import { deserializeProfile, memberships as profileMemberships } from '../../../src/audiences/profile.js';
import type { Profile } from '../../../src/audiences/profile.js';
import { audienceCallMessage, audienceDeletionMessage, audienceEraseMessage, audienceSeenMessage } from '../../../src/audiences/records.js';
import { compileAudiences } from '../../../src/audiences/rules.js';
import type { AudienceSet } from '../../../src/audiences/rules.js';

const NOW = Date.UTC(2026, 4, 1, 12); // 2026-05-01T12:00:00.000Z
const MINUTE = 60_000;

function audienceSet(audiences: unknown[], extra: { hooksEnabled?: boolean } = {}): AudienceSet {
  const result = parseConfigText(
    stringify({
      sources: [
        { id: 'web', destinations: ['hooks'] },
        { id: 'app', destinations: ['hooks', 'crm'] },
        { id: 'server', destinations: ['crm', 'off'] },
      ],
      destinations: [
        { id: 'hooks', type: 'webhooks', enabled: extra.hooksEnabled ?? true, settings: { webhooks: [{ url: 'http://127.0.0.1:1/a' }] } },
        { id: 'crm', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:1/b' }] } },
        { id: 'off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: 'http://127.0.0.1:1/c' }] } },
      ],
      audiences,
    }),
    'test.yaml',
    {},
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return compileAudiences(result.config);
}

const proUsers = { name: 'Pro Users', sources: ['web'], destinations: ['hooks', 'crm'], rule: { trait: 'plan', equals: 'pro' } };
const buyers = { name: 'Buyers', sources: ['web'], destinations: ['hooks'], rule: { event: 'Order Completed', atLeast: 3 } };
const recentBuyers = { name: 'Recent Buyers', sources: ['web'], destinations: ['hooks'], rule: { event: 'Order Completed', atLeast: 2, within: '10m' } };

/** Feeds calls (JSON texts from source `web` unless given) as consecutive records. */
class Feed {
  offset = 0;
  constructor(readonly state: PartitionState = createPartitionState(0)) {}
  record(text: string, sourceId = 'web'): EventRecord {
    const parsed = parseCallBytes(Buffer.from(text));
    if (!parsed.ok) throw new Error(parsed.error);
    return { offset: this.offset++, value: audienceCallMessage(parsed.call, sourceId, NOW).value };
  }
  apply(set: AudienceSet, records: EventRecord[], now = NOW): EngineOutput {
    return applyRecords(this.state, records, set, now);
  }
  calls(set: AudienceSet, texts: string[], now = NOW, sourceId = 'web'): EngineOutput {
    return this.apply(set, texts.map((t) => this.record(t, sourceId)), now);
  }
}

const identify = (userId: string, traits: Record<string, unknown>, timestamp = '2026-05-01T11:00:00.000Z') =>
  JSON.stringify({ type: 'identify', userId, traits, timestamp });
const order = (userId: string, timestamp = '2026-05-01T11:59:00.000Z') => JSON.stringify({ type: 'track', userId, event: 'Order Completed', timestamp });

/** A stored profile, read back. */
function stored(state: PartitionState, key: string): Profile {
  const text = state.profiles.get(key);
  if (text === undefined) throw new Error(`no profile ${key}`);
  const result = deserializeProfile(key, text);
  if (!result.ok) throw new Error(result.error);
  return result.profile;
}

/** What receivers would see: destination, key and the parsed body's traits. */
function sent(out: EngineOutput): string[] {
  return out.deliveries.map((d) => `${d.destinationId} ${d.key} ${JSON.stringify((JSON.parse(d.value) as { traits?: unknown }).traits)}`);
}

describe('entering and leaving by traits', () => {
  it('sends identify(true) on entry and identify(false) on leaving, to each enabled destination, as literal bytes', () => {
    const set = audienceSet([proUsers]);
    const feed = new Feed();
    const entered = feed.calls(set, [identify('u-1', { plan: 'pro' })]);
    const messageId = audienceMessageId('u:u-1', 0, 'pro_users', 1);
    expect(entered.deliveries).toEqual([
      {
        destinationId: 'hooks',
        key: 'u-1',
        value: `{"version":1,"type":"identify","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","traits":{"pro_users":true}}`,
        headers: expect.objectContaining({ 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '', 'received-at': String(NOW) }) as unknown,
      },
      expect.objectContaining({ destinationId: 'crm', key: 'u-1' }) as unknown,
    ]);
    expect(entered.deliveries[0]?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(entered.changes).toEqual([{ audience: 'pro_users', change: 'entered' }]);
    expect(feed.state.members.get('pro_users')).toBe(1);

    expect(sent(feed.calls(set, [identify('u-1', { plan: 'pro', name: 'Ada' }, '2026-05-01T11:01:00.000Z')]))).toEqual([]);
    const left = feed.calls(set, [identify('u-1', { plan: 'free' }, '2026-05-01T11:02:00.000Z')]);
    expect(sent(left)).toEqual(['hooks u-1 {"pro_users":false}', 'crm u-1 {"pro_users":false}']);
    expect(left.changes).toEqual([{ audience: 'pro_users', change: 'left' }]);
    expect(feed.state.members.has('pro_users')).toBe(false);
    expect(JSON.parse(left.deliveries[0]!.value)).toMatchObject({ messageId: audienceMessageId('u:u-1', 0, 'pro_users', 2) });
  });

  it('uses anonymousId for users without a userId', () => {
    const feed = new Feed();
    const out = feed.calls(audienceSet([proUsers]), [JSON.stringify({ type: 'identify', anonymousId: 'anon-1', traits: { plan: 'pro' } })]);
    expect(out.deliveries[0]?.key).toBe('anon-1');
    expect(JSON.parse(out.deliveries[0]!.value)).toMatchObject({ anonymousId: 'anon-1', traits: { pro_users: true } });
    expect(out.deliveries[0]?.value).not.toContain('userId');
  });

  it('sends nothing to disabled destinations', () => {
    const feed = new Feed();
    expect(sent(feed.calls(audienceSet([proUsers], { hooksEnabled: false }), [identify('u-1', { plan: 'pro' })]))).toEqual(['crm u-1 {"pro_users":true}']);
  });

  it('ignores calls from sources that do not feed the audience, but remembers they saw the user', () => {
    const set = audienceSet([proUsers]);
    const feed = new Feed();
    expect(feed.calls(set, [identify('u-1', { plan: 'pro' })], NOW, 'app').deliveries).toEqual([]);
    expect(stored(feed.state, 'u:u-1').seen).toEqual(['app']);
  });

  it('a `not` rule takes in only users one of its sources has seen', () => {
    const set = audienceSet([{ name: 'Free', sources: ['web'], destinations: ['hooks'], rule: { not: { trait: 'plan', equals: 'pro' } } }]);
    const feed = new Feed();
    expect(sent(feed.calls(set, [identify('u-1', {})], NOW, 'app'))).toEqual([]);
    expect(sent(feed.calls(set, [JSON.stringify({ type: 'page', userId: 'u-1' })]))).toEqual(['hooks u-1 {"free":true}']);
  });
});

describe('event counts', () => {
  it('fires once, at the N-th event, and not again', () => {
    const set = audienceSet([buyers]);
    const feed = new Feed();
    expect(sent(feed.calls(set, [order('u-1'), order('u-1')]))).toEqual([]);
    expect(sent(feed.calls(set, [order('u-1')]))).toEqual(['hooks u-1 {"buyers":true}']);
    expect(sent(feed.calls(set, [order('u-1'), order('u-1')]))).toEqual([]);
  });

  it('a window expires with no new event, found by a sweep at wakeAt', () => {
    const set = audienceSet([recentBuyers]);
    const feed = new Feed();
    const t1 = NOW - 9 * MINUTE;
    expect(sent(feed.calls(set, [order('u-1', new Date(t1).toISOString()), order('u-1', new Date(NOW).toISOString())]))).toEqual(['hooks u-1 {"recent_buyers":true}']);
    const wakeAt = feed.state.wakes.get('u:u-1')!;
    expect(wakeAt).toBe(t1 + 1 + 10 * MINUTE);
    expect(dueProfiles(feed.state, wakeAt - 1)).toEqual([]);
    expect(dueProfiles(feed.state, wakeAt)).toEqual(['u:u-1']);
    const swept = sweepProfiles(feed.state, dueProfiles(feed.state, wakeAt), set, wakeAt);
    expect(sent(swept)).toEqual(['hooks u-1 {"recent_buyers":false}']);
    expect(swept.writes.has('u:u-1')).toBe(true);
    expect(swept.deliveries[0]?.headers['received-at']).toBe(String(wakeAt));
    // The other occurrence is still in the window: the next wake is when it leaves.
    expect(feed.state.wakes.get('u:u-1')).toBe(NOW + 1 + 10 * MINUTE);
  });

  it('events from before the window do not count', () => {
    const feed = new Feed();
    const old = new Date(NOW - 11 * MINUTE).toISOString();
    expect(sent(feed.calls(audienceSet([recentBuyers]), [order('u-1', old), order('u-1')]))).toEqual([]);
  });
});

describe('audience set changes', () => {
  function populated(): Feed {
    const feed = new Feed();
    feed.calls(audienceSet([]), [identify('u-1', { plan: 'pro' }), identify('u-2', { plan: 'free' }), identify('u-3', { plan: 'pro' })]);
    return feed;
  }

  it('a new audience syncs every current member once; a second sweep sends nothing', () => {
    const feed = populated();
    const set = audienceSet([proUsers]);
    const first = sweepProfiles(feed.state, feed.state.profiles.keys(), set, NOW);
    expect(sent(first).sort()).toEqual(['crm u-1 {"pro_users":true}', 'crm u-3 {"pro_users":true}', 'hooks u-1 {"pro_users":true}', 'hooks u-3 {"pro_users":true}']);
    expect([...first.writes.keys()].sort()).toEqual(['u:u-1', 'u:u-3']);
    expect(sweepProfiles(feed.state, feed.state.profiles.keys(), set, NOW).deliveries).toEqual([]);
  });

  it('a rule edit sends only the resulting changes', () => {
    const feed = populated();
    sweepProfiles(feed.state, feed.state.profiles.keys(), audienceSet([proUsers]), NOW);
    const edited = audienceSet([{ ...proUsers, rule: { trait: 'plan', in: ['free', 'pro'] } }]);
    expect(sent(sweepProfiles(feed.state, feed.state.profiles.keys(), edited, NOW)).sort()).toEqual(['crm u-2 {"pro_users":true}', 'hooks u-2 {"pro_users":true}']);
    const narrowed = audienceSet([{ ...proUsers, rule: { trait: 'plan', equals: 'free' } }]);
    expect(sent(sweepProfiles(feed.state, feed.state.profiles.keys(), narrowed, NOW)).sort()).toEqual([
      'crm u-1 {"pro_users":false}',
      'crm u-3 {"pro_users":false}',
      'hooks u-1 {"pro_users":false}',
      'hooks u-3 {"pro_users":false}',
    ]);
  });

  it('removing an audience sends nothing and forgets it; adding it back syncs its members again', () => {
    const feed = populated();
    sweepProfiles(feed.state, feed.state.profiles.keys(), audienceSet([proUsers]), NOW);
    const removed = sweepProfiles(feed.state, feed.state.profiles.keys(), audienceSet([]), NOW);
    expect(removed.deliveries).toEqual([]);
    expect([...removed.writes.keys()].sort()).toEqual(['u:u-1', 'u:u-3']);
    expect(feed.state.members.size).toBe(0);
    const back = sweepProfiles(feed.state, feed.state.profiles.keys(), audienceSet([proUsers]), NOW);
    expect(back.deliveries).toHaveLength(4);
    // A later change number than the first sync: receivers do not drop it as a duplicate.
    expect(JSON.parse(back.deliveries[0]!.value)).toMatchObject({ messageId: audienceMessageId('u:u-1', 0, 'pro_users', 1) });
  });
});

describe('crash safety', () => {
  it('drops the router’s repeats of calls it already applied, by their calls partition and offset, also after a restore', () => {
    const set = audienceSet([buyers]);
    const state = createPartitionState(0);
    let offset = 0;
    const fromCalls = (partition: number, callOffset: number): EventRecord => {
      const parsed = parseCallBytes(Buffer.from(order('u-1')));
      if (!parsed.ok) throw new Error(parsed.error);
      return { offset: offset++, value: audienceCallMessage(parsed.call, 'web', NOW, { origin: { partition, offset: callOffset } }).value };
    };
    // Calls 10 and 11 of calls partition 0, and 10 of partition 1: three orders.
    const first = applyRecords(state, [fromCalls(0, 10), fromCalls(0, 11), fromCalls(1, 10)], set, NOW);
    expect(sent(first)).toEqual(['hooks u-1 {"buyers":true}']);
    expect(first.writes.get('#call-offsets')).toBe('{"0":11,"1":10}');
    expect([...first.writes.keys()].at(-1)).toBe('#call-offsets');
    // The router crashed before committing and writes 10 and 11 again, then 12.
    const repeated = applyRecords(state, [fromCalls(0, 10), fromCalls(0, 11), fromCalls(0, 12)], set, NOW);
    expect(repeated.repeats).toBe(2);
    expect(stored(state, 'u:u-1').events?.[0]).toMatchObject({ event: 'Order Completed', source: 'web', total: 4 });

    // Restored from what was written, the repeats are still recognized.
    const restored = createPartitionState(0);
    for (const out of [first, repeated]) for (const [key, value] of out.writes) expect(loadProfile(restored, key, value)).toBeUndefined();
    expect(restored.callOffsets).toEqual(new Map([[0, 12], [1, 10]]));
    expect(applyRecords(restored, [fromCalls(0, 12), fromCalls(1, 10)], set, NOW).repeats).toBe(2);
  });


  it('replayed records at or below a profile’s applied offset change nothing', () => {
    const set = audienceSet([proUsers, buyers]);
    const feed = new Feed();
    const records = [identify('u-1', { plan: 'pro' }), order('u-1'), order('u-1'), order('u-1')].map((t) => feed.record(t));
    const first = feed.apply(set, records);
    expect(sent(first)).toHaveLength(3);
    const again = feed.apply(set, records);
    expect(again.deliveries).toEqual([]);
    expect(again.writes.size).toBe(0);
  });

  it('a restore from the written changelog and a replay gives the same messageIds', () => {
    const set = audienceSet([proUsers]);
    const feed = new Feed();
    const records = [identify('u-1', { plan: 'pro' })].map((t) => feed.record(t));
    const first = feed.apply(set, records);
    // Crash after the identifies were sent, before the changelog write: restore has nothing.
    const restored = new Feed(createPartitionState(0));
    const replay = restored.apply(set, records);
    expect(replay.deliveries.map((d) => d.headers['message-id'])).toEqual(first.deliveries.map((d) => d.headers['message-id']));
    // Crash after the changelog write: restore from it and replay: nothing new.
    const state = createPartitionState(0);
    for (const [key, value] of first.writes) expect(loadProfile(state, key, value)).toBeUndefined();
    // Every restore is followed by a full sweep, which counts the restored members.
    expect(sweepProfiles(state, state.profiles.keys(), set, NOW, true).deliveries).toEqual([]);
    expect(state.members.get('pro_users')).toBe(1);
    expect(applyRecords(state, records, set, NOW).deliveries).toEqual([]);
  });

  it('gives the same final memberships whatever order a user’s calls arrive in', () => {
    const set = audienceSet([proUsers, buyers]);
    const texts = [identify('u-1', { plan: 'pro' }, '2026-05-01T11:00:00.000Z'), identify('u-1', { plan: 'free' }, '2026-05-01T11:05:00.000Z'), order('u-1'), order('u-1'), order('u-1')];
    const forward = new Feed();
    forward.calls(set, texts);
    const backward = new Feed();
    backward.calls(set, [...texts].reverse());
    const memberships = (feed: Feed) => profileMemberships(stored(feed.state, 'u:u-1')).filter(([, changes]) => changes % 2 === 1).map(([key]) => key);
    expect(memberships(backward)).toEqual(memberships(forward));
    expect(memberships(forward)).toEqual(['buyers']);
  });
});

describe('deletions', () => {
  it('an erase record (the router sent the delete bodies) erases the profile and sends nothing', () => {
    const set = audienceSet([proUsers]);
    const feed = new Feed();
    feed.calls(set, [identify('u-1', { plan: 'pro' })]);
    expect(feed.state.members.get('pro_users')).toBe(1);
    const erase = { offset: feed.offset++, value: Buffer.from(audienceEraseMessage('u-1').value as string) };
    const out = feed.apply(set, [erase]);
    expect(out.deliveries).toEqual([]);
    expect(out.writes).toEqual(new Map([['u:u-1', null]]));
    expect(out.deletions).toEqual([expect.objectContaining({ kind: 'erase', userId: 'u-1', hadProfile: true })]);
    expect(feed.state.profiles.size).toBe(0);
    expect(feed.state.members.size).toBe(0);
    // Replayed after a crash: nothing left to erase, nothing sent, nothing written.
    const again = feed.apply(set, [erase]);
    expect(again.writes.size).toBe(0);
    expect(again.deletions[0]?.hadProfile).toBe(false);
  });


  function deletion(feed: Feed, userId: string, sourceIds?: string[]): EventRecord {
    const message = audienceDeletionMessage({ userId, ...(sourceIds ? { sourceIds } : {}), requestedAtMs: NOW });
    return { offset: feed.offset++, value: message.value };
  }

  it('sends one delete body per enabled destination of the sources that saw the user, and erases the profile', () => {
    const set = audienceSet([proUsers]);
    const feed = new Feed();
    feed.calls(set, [identify('u-1', { plan: 'pro' })]);
    feed.calls(set, [JSON.stringify({ type: 'page', userId: 'u-1' })], NOW, 'server');
    feed.calls(set, [JSON.stringify({ type: 'page', userId: 'u-1' })], NOW, 'app');
    const out = feed.apply(set, [deletion(feed, 'u-1')]);
    expect(out.deliveries.map((d) => [d.destinationId, d.key, d.value, d.headers['source-id']])).toEqual([
      ['hooks', 'u-1', '{"type":"delete","userId":"u-1","timestamp":"2026-05-01T12:00:00.000Z"}', 'web'],
      ['crm', 'u-1', '{"type":"delete","userId":"u-1","timestamp":"2026-05-01T12:00:00.000Z"}', 'server'],
    ]);
    expect(out.writes).toEqual(new Map([['u:u-1', null]]));
    expect(feed.state.profiles.has('u:u-1')).toBe(false);
    expect(feed.state.members.size).toBe(0);
    expect(out.deletions).toEqual([expect.objectContaining({ userId: 'u-1', affectedSources: ['web', 'server', 'app'], destinations: ['hooks', 'crm'] })]);
    // Erased: a later identify starts from nothing, and its entry has a new messageId.
    const again = feed.calls(set, [identify('u-1', { plan: 'pro' })]);
    expect(sent(again)).toEqual(['hooks u-1 {"pro_users":true}', 'crm u-1 {"pro_users":true}']);
    expect(again.deliveries[0]?.headers['message-id']).not.toBe(audienceMessageId('u:u-1', 0, 'pro_users', 1));
    expect(stored(feed.state, 'u:u-1').seen).toEqual(['web']);
  });

  it('uses the given sourceIds, and reports those not configured', () => {
    const set = audienceSet([]);
    const feed = new Feed();
    const out = feed.apply(set, [deletion(feed, 'never-seen', ['server', 'gone'])]);
    expect(out.deliveries.map((d) => d.destinationId)).toEqual(['crm']);
    expect(out.deletions[0]?.unknownSources).toEqual(['gone']);
    expect(out.writes.size).toBe(0);
  });
});

describe('seen sources (user.sources)', () => {
  const page = (userId: string) => JSON.stringify({ type: 'page', userId });
  const seen = (feed: Feed, userId: string, sourceId: string): EventRecord => ({ offset: feed.offset++, value: audienceSeenMessage(userId, sourceId).value });
  const deletion = (feed: Feed, userId: string, sourceIds?: string[]): EventRecord => ({
    offset: feed.offset++,
    value: audienceDeletionMessage({ userId, ...(sourceIds ? { sourceIds } : {}), requestedAtMs: NOW }).value,
  });
  const erase = (feed: Feed, userId: string, sourceIds?: string[]): EventRecord => ({
    offset: feed.offset++,
    value: Buffer.from(audienceEraseMessage(userId, sourceIds).value as string),
  });

  it('records the sources of seen records and of call records with a userId, writing only what is new', () => {
    const set = audienceSet([]);
    const feed = new Feed();
    const first = feed.apply(set, [seen(feed, 'u-1', 'server'), seen(feed, 'u-1', 'server'), feed.record(page('u-1'), 'app')]);
    expect(first.sourceWrites).toEqual(new Map([['u-1', '["server","app"]']]));
    const again = feed.apply(set, [seen(feed, 'u-1', 'app'), feed.record(page('u-1'), 'server')]);
    expect(again.sourceWrites.size).toBe(0);
    const anonymous = feed.apply(set, [feed.record(JSON.stringify({ type: 'page', anonymousId: 'a-1' }), 'web')]);
    expect(anonymous.sourceWrites.size).toBe(0);
    expect(feed.state.userSources.of('a-1')).toEqual([]);
  });

  it('a deletion without sourceIds goes to the sources that have seen the user only, then erases them', () => {
    const set = audienceSet([]);
    const feed = new Feed();
    feed.apply(set, [seen(feed, 'u-1', 'server'), seen(feed, 'u-2', 'web')]);
    const out = feed.apply(set, [deletion(feed, 'u-1')]);
    expect(out.deliveries.map((d) => [d.destinationId, d.value, d.headers['source-id']])).toEqual([
      ['crm', '{"type":"delete","userId":"u-1","timestamp":"2026-05-01T12:00:00.000Z"}', 'server'],
    ]);
    expect(out.deletions).toEqual([expect.objectContaining({ kind: 'deletion', affectedSources: ['server'], destinations: ['crm'], result: 'sent' })]);
    expect(out.sourceWrites).toEqual(new Map([['u-1', null]]));
    expect(feed.state.userSources.of('u-2')).toEqual(['web']);
    // Seen again after the deletion: a fresh set.
    const fresh = feed.apply(set, [seen(feed, 'u-1', 'web')]);
    expect(fresh.sourceWrites).toEqual(new Map([['u-1', '["web"]']]));
  });

  it("a tombstone carries the deletion record's time, and so does a value written after a deletion in the same batch", () => {
    const set = audienceSet([]);
    const feed = new Feed();
    feed.apply(set, [seen(feed, 'u-1', 'web'), seen(feed, 'u-2', 'web')]);
    const out = feed.apply(set, [
      { ...deletion(feed, 'u-1'), timestampMs: NOW - 5 },
      { ...deletion(feed, 'u-2'), timestampMs: NOW - 4 },
      seen(feed, 'u-2', 'app'),
      seen(feed, 'u-3', 'app'),
    ]);
    expect(out.sourceWrites).toEqual(new Map([['u-1', null], ['u-2', '["app"]'], ['u-3', '["app"]']]));
    // NOTE: routers rewrite the pairs their calls found since this time (seen-follower.ts).
    // u-2's value also erases `web`: stamped with the write's time instead, it would let
    // a web call routed between the deletion and this write go unrecorded.
    expect(out.deletedAt).toEqual(new Map([['u-1', NOW - 5], ['u-2', NOW - 4]]));
    // Two deletions of a user in a batch (a router's repeat): the earlier time, so calls
    // that found a cached pair between the two are written again too.
    const twice = feed.apply(set, [{ ...deletion(feed, 'u-2'), timestampMs: NOW - 3 }, seen(feed, 'u-2', 'web'), { ...deletion(feed, 'u-2'), timestampMs: NOW - 1 }]);
    expect(twice.sourceWrites).toEqual(new Map([['u-2', null]]));
    expect(twice.deletedAt).toEqual(new Map([['u-2', NOW - 3]]));
  });

  describe('a replay after a crash between the profiles write and the user.sources write', () => {
    // The two changelogs are separate topics: a crash may leave one written and not the
    // other, and the processor then replays the batch from its last commit.
    const call = (feed: Feed, userId: string, callOffset: number): EventRecord => {
      const parsed = parseCallBytes(Buffer.from(order(userId)));
      if (!parsed.ok) throw new Error(parsed.error);
      return { offset: feed.offset++, value: audienceCallMessage(parsed.call, 'web', NOW, { origin: { partition: 0, offset: callOffset } }).value };
    };
    /** The state a restore finds when the profiles of `outs` were written and only the user.sources of `sourcesOf`. */
    const restoredFrom = (outs: EngineOutput[], sourcesOf: EngineOutput[]): PartitionState => {
      const state = createPartitionState(0);
      for (const out of outs) for (const [key, value] of out.writes) loadProfile(state, key, value);
      for (const out of sourcesOf) for (const [key, value] of out.sourceWrites) loadUserSources(state, key, value);
      return state;
    };

    it('a call whose offset the written call offsets cover still records its source', () => {
      const set = audienceSet([buyers]);
      const feed = new Feed();
      const batch = [call(feed, 'u-1', 5)];
      const out = feed.apply(set, batch);
      expect(out.sourceWrites).toEqual(new Map([['u-1', '["web"]']]));
      const replay = new Feed(restoredFrom([out], []));
      const again = replay.apply(set, batch);
      expect(again.sourceWrites).toEqual(new Map([['u-1', '["web"]']]));
      expect(replay.state.userSources.of('u-1')).toEqual(['web']);
    });

    it('a deletion followed by a call in the same batch still erases the sources the call did not bring back', () => {
      const set = audienceSet([buyers]);
      const feed = new Feed();
      const before = feed.apply(set, [seen(feed, 'u-1', 'server'), call(feed, 'u-1', 5)]);
      const batch = [deletion(feed, 'u-1'), call(feed, 'u-1', 6)];
      const out = feed.apply(set, batch);
      expect(out.deliveries.map((d) => d.destinationId)).toEqual(['crm', 'hooks']);
      expect(feed.state.userSources.of('u-1')).toEqual(['web']);
      // The new profile (applied past the deletion) and the call offsets were written; user.sources was not.
      const replay = new Feed(restoredFrom([before, out], [before]));
      const again = replay.apply(set, batch);
      expect(replay.state.userSources.of('u-1')).toEqual(['web']);
      expect(again.sourceWrites).toEqual(new Map([['u-1', '["web"]']]));
      // The delete bodies went out before the crash: not sent, nor counted, again.
      expect(again.deliveries).toEqual([]);
      expect(again.deletions).toEqual([]);
    });
  });

  it('a user no source has seen gets no delete, counted as no_affected_source, and nothing is written', () => {
    const set = audienceSet([]);
    const feed = new Feed();
    const out = feed.apply(set, [deletion(feed, 'stranger')]);
    expect(out.deliveries).toEqual([]);
    expect(out.deletions).toEqual([expect.objectContaining({ affectedSources: [], destinations: [], result: 'no_affected_source' })]);
    expect(out.sourceWrites.size).toBe(0);
    expect(out.writes.size).toBe(0);
  });

  it('a user seen only by sources whose destinations are disabled gets no delete either', () => {
    const set = audienceSet([], { hooksEnabled: false });
    const feed = new Feed();
    feed.apply(set, [seen(feed, 'u-1', 'web')]);
    const out = feed.apply(set, [deletion(feed, 'u-1')]);
    expect(out.deliveries).toEqual([]);
    expect(out.deletions[0]?.result).toBe('no_affected_source');
    expect(out.sourceWrites).toEqual(new Map([['u-1', null]]));
  });

  it('an erase after a request naming sources drops those sources only; without sourceIds, all', () => {
    const set = audienceSet([]);
    const feed = new Feed();
    feed.apply(set, [seen(feed, 'u-1', 'web'), seen(feed, 'u-1', 'app'), seen(feed, 'u-2', 'web')]);
    const some = feed.apply(set, [erase(feed, 'u-1', ['app'])]);
    expect(some.sourceWrites).toEqual(new Map([['u-1', '["web"]']]));
    expect(some.deletions[0]?.result).toBeUndefined();
    const all = feed.apply(set, [erase(feed, 'u-2')]);
    expect(all.sourceWrites).toEqual(new Map([['u-2', null]]));
    // A deletion naming its sources, carried out here, drops those only too.
    const named = feed.apply(set, [deletion(feed, 'u-1', ['web'])]);
    expect(named.deliveries.map((d) => d.destinationId)).toEqual(['hooks']);
    expect(named.sourceWrites).toEqual(new Map([['u-1', null]]));
  });

  it('restores from the changelog: values replace, tombstones erase, unreadable values are reported', () => {
    const set = audienceSet([]);
    const state = createPartitionState(0);
    expect(loadUserSources(state, 'u-1', '["web"]')).toBeUndefined();
    expect(loadUserSources(state, 'u-1', '["web","server"]')).toBeUndefined();
    expect(loadUserSources(state, 'u-2', '["app"]')).toBeUndefined();
    expect(loadUserSources(state, 'u-2', null)).toBeUndefined();
    expect(loadUserSources(state, 'u-3', 'nope')).toMatch(/not JSON/);
    const feed = new Feed(state);
    const out = feed.apply(set, [deletion(feed, 'u-1'), deletion(feed, 'u-2')]);
    expect(out.deliveries.map((d) => d.destinationId)).toEqual(['hooks', 'crm']);
    expect(out.deletions.map((d) => d.result)).toEqual(['sent', 'no_affected_source']);
  });
});

describe('bad stored profiles', () => {
  it('an unreadable profile is reported, dropped, and the user starts afresh', () => {
    const set = audienceSet([proUsers]);
    const state = createPartitionState(0);
    expect(loadProfile(state, 'u:u-1', '{"v":1,"b":0,"o":"x","s":[]}')).toBeUndefined();
    const swept = sweepProfiles(state, state.profiles.keys(), set, NOW, true);
    expect(swept.problems).toEqual([{ key: 'u:u-1', error: 'stored profile unreadable, dropped: "b" and "o" must be offsets' }]);
    expect(state.profiles.size).toBe(0);
    const feed = new Feed(state);
    expect(sent(feed.calls(set, [identify('u-1', { plan: 'pro' })]))).toEqual(['hooks u-1 {"pro_users":true}', 'crm u-1 {"pro_users":true}']);
  });

  it('unreadable call offsets are reported by the restore', () => {
    expect(loadProfile(createPartitionState(0), '#call-offsets', '{"x":1}')).toMatch(/not partition: offset/);
  });
});

describe('bad records', () => {
  it('are reported with their offset and skipped', () => {
    const feed = new Feed();
    const out = feed.apply(audienceSet([proUsers]), [
      { offset: 5, value: Buffer.from('{') },
      { offset: 6, value: null },
      { offset: 7, value: Buffer.from('{"kind":"call","type":"identify","sourceId":"web","timestampMs":1,"receivedAtMs":1}') },
    ]);
    expect(out.problems.map((p) => p.offset)).toEqual([5, 6, 7]);
    expect(out.problems[2]?.error).toMatch(/userId or anonymousId/);
    expect(out.deliveries).toEqual([]);
  });
});
