import { describe, expect, it } from 'vitest';
import { ForeignAssignment, foreignTopics } from '../../../src/kafka/foreign-assignment.js';
import { silentLogger } from '../../../src/observability/logger.js';

describe('foreignTopics', () => {
  it.each([
    ['none when every assigned topic is subscribed', ['a.calls', 'a.deletions'], ['a.calls', 'a.deletions'], []],
    ['none for an empty assignment', [], ['a.calls'], []],
    ['the topics not subscribed, once each, sorted', ['b.calls', 'a.calls', 'b.calls', 'b.deletions'], ['a.calls'], ['b.calls', 'b.deletions']],
  ])('%s', (_, assigned, subscribed, expected) => {
    expect(foreignTopics(assigned, subscribed)).toEqual(expected);
  });
});

describe('ForeignAssignment', () => {
  it('is not ready while the latest join held foreign topics, and ready again after a clean one', () => {
    const foreign = new ForeignAssignment('switchyard.router', silentLogger());
    expect(foreign.notReady()).toBeUndefined();
    foreign.joined(['staging.calls']);
    expect(foreign.current()).toEqual(['staging.calls']);
    expect(foreign.notReady()).toBe(
      'consumer group switchyard.router assigned this member partitions of topics it does not read (staging.calls): another deployment or program shares the group id',
    );
    foreign.joined([]);
    expect(foreign.notReady()).toBeUndefined();
  });
});
