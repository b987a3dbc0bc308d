// One timer that calls back at the earliest time asked for; asking again for a later
// time keeps the earlier one. A destination lane (destination-lane.ts) keeps one for its
// held retries, one for its open batch and one for its paced request.

export class Alarm {
  private timer: NodeJS.Timeout | undefined;
  private atMs = Infinity;

  constructor(private readonly ring: () => void) {}

  /** Calls back at `atMs` (or at the earlier time asked for already); undefined asks for nothing. */
  at(atMs: number | undefined, nowMs: number): void {
    if (atMs === undefined || atMs >= this.atMs) return;
    clearTimeout(this.timer);
    this.atMs = atMs;
    this.timer = setTimeout(this.rang, Math.max(0, atMs - nowMs));
  }

  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.atMs = Infinity;
  }

  private readonly rang = (): void => {
    this.timer = undefined;
    this.atMs = Infinity;
    this.ring();
  };
}
