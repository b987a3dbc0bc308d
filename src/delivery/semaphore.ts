/**
 * Bounds the requests in flight for one destination (`delivery.concurrencyPerDestination`).
 * Weighted (a message to three URLs takes three permits) and first come, first served,
 * so no partition of the destination starves another.
 */
export class Semaphore {
  private available: number;
  private readonly waiting: { weight: number; grant: () => void }[] = [];

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`Semaphore: capacity must be a positive integer, got ${capacity}`);
    this.available = capacity;
  }

  /** Resolves once `weight` permits (capped at the capacity) are held. */
  acquire(weight: number): Promise<void> {
    if (this.tryAcquire(weight)) return Promise.resolve();
    const w = this.clamp(weight);
    return new Promise((grant) => this.waiting.push({ weight: w, grant }));
  }

  /**
   * Takes `weight` permits now if they are free and nobody waits before (first come,
   * first served); false otherwise, and nothing is taken. Lets a hot loop skip the
   * turn of the event loop that awaiting `acquire` costs even when permits are free.
   */
  tryAcquire(weight: number): boolean {
    const w = this.clamp(weight);
    if (this.waiting.length > 0 || this.available < w) return false;
    this.available -= w;
    return true;
  }

  release(weight: number): void {
    this.available += this.clamp(weight);
    if (this.available > this.capacity) throw new RangeError('Semaphore: released more permits than were acquired');
    for (let next = this.waiting[0]; next !== undefined && next.weight <= this.available; next = this.waiting[0]) {
      this.waiting.shift();
      this.available -= next.weight;
      next.grant();
    }
  }

  get inUse(): number {
    return this.capacity - this.available;
  }

  private clamp(weight: number): number {
    return Math.min(Math.max(1, weight), this.capacity);
  }
}
