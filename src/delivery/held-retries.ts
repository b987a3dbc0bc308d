// An ordered destination's failed events waiting in the lane for their next attempt
// (`ordering: user`, docs/webhooks.md#per-user-order): unfinished, each holding back its
// user's later events, each due at its own time. Pure, the clock passed in: the lane
// (destination-lane.ts) keeps one timer, for the earliest, and takes what is due.

export class HeldRetries<E> {
  /** Oldest due time first; equal ones in the order they were held. */
  private held: { entry: E; dueAtMs: number }[] = [];

  get size(): number {
    return this.held.length;
  }

  /** `entry` waits until `dueAtMs`. */
  hold(entry: E, dueAtMs: number): void {
    let at = this.held.length;
    while (at > 0 && this.held[at - 1]!.dueAtMs > dueAtMs) at -= 1;
    this.held.splice(at, 0, { entry, dueAtMs });
  }

  /** When the next one is due; undefined when none waits. */
  nextDueAtMs(): number | undefined {
    return this.held[0]?.dueAtMs;
  }

  /** The events due at `nowMs`, oldest due first: they wait no more. */
  takeDue(nowMs: number): E[] {
    let count = 0;
    while (count < this.held.length && this.held[count]!.dueAtMs <= nowMs) count += 1;
    return this.held.splice(0, count).map(({ entry }) => entry);
  }

  /** Forgets the events `gone` says went (a revoked partition's: the next owner reads them again). */
  drop(gone: (entry: E) => boolean): void {
    this.held = this.held.filter(({ entry }) => !gone(entry));
  }

  /** Forgets every event (the lane stops). */
  clear(): void {
    this.held = [];
  }
}
