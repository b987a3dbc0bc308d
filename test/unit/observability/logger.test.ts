import { describe, expect, it } from 'vitest';
import { userHashForLog } from '../../../src/observability/logger.js';

describe('userHashForLog', () => {
  // Expected values from `printf %s ID | sha256sum | cut -c1-16`.
  it.each([
    ['u-3', 'dba074d40fbe301b'],
    ['ünïcode@example.com', '96cc00c8f00c5fd7'],
  ])('%s → %s', (userId, hash) => {
    expect(userHashForLog(userId)).toBe(hash);
  });

  it('never contains the id itself', () => {
    expect(userHashForLog('alice@example.com')).not.toContain('alice');
  });
});
