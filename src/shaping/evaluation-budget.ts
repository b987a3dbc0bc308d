// The time budget of one JSONata evaluation (docs/webhooks.md#time-and-size-bounds): the
// time the evaluation itself runs, not the time since it started. NOTE: the router
// evaluates the calls of a batch at once, and their steps interleave on one thread (all
// of it microtasks: no I/O runs in between), so a clock started with an evaluation would
// charge it every other call's work. Here the time from one step to the next step of any
// evaluation is charged to the evaluation that made the earlier one: what ran in between
// was its own work (a built-in function, its next step's setup) or the router's few
// lines between two of them. It also says when evaluations have held the thread long
// enough that the next step should wait a turn of the event loop (`yieldDue`): all of a
// batch's evaluations are microtasks, and without a pause no request (a probe, the
// gateway's calls in the same process) is served until the last of them ends.
// Pure: the clock comes in (test/unit/shaping/evaluation-budget.test.ts).

/** What one evaluation has spent so far. */
export interface Budget {
  spentMs: number;
}

export class BudgetClock {
  private running: Budget | undefined;
  private lastMs = Number.NEGATIVE_INFINITY;
  private paused = false;
  /** When evaluations last took the thread back (after a pause); long ago when the thread was idle, so the next step pauses first. */
  private heldSinceMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly nowMs: () => number,
    /** How long evaluations may hold the thread before yieldDue says to let it go. */
    private readonly holdMs = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * A step of `budget`'s evaluation: charges the time since the last step (of any
   * evaluation) to the evaluation that made it; true while `budget` is within `limitMs`.
   */
  step(budget: Budget, limitMs: number): boolean {
    const now = this.nowMs();
    if (this.running !== undefined) this.running.spentMs += now - this.lastMs;
    // NOTE: only a pause starts a new hold: a long gap between steps may be a slow
    // built-in's work or a busy host, and was the thread's time all the same.
    if (this.paused) {
      this.heldSinceMs = now;
      this.paused = false;
    }
    this.running = budget;
    this.lastMs = now;
    return budget.spentMs <= limitMs;
  }

  /**
   * True when evaluations have held the thread for `holdMs` since the last pause: the
   * caller then waits a turn of the event loop before its next step, and that wait is
   * charged to no evaluation.
   */
  yieldDue(): boolean {
    if (this.lastMs - this.heldSinceMs < this.holdMs) return false;
    this.running = undefined;
    this.paused = true;
    return true;
  }

  /** The end of `budget`'s evaluation (a value or an error): charges what ran since its last step; true while within. */
  end(budget: Budget, limitMs: number): boolean {
    if (this.running === budget) {
      budget.spentMs += this.nowMs() - this.lastMs;
      this.running = undefined;
    }
    return budget.spentMs <= limitMs;
  }
}
