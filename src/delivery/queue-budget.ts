// The deliverer's bound on records fetched and not yet started, over all its lanes
// (docs/architecture.md#measured-figures-behind-the-code). A lane bounds its own queue and
// pauses its partitions when full (destination-lane.ts), but a fetch brings each
// partition up to 1 MB before any lane can pause: with 1,000 destinations of 100 events
// each, a whole wave of 100,000 records waited in the lanes at once, and the young
// generation's scavenges copied them again and again (about 60 % of the CPU D = 1,000
// cost the deliverer beyond D = 1 in the destinations bench).
//
// Each lane counts its queued records up to its share (two rounds of its permits: what
// keeps them busy); the stream hands over no further fetch while the shares add up to
// more than the budget. NOTE: a lane counts no more than its share, so destinations that
// drain slowly (a hanging URL, a rate limit) cannot take the budget from the others: it
// takes budget / share of them at once (128 hanging destinations at the default
// concurrency of 64). Even then the wait is bounded: after MAX_WAIT_MS without room the
// hand-over goes on, and does not wait again for WAIVE_MS.

/** Records queued over all lanes (counted up to each lane's share) before the hand-over waits. */
export const QUEUE_BUDGET = 16_384;
/** The longest one hand-over waits for room. */
const MAX_WAIT_MS = 100;
/** After a wait that ran out, how long the hand-over waits no more. */
const WAIVE_MS = 1_000;

/** A lane's share of the budget: two rounds of its permits (events, or batches of `batchEvents`), at most its own queue bound. */
export function laneShare(concurrency: number, batchEvents: number | undefined, queueBound: number): number {
  return Math.min(queueBound, 2 * concurrency * (batchEvents ?? 1));
}

export class QueueBudget {
  private used = 0;
  private waiter: { wake: () => void; timer: NodeJS.Timeout } | undefined;
  private waivedUntil = 0;

  constructor(
    readonly limit: number = QUEUE_BUDGET,
    private readonly now: () => number = Date.now,
  ) {}

  /** The records counted now (each lane's queued records, up to its share). */
  get counted(): number {
    return this.used;
  }

  /** A lane's counted records changed by `delta`. */
  add(delta: number): void {
    this.used += delta;
    if (delta < 0 && this.waiter !== undefined && this.used <= (this.limit * 3) / 4) this.wake();
  }

  /**
   * Undefined while there is room; else a promise that resolves once the lanes have
   * drained to three quarters of the budget, or after MAX_WAIT_MS (then none for WAIVE_MS).
   */
  room(): Promise<void> | undefined {
    if (this.used <= this.limit || this.now() < this.waivedUntil) return undefined;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waivedUntil = this.now() + WAIVE_MS;
        this.wake();
      }, MAX_WAIT_MS);
      this.waiter = { wake: resolve, timer };
    });
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter === undefined) return;
    this.waiter = undefined;
    clearTimeout(waiter.timer);
    waiter.wake();
  }
}
