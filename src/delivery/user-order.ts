// Per-user order of one destination (`ordering: user`, docs/webhooks.md#per-user-order):
// which of a user's events may start now, and which wait behind an earlier one. Pure
// bookkeeping; the lane (destination-lane.ts) asks it before it starts an event and
// tells it when one is done.
//
// A user's events (the records of one key, so of one partition) go one at a time: the
// user's event under way holds the others, which wait here, parked, oldest first. An
// event under way is one in flight, or one that failed and waits in the lane for its
// next attempt (held-retries.ts: an ordered destination's retries wait in the lane,
// not in a retry tier). It is done when delivered or dead-lettered; then the next
// parked event of its user starts. A user whose events wait holds back no one else.
//
// NOTE: parked and waiting events are not finished, so the partition's commit stays
// below them (the finished offsets above go in the commit's metadata): a member that
// takes the partition over after a crash or a rebalance reads them again, in order.

/** An event as the order sees it: its user (the record key). */
export interface OrderedEvent {
  readonly user: string;
}

export class UserOrder<T extends OrderedEvent> {
  /** Per user with an event under way: that event, and the events that wait behind it, oldest first. */
  private readonly users = new Map<string, { current: T; waiting: T[] }>();
  private parkedCount = 0;

  /** Whether an event of `user` may start now: none of the user's is under way (nor, then, parked). */
  mayStart(user: string): boolean {
    return !this.users.has(user);
  }

  /** `event` starts: its user's later events wait until it is done. */
  started(event: T): void {
    const state = this.users.get(event.user);
    if (state === undefined) this.users.set(event.user, { current: event, waiting: [] });
    else state.current = event;
  }

  /** `event` may not start yet: it waits behind its user's earlier events. */
  park(event: T): void {
    const waiting = this.users.get(event.user)?.waiting;
    if (waiting === undefined) throw new Error(`UserOrder.park: nothing of user ${JSON.stringify(event.user)} is under way; start the event instead`);
    waiting.push(event);
    this.parkedCount += 1;
  }

  /**
   * The user's event under way is done (delivered or dead-lettered). Returns the user's
   * next event, already counted as under way (the lane starts it next), if one waits.
   */
  done(user: string): T | undefined {
    const state = this.users.get(user);
    if (state === undefined) return undefined; // forgotten meanwhile (the partition went)
    const next = state.waiting.shift();
    if (next === undefined) {
      this.users.delete(user);
      return undefined;
    }
    this.parkedCount -= 1;
    state.current = next;
    return next;
  }

  /** Events parked in all. */
  get parked(): number {
    return this.parkedCount;
  }

  /** Whether the user has an event under way. */
  holds(user: string): boolean {
    return this.users.has(user);
  }

  /**
   * Forgets what `gone` says went (a revoked partition's events): a user whose event
   * under way went no longer holds anything, and parked events that went are dropped.
   * Returns the parked events dropped, which did not start and are not finished (the
   * next owner of the partition reads them again).
   */
  forget(gone: (event: T) => boolean): T[] {
    const dropped: T[] = [];
    for (const [user, state] of this.users) {
      if (gone(state.current)) {
        dropped.push(...state.waiting);
        this.parkedCount -= state.waiting.length;
        this.users.delete(user);
        continue;
      }
      const kept = state.waiting.filter((event) => !gone(event));
      if (kept.length === state.waiting.length) continue;
      dropped.push(...state.waiting.filter((event) => gone(event)));
      this.parkedCount -= state.waiting.length - kept.length;
      state.waiting = kept;
    }
    return dropped;
  }
}
