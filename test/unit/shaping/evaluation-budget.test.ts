import { describe, expect, it } from 'vitest';
import { BudgetClock } from '../../../src/shaping/evaluation-budget.js';

/** A clock the test moves by hand. */
function manual(): { now: () => number; advance: (ms: number) => void } {
  let ms = 1_000;
  return { now: () => ms, advance: (by) => (ms += by) };
}

describe('BudgetClock', () => {
  it('charges the time from one step to the next to the evaluation that made the earlier one', () => {
    const t = manual();
    const clock = new BudgetClock(t.now);
    const a = { spentMs: 0 };
    const b = { spentMs: 0 };
    clock.step(a, 30);
    t.advance(4);
    clock.step(b, 30); // a ran 4 ms
    t.advance(1);
    clock.step(a, 30); // b ran 1 ms
    t.advance(7);
    expect(clock.end(a, 30)).toBe(true); // a's tail: 7 ms
    expect(a.spentMs).toBe(11);
    expect(b.spentMs).toBe(1);
    // b ends later; a's end already took the time in between: nothing more for b.
    t.advance(50);
    expect(clock.end(b, 30)).toBe(true);
    expect(b.spentMs).toBe(1);
  });

  it('says an evaluation is over its budget at its next step, or at its end', () => {
    const t = manual();
    const clock = new BudgetClock(t.now);
    const a = { spentMs: 0 };
    expect(clock.step(a, 30)).toBe(true);
    t.advance(31);
    expect(clock.step(a, 30)).toBe(false);
    const b = { spentMs: 0 };
    clock.step(b, 30);
    t.advance(40); // one long built-in, the last step
    expect(clock.end(b, 30)).toBe(false);
  });

  it('asks for a pause once evaluations held the thread for holdMs, and charges the pause to no one', () => {
    const t = manual();
    const clock = new BudgetClock(t.now, 10);
    const a = { spentMs: 0 };
    // The first step after an idle thread pauses at once.
    clock.step(a, 30);
    expect(clock.yieldDue()).toBe(true);
    t.advance(100); // the event loop's turn
    clock.step(a, 30);
    expect(a.spentMs).toBe(0);
    for (let i = 0; i < 9; i++) {
      t.advance(1);
      clock.step(a, 30);
      expect(clock.yieldDue()).toBe(false);
    }
    t.advance(1);
    clock.step(a, 30);
    expect(clock.yieldDue()).toBe(true);
    expect(a.spentMs).toBe(10);
    t.advance(500);
    clock.step(a, 30);
    expect(a.spentMs).toBe(10);
    expect(clock.yieldDue()).toBe(false);
  });
});
