import { describe, expect, it } from 'vitest';
import { CounterBatch } from '../../../src/delivery/counter-batch.js';

/** A counter child that records each inc() it gets. */
function recorder() {
  const calls: number[] = [];
  return { calls, inc: (value = 1) => void calls.push(value) };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('CounterBatch', () => {
  it('adds a turn’s counts in one inc per counter when the turn ends', async () => {
    const batch = new CounterBatch();
    const a = recorder();
    const b = recorder();
    batch.add(a);
    batch.add(b);
    batch.add(a);
    batch.add(a, 2);
    expect(a.calls).toEqual([]);
    await nextTurn();
    expect(a.calls).toEqual([4]);
    expect(b.calls).toEqual([1]);
    // A later turn starts again from nothing.
    batch.add(b);
    await nextTurn();
    expect(a.calls).toEqual([4]);
    expect(b.calls).toEqual([1, 1]);
  });

  it('flush adds what is pending at once, and the scheduled flush then adds nothing twice', async () => {
    const batch = new CounterBatch();
    const a = recorder();
    batch.add(a);
    batch.flush();
    expect(a.calls).toEqual([1]);
    await nextTurn();
    expect(a.calls).toEqual([1]);
    batch.flush();
    expect(a.calls).toEqual([1]);
  });
});
