import { describe, expect, it } from 'vitest';
import { UserSources } from '../../../src/audiences/user-sources.js';

describe('UserSources', () => {
  it('adds sources in first-seen order and returns the value to write only when the set grows', () => {
    const users = new UserSources();
    expect(users.add('u-1', 'web')).toBe('["web"]');
    expect(users.add('u-1', 'web')).toBeUndefined();
    expect(users.add('u-1', 'app')).toBe('["web","app"]');
    expect(users.of('u-1')).toEqual(['web', 'app']);
    expect(users.of('nobody')).toEqual([]);
  });

  it('removes the named sources (a new value or a tombstone), or all of them', () => {
    const users = new UserSources();
    users.add('u-1', 'web');
    users.add('u-1', 'app');
    users.add('u-2', 'web');
    expect(users.remove('u-1', ['app', 'gone'])).toBe('["web"]');
    expect(users.remove('u-1', ['app'])).toBeUndefined();
    expect(users.remove('u-1', ['web'])).toBeNull();
    expect(users.remove('u-2')).toBeNull();
    expect(users.remove('u-2')).toBeUndefined();
    expect(users.size).toBe(0);
  });

  it('shares one string per distinct list', () => {
    const users = new UserSources();
    users.add('u-1', 'web');
    users.add('u-2', 'web');
    expect(Object.is(users.valueOf('u-1'), users.valueOf('u-2'))).toBe(true);
  });

  const loads: Array<[string, string | null, string[], string | undefined]> = [
    ['a list', '["web","app"]', ['web', 'app'], undefined],
    ['a tombstone', null, [], undefined],
    ['duplicates, kept once', '["web","web"]', ['web'], undefined],
    ['not JSON', '[', ['old'], 'not JSON'],
    ['an empty list', '[]', ['old'], 'not a non-empty list of source ids'],
    ['a list with a number', '["web",1]', ['old'], 'not a non-empty list of source ids'],
  ];
  it.each(loads)('loads %s', (_name, value, after, problem) => {
    const users = new UserSources();
    users.add('u-1', 'old');
    const result = users.load('u-1', value);
    if (problem === undefined) expect(result).toBeUndefined();
    else expect(result).toMatch(problem);
    expect(users.of('u-1')).toEqual(after);
  });
});
