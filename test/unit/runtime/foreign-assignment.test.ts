import { describe, expect, it } from 'vitest';
import { ForeignAssignment } from '../../../src/runtime/foreign-assignment.js';
import { silentLogger } from '../../../src/observability/logger.js';

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
