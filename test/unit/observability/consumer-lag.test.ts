import { describe, expect, it } from 'vitest';
import { topicLag } from '../../../src/observability/consumer-lag.js';

describe('topicLag', () => {
  it('sums high watermark minus committed offset over partitions', () => {
    expect(
      topicLag(
        [
          { partition: 0, high: '100', low: '0' },
          { partition: 1, high: '50', low: '0' },
        ],
        [
          { partition: 0, offset: '90' },
          { partition: 1, offset: '50' },
        ],
      ),
    ).toBe(10);
  });

  it('counts from the log start where nothing is committed or the commit is older than the log', () => {
    expect(
      topicLag(
        [
          { partition: 0, high: '100', low: '20' },
          { partition: 1, high: '30', low: '10' },
          { partition: 2, high: '5', low: '0' },
        ],
        [
          { partition: 0, offset: '-1' },
          { partition: 1, offset: '3' },
        ],
      ),
    ).toBe(80 + 20 + 5);
  });

  it('is zero for empty topics and never negative', () => {
    expect(topicLag([{ partition: 0, high: '0', low: '0' }], [{ partition: 0, offset: '-1' }])).toBe(0);
    expect(topicLag([{ partition: 0, high: '10', low: '0' }], [{ partition: 0, offset: '12' }])).toBe(0);
  });
});
