import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { QueueBudget, laneShare } from '../../../src/delivery/queue-budget.js';

/** Whether `promise` has settled once pending callbacks ran (fake timers: advancing by 0 runs them). */
async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe('laneShare', () => {
  it('is two rounds of the permits, in events, at most the lane queue bound', () => {
    expect(laneShare(64, undefined, 512)).toBe(128);
    expect(laneShare(1, 20, 512)).toBe(40);
    expect(laneShare(64, 100, 512)).toBe(512);
  });
});

describe('QueueBudget', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('has room up to its limit; over it, waits until the lanes drain to three quarters', async () => {
    const budget = new QueueBudget(100);
    budget.add(100);
    expect(budget.room()).toBeUndefined();
    budget.add(1);
    const room = budget.room()!;
    expect(room).toBeInstanceOf(Promise);
    budget.add(-20);
    expect(await settled(room)).toBe(false); // 81: under the limit, not yet three quarters of it
    budget.add(-6);
    expect(await settled(room)).toBe(true);
    expect(budget.counted).toBe(75);
    expect(budget.room()).toBeUndefined();
  });

  it('waits 100 ms at most, then not again for a second: lanes that do not drain cannot stop the hand-over', async () => {
    const budget = new QueueBudget(10);
    budget.add(50);
    const first = budget.room()!;
    await vi.advanceTimersByTimeAsync(99);
    expect(await settled(first)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(first)).toBe(true);
    expect(budget.room()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(999);
    expect(budget.room()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(budget.room()).toBeInstanceOf(Promise);
  });
});
