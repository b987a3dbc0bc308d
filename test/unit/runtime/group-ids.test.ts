import { describe, expect, it } from 'vitest';
import { audiencesGroupId, delivererGroupId, dlqListGroupId, groupPrefixOf, legacyGroupIds, replayDryRunGroupId, replayGroupId, routerGroupId, seenFollowerGroupId } from '../../../src/runtime/group-ids.js';
import type { GroupNaming } from '../../../src/runtime/group-ids.js';

const naming = (kafka: { topicPrefix: string; groupPrefix?: string }): GroupNaming => ({ kafka: { clientId: 'switchyard', ...kafka } });

describe('consumer group ids', () => {
  it.each([
    ['the topic prefix by default', naming({ topicPrefix: 'switchyard.' }), 'switchyard.'],
    ['an empty topic prefix', naming({ topicPrefix: '' }), ''],
    ['kafka.groupPrefix over the topic prefix', naming({ topicPrefix: 'switchyard.', groupPrefix: 'staging.sy-' }), 'staging.sy-'],
    ['an empty kafka.groupPrefix', naming({ topicPrefix: 'switchyard.', groupPrefix: '' }), ''],
  ])('start with %s', (_, config, prefix) => {
    expect(groupPrefixOf(config)).toBe(prefix);
    expect(routerGroupId(config)).toBe(`${prefix}router`);
    expect(audiencesGroupId(config)).toBe(`${prefix}audiences`);
    expect(delivererGroupId(config)).toBe(`${prefix}deliverer`);
    expect(replayGroupId(config, 'hooks-main')).toBe(`${prefix}replay.hooks-main`);
  });

  it('give two deployments that differ only by topic prefix no group in common (the default clientId in both)', () => {
    const staging = naming({ topicPrefix: 'staging.' });
    const production = naming({ topicPrefix: 'production.' });
    const ids = (c: GroupNaming) => [routerGroupId(c), audiencesGroupId(c), delivererGroupId(c), replayGroupId(c, 'hooks')];
    const shared = ids(staging).filter((id) => ids(production).includes(id));
    expect(shared).toEqual([]);
  });

  it.each([
    ['seen follower', seenFollowerGroupId, /^switchyard\.seen\.[0-9a-f]{12}$/],
    ['dlq list', dlqListGroupId, /^switchyard\.dlq-list\.[0-9a-f]{12}$/],
    ['replay dry run', (c: GroupNaming) => replayDryRunGroupId(c, 'hooks'), /^switchyard\.replay-dry-run\.hooks\.[0-9a-f]{12}$/],
  ])('make a %s group of its own per run, under the prefix', (_, make, pattern) => {
    const config = naming({ topicPrefix: 'switchyard.' });
    const first = make(config);
    expect(first).toMatch(pattern);
    expect(make(config)).not.toBe(first);
  });

  it('keep the names of older versions, from the client id, for the upgrade', () => {
    const config: GroupNaming = { kafka: { clientId: 'sy', topicPrefix: 'switchyard.' } };
    expect(legacyGroupIds.router(config)).toBe('sy-router');
    expect(legacyGroupIds.audiences(config)).toBe('sy-audiences');
    expect(legacyGroupIds.deliverer(config)).toBe('sy-deliverer');
    expect(legacyGroupIds.delivererOfDestination(config, 'hooks')).toBe('sy-deliverer-hooks');
    expect(legacyGroupIds.replay(config, 'hooks')).toBe('sy-replay-hooks');
  });
});
