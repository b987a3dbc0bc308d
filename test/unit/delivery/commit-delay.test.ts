import { describe, expect, it } from 'vitest';
import { commitDelay, commitOverdueMs, commitsStalledAt } from '../../../src/delivery/commit-ledger.js';

describe('commit delay of a partition stream', () => {
  it.each([
    [0, 5],
    [1, 5],
    [50, 5],
    [200, 20],
    [1_000, 100],
    [3_000, 100],
  ])('after a commit of %i partitions the next waits %i ms', (partitions, expected) => {
    expect(commitDelay(partitions)).toBe(expected);
  });

  it('never waits less than the base; more partitions add up to 100 ms', () => {
    expect(commitDelay(0, 20)).toBe(20);
    expect(commitDelay(300, 20)).toBe(30);
    expect(commitDelay(5_000, 20)).toBe(100);
    expect(commitDelay(5_000, 500)).toBe(500);
  });
});

describe('commits stalled', () => {
  const at = 1_000_000;
  const stalled = (state: { commitOutSince?: number; overdueAfterMs?: number; failing?: boolean; waitingSince?: number }) =>
    commitsStalledAt(at, { commitOutSince: state.commitOutSince, overdueAfterMs: state.overdueAfterMs ?? 200, failing: state.failing ?? false, waitingSince: state.waitingSince });
  it.each([
    ['nothing waits, nothing out', {}, false],
    ['a commit out for 200 ms, overdue after 200', { commitOutSince: at - 200, waitingSince: at - 200 }, false],
    ['a commit out for 201 ms, overdue after 200', { commitOutSince: at - 201, waitingSince: at - 201 }, true],
    ['a commit out for 601 ms, overdue after 800', { commitOutSince: at - 601, overdueAfterMs: 800, waitingSince: at - 601 }, false],
    ['finished records waiting 1 s, no commit out (no member)', { waitingSince: at - 1_000 }, false],
    ['finished records waiting 1.001 s, no commit out', { waitingSince: at - 1_001 }, true],
    ['a commit just sent, records waiting 2 s', { commitOutSince: at - 10, waitingSince: at - 2_000 }, true],
    ['the last commit failed, records waiting 1 ms', { failing: true, waitingSince: at - 1 }, true],
    ['the last commit failed, the next just sent', { failing: true, commitOutSince: at - 1, waitingSince: at - 1 }, true],
  ])('%s', (_what, state, expected) => {
    expect(stalled(state)).toBe(expected);
  });
});

describe('commit overdue', () => {
  it.each([
    [0, 150],
    [10, 150],
    [50, 200],
    [170, 680],
    [400, 1_000],
  ])('with commits answered in %i ms, one unanswered for more than %i ms is overdue', (typical, expected) => {
    expect(commitOverdueMs(typical)).toBe(expected);
  });
});
