// Work that many destination lanes ask for during one turn of the event loop, run once
// at its end: one setImmediate for all of them.
//
// NOTE: a lane pumps again after each delivery ends (a permit freed). With one
// setImmediate per lane, 1,000 destinations at one request each paid one per event
// (D = 1 pays one per turn for all its events); sharing it is what keeps a destination
// nearly free.

export class EndOfTurn {
  private readonly pending = new Set<() => void>();
  private scheduled = false;

  /** Runs `task` once when this turn ends, however often it is asked for before. */
  run(task: () => void): void {
    this.pending.add(task);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.drain);
  }

  private readonly drain = (): void => {
    this.scheduled = false;
    const tasks = [...this.pending];
    this.pending.clear();
    for (let i = 0; i < tasks.length; i++) {
      try {
        tasks[i]!();
      } catch (error) {
        // The others still run (a turn later); the error goes on as it would have alone.
        for (const rest of tasks.slice(i + 1)) this.run(rest);
        throw error;
      }
    }
  };
}
