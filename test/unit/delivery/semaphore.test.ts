import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../../src/delivery/semaphore.js';

const settled = async (promise: Promise<void>): Promise<boolean> => {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('Semaphore', () => {
  it('grants up to its capacity, then queues first come, first served', async () => {
    const s = new Semaphore(3);
    await s.acquire(2);
    expect(s.inUse).toBe(2);
    const big = s.acquire(2);
    const small = s.acquire(1);
    // The small one fits, but waits behind the big one so that it cannot starve.
    expect(await settled(big)).toBe(false);
    expect(await settled(small)).toBe(false);
    s.release(2);
    expect(await settled(big)).toBe(true);
    expect(await settled(small)).toBe(true);
    expect(s.inUse).toBe(3);
  });

  it('tryAcquire takes free permits at once, and never ahead of a waiter', async () => {
    const s = new Semaphore(3);
    expect(s.tryAcquire(2)).toBe(true);
    expect(s.tryAcquire(2)).toBe(false);
    expect(s.inUse).toBe(2);
    const waiting = s.acquire(2);
    // One permit is free, but the waiter came first.
    expect(s.tryAcquire(1)).toBe(false);
    s.release(2);
    expect(await settled(waiting)).toBe(true);
    expect(s.tryAcquire(1)).toBe(true);
    expect(s.inUse).toBe(3);
  });

  it('caps a weight above the capacity at the capacity', async () => {
    const s = new Semaphore(2);
    await s.acquire(5);
    expect(s.inUse).toBe(2);
    s.release(5);
    expect(s.inUse).toBe(0);
  });

  it('refuses a bad capacity and over-release', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
    expect(() => new Semaphore(1.5)).toThrow(RangeError);
    expect(() => new Semaphore(1).release(1)).toThrow(/more permits/);
  });
});
