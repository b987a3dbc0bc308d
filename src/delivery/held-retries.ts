// An ordered destination's failed events waiting in the lane for their next attempt
// (`ordering: user`, docs/webhooks.md#per-user-order): unfinished, each holding back its
// user's later events, each with its own timer to its own due time. The timers are
// passed in (the lane, destination-lane.ts, gives Node's; a test gives a fake clock).

/** Where the timers come from. */
export interface Timers<H> {
  set(callback: () => void, ms: number): H;
  clear(handle: H): void;
}

export const nodeTimers: Timers<NodeJS.Timeout> = {
  set: (callback, ms) => setTimeout(callback, ms),
  clear: (handle) => clearTimeout(handle),
};

export class HeldRetries<E, H = NodeJS.Timeout> {
  private readonly held = new Set<{ entry: E; handle: H }>();

  constructor(private readonly timers: Timers<H>) {}

  get size(): number {
    return this.held.size;
  }

  /** `entry` waits `ms` (at least 0); then it waits no more, and `due` is called with it. */
  hold(entry: E, ms: number, due: (entry: E) => void): void {
    const held = {
      entry,
      handle: this.timers.set(() => {
        this.held.delete(held);
        due(entry);
      }, Math.max(0, ms)),
    };
    this.held.add(held);
  }

  /** Forgets the events `gone` says went (a revoked partition's: the next owner reads them again); their timers are cleared. */
  drop(gone: (entry: E) => boolean): void {
    for (const held of this.held) {
      if (!gone(held.entry)) continue;
      this.timers.clear(held.handle);
      this.held.delete(held);
    }
  }

  /** Forgets every event (the lane stops). */
  clear(): void {
    for (const { handle } of this.held) this.timers.clear(handle);
    this.held.clear();
  }
}
