import { describe, expect, it } from 'vitest';
import { AttemptLog, MAX_SPANS, decideTransition, summarize } from '../../../src/lifecycle/auto-disable.js';
import type { AttemptReport } from '../../../src/lifecycle/auto-disable.js';
import { INITIAL_LIFECYCLE, applyTransition } from '../../../src/lifecycle/lifecycle-state.js';
import type { DestinationLifecycle } from '../../../src/lifecycle/lifecycle-state.js';

const T0 = 1_000_000;
const AFTER = 10_000;
const report = (instance: string, failures: [number, number, number][], lastSuccessAt?: number): AttemptReport => ({
  destination: 'd',
  instance,
  at: T0,
  ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
  failures: failures.map(([from, to, count]) => ({ from, to, count })),
});
const decide = (lifecycle: DestinationLifecycle, reports: AttemptReport[], nowMs: number, minAttempts = 1) =>
  decideTransition({ destination: 'd', autoDisable: { afterMs: AFTER, minAttempts }, lifecycle, reports, nowMs });

describe('AttemptLog', () => {
  it('reports failures since the last success, and only when something changed', () => {
    const log = new AttemptLog();
    log.tick(T0, 0, 3);
    log.tick(T0 + 100, 0, 2);
    expect(log.takeReport('d', 'pod-a', T0 + 100)).toEqual({ destination: 'd', instance: 'pod-a', at: T0 + 100, failures: [{ from: T0, to: T0, count: 3 }, { from: T0, to: T0 + 100, count: 2 }] });
    expect(log.takeReport('d', 'pod-a', T0 + 200)).toBeUndefined();
    log.tick(T0 + 300, 1, 5);
    expect(log.takeReport('d', 'pod-a', T0 + 300)).toEqual({ destination: 'd', instance: 'pod-a', at: T0 + 300, lastSuccessAt: T0 + 300, failures: [] });
  });

  it('keeps a bounded number of spans, merging the oldest, and loses no count', () => {
    const log = new AttemptLog();
    for (let i = 0; i < 100; i++) log.tick(T0 + i, 0, 1);
    const taken = log.takeReport('d', 'p', T0 + 100)!;
    expect(taken.failures).toHaveLength(MAX_SPANS);
    expect(taken.failures.reduce((n, s) => n + s.count, 0)).toBe(100);
    expect(taken.failures[0]!.from).toBe(T0);
  });
});

describe('summarize', () => {
  it("takes the latest success of any pod, and counts every pod's failures after it", () => {
    const reports = [report('a', [[T0, T0 + 100, 4], [T0 + 100, T0 + 900, 6]], T0 - 50), report('b', [[T0 + 500, T0 + 800, 3]], T0 + 200)];
    expect(summarize(reports, 0)).toEqual({ lastSuccessAt: T0 + 200, firstFailureAt: T0 + 200, attempts: 9 });
  });
  it('counts nothing before the baseline (an enable, a recovery)', () => {
    expect(summarize([report('a', [[T0, T0 + 100, 4]])], T0 + 100)).toEqual({ lastSuccessAt: undefined, firstFailureAt: undefined, attempts: 0 });
  });
});

describe('decideTransition', () => {
  const failingFrom = (since: number, share = 0.5) => applyTransition(INITIAL_LIFECYCLE, { kind: 'failing', destination: 'd', at: since + share * AFTER, noSuccessSince: since, share, attempts: 1 })!.next;

  it('says nothing before half of `after` without a success', () => {
    expect(decide(INITIAL_LIFECYCLE, [report('a', [[T0, T0 + 4_000, 9]])], T0 + 4_999)).toBeUndefined();
  });
  it('says failing at half of `after`, then at 90 %', () => {
    expect(decide(INITIAL_LIFECYCLE, [report('a', [[T0, T0 + 4_000, 9]])], T0 + 5_000)).toMatchObject({ kind: 'failing', share: 0.5, noSuccessSince: T0, attempts: 9 });
    expect(decide(failingFrom(T0), [report('a', [[T0, T0 + 8_000, 9]])], T0 + 9_000)).toMatchObject({ kind: 'failing', share: 0.9, noSuccessSince: T0 });
    expect(decide(failingFrom(T0, 0.9), [report('a', [[T0, T0 + 8_000, 9]])], T0 + 9_500)).toBeUndefined();
  });
  it('disables at `after` with at least minAttempts attempts of all pods together', () => {
    const reports = [report('a', [[T0, T0 + 9_000, 3]]), report('b', [[T0 + 100, T0 + 9_000, 2]])];
    expect(decide(failingFrom(T0, 0.9), reports, T0 + 10_000, 6)).toBeUndefined();
    expect(decide(failingFrom(T0, 0.9), reports, T0 + 10_000, 5)).toMatchObject({ kind: 'disable', automatic: true, by: 'switchyard' });
  });
  it('recovers when any pod succeeded after the failing began', () => {
    expect(decide(failingFrom(T0), [report('a', [[T0, T0 + 9_000, 3]]), report('b', [], T0 + 7_000)], T0 + 10_000)).toEqual({ kind: 'recovered', destination: 'd', at: T0 + 10_000, succeededAt: T0 + 7_000 });
  });
  it('decides nothing for a disabled destination', () => {
    const disabled = applyTransition(INITIAL_LIFECYCLE, { kind: 'disable', destination: 'd', at: T0, by: 'ops', reason: 'x', automatic: false })!.next;
    expect(decide(disabled, [report('a', [[T0, T0 + 20_000, 99]])], T0 + 30_000)).toBeUndefined();
  });
});
