import { afterEach, describe, expect, it, vi } from 'vitest';
import { quietSkip, startLagSampler, topicLag } from '../../../src/observability/consumer-lag.js';
import type { LagSource } from '../../../src/observability/consumer-lag.js';
import { createMetrics } from '../../../src/observability/metrics.js';

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

describe('quietSkip', () => {
  const at = 1_000_000;
  const caughtUp = { at, allCaughtUp: true, topics: 3 };
  it.each([
    ['caught up, nothing fetched since', caughtUp, at - 1, 3, at + 10_000, true],
    ['no sample yet', undefined, at - 1, 3, at + 10_000, false],
    ['lag at the last sample', { ...caughtUp, allCaughtUp: false }, at - 1, 3, at + 10_000, false],
    ['records fetched since the last sample started', caughtUp, at, 3, at + 10_000, false],
    ['the consumer cannot tell (paused, not joined)', caughtUp, undefined, 3, at + 10_000, false],
    ['a reload added a topic', caughtUp, at - 1, 4, at + 10_000, false],
    ['the last sample is as old as the quiet interval', caughtUp, at - 1, 3, at + 60_000, false],
  ] as const)('%s', (_, last, recordsMovedAt, topicsNow, now, expected) => {
    expect(quietSkip(last, { recordsMovedAt, topicsNow, now }, 60_000)).toBe(expected);
  });
});

describe('startLagSampler', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /** A source with one partition per topic whose high watermark the test sets; commits follow it unless told otherwise. */
  const fakeSource = () => {
    const state = { high: 5, committed: 5, asked: 0 };
    const source: LagSource = {
      committedOffsets: async (_groupId, topics) => topics.map((topic) => ({ topic, partitions: [{ partition: 0, offset: String(state.committed) }] })),
      partitionEnds: async () => {
        state.asked += 1;
        return [{ partition: 0, high: String(state.high), low: '0' }];
      },
    };
    return { state, source };
  };

  it('samples a caught-up group whose records did not move only every quiet interval, and every interval again once they move', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { state, source } = fakeSource();
    let movedAt: number | undefined = 0;
    const sampler = startLagSampler({
      source,
      metrics: createMetrics({ defaultMetrics: false }),
      groups: () => [{ groupId: 'g', topics: ['t'] }],
      intervalMs: 10_000,
      quietIntervalMs: 60_000,
      recordsMovedAt: () => movedAt,
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(state.asked).toBe(1); // the first sample, at once
    await vi.advanceTimersByTimeAsync(50_000);
    expect(state.asked).toBe(1); // quiet and caught up: five due samples skipped
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.asked).toBe(2); // 60 s on: sampled anyway
    state.high = 9; // records came and were fetched
    movedAt = Date.now();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.asked).toBe(3);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(state.asked).toBe(4); // lag 4 at the last sample: every interval
    movedAt = undefined; // a partition paused: the consumer cannot tell
    state.committed = 9;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(state.asked).toBe(6);
    await sampler.stop();
  });

  it('samples the topics as soon as the groups have some, not an interval after a sample that found none', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { state, source } = fakeSource();
    let topics: string[] = [];
    const sampler = startLagSampler({
      source,
      metrics: createMetrics({ defaultMetrics: false }),
      groups: () => [{ groupId: 'g', topics }],
      intervalMs: 10_000,
      quietIntervalMs: 60_000,
      recordsMovedAt: () => 0,
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(state.asked).toBe(0); // no topics yet: nothing asked
    await vi.advanceTimersByTimeAsync(3_000);
    expect(state.asked).toBe(0);
    topics = ['t', 'u']; // the lanes started
    await vi.advanceTimersByTimeAsync(1_000);
    expect(state.asked).toBe(2); // sampled within a second, not at 10 s
    await vi.advanceTimersByTimeAsync(50_000);
    expect(state.asked).toBe(2); // then quiet as before: caught up, no record moved
    await sampler.stop();
  });

  it('samples every interval without recordsMovedAt', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const { state, source } = fakeSource();
    const sampler = startLagSampler({ source, metrics: createMetrics({ defaultMetrics: false }), groups: () => [{ groupId: 'g', topics: ['t'] }], intervalMs: 10_000 });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(state.asked).toBe(4);
    await sampler.stop();
  });
});
