// How much a destination lane (destination-lane.ts) may hold: records queued before its
// partitions pause, and finished deliveries not yet committed before it starts no more.

/** How many records a lane may queue: several rounds of its permits, at least a few fetches' worth. */
export function laneQueueBound(concurrency: number): number {
  return Math.max(8 * concurrency, 512);
}

/**
 * How many of its deliveries a lane may have finished and not yet committed before it
 * starts no more: four times its permits, at least 512. A commit is asked for early at half.
 * NOTE: a SIGKILL redoes what finished since the last commit, on top of what was in
 * flight. A lane working off a backlog finishes thousands a second: seen in the chaos
 * harness, one such lane redid thousands of deliveries after a broker stop and a
 * SIGKILL, all finished in the second before commits were found stalled
 * (COMMIT_STALL_MS). The bound must still let a busy lane run through a commit's round
 * trip: at twice its permits a lane at full speed waited for commits most of the time
 * (deliver bench at 0 ms; figures: docs/architecture.md#measured-figures-behind-the-code).
 */
export function laneUncommittedBound(concurrency: number): number {
  return Math.max(512, 4 * concurrency);
}

/**
 * Whether a lane with `queued` records should pause (at or over the bound) or resume
 * (at or below three quarters of it) its partitions; in between it keeps them as they are.
 *
 * NOTE: a resumed partition is fetched only once the fetch under way returns (the
 * deliverer's fetch waits only 50 ms while a lane is full, roomFetchWaitMs): the three
 * quarters it keeps queued are what it works on meanwhile.
 */
export function fullness(queued: number, bound: number): 'pause' | 'resume' | 'keep' {
  if (queued >= bound) return 'pause';
  if (queued <= Math.floor((bound * 3) / 4)) return 'resume';
  return 'keep';
}
