// A lane's share of the deliverer's commits (src/delivery/commit-account.ts), against a
// ledger whose rounds the test answers.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CommitAccount } from '../../../src/delivery/commit-account.js';
import type { CommitTickets } from '../../../src/delivery/commit-account.js';

/** A ledger whose commit rounds take every ticket given so far, when the test says so. */
function ledgerFixture() {
  const state = { ticket: 0, committed: 0, stalled: false, rounds: 0, waiters: [] as (() => void)[] };
  const ledger: CommitTickets = {
    finish: () => (state.ticket += 1),
    committedThrough: () => state.committed,
    commitsStalled: () => state.stalled,
    commitSoon: () => (state.rounds += 1),
    whenCommitted: (callback) => state.waiters.push(callback),
  };
  const answer = (through = state.ticket) => {
    state.committed = through;
    const waiters = state.waiters;
    state.waiters = [];
    for (const w of waiters) w();
  };
  return { ledger, state, answer };
}

const T = 'deliveries.a';

describe('CommitAccount', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('may start below its bound of its own completions waiting; asks for a round at once at half; its whenOpen calls back at the answer', () => {
    const { ledger, state, answer } = ledgerFixture();
    const account = new CommitAccount(ledger, 4);
    const other = new CommitAccount(ledger, 4);
    other.finish(T, 0, '10'); // another lane's completion counts for that lane only
    expect(account.mayStart()).toBe(true);
    account.finish(T, 0, '0');
    expect(state.rounds).toBe(0);
    account.finish(T, 0, '1');
    expect(state.rounds).toBe(1); // 2 of 4: a round at once
    account.finish(T, 0, '2');
    expect(account.mayStart()).toBe(true);
    account.finish(T, 0, '3');
    expect(account.mayStart()).toBe(false);
    let opened = 0;
    account.whenOpen(() => (opened += 1));
    account.whenOpen(() => (opened += 1)); // asked again while waiting: waits once
    answer(3); // the round took 10, 0 and 1
    expect(opened).toBe(1);
    expect(account.mayStart()).toBe(true); // 2 and 3 wait: below 4
    account.close();
  });

  it('may not start while commits are stalled, whatever its own count', () => {
    const { ledger, state } = ledgerFixture();
    const account = new CommitAccount(ledger, 512);
    account.finish(T, 0, '0');
    expect(account.mayStart()).toBe(true);
    state.stalled = true;
    expect(account.mayStart()).toBe(false);
  });

  it('whenOpen looks again after a second should no answer come; close() ends that', async () => {
    const { ledger } = ledgerFixture();
    const account = new CommitAccount(ledger, 1);
    let opened = 0;
    account.whenOpen(() => (opened += 1));
    await vi.advanceTimersByTimeAsync(999);
    expect(opened).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(opened).toBe(1);
    account.whenOpen(() => (opened += 1));
    account.close();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(opened).toBe(1);
  });
});
