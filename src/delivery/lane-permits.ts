// A lane's permits (`delivery.concurrencyPerDestination`) and what a request takes of
// them: one per URL it goes to (a URL whose circuit is open gets no request, so it takes
// none), at least one, at most all. A request whose rate-limit tokens are not there yet
// waits with its permits held: the lane's one paced request, which holds the lane (its
// tokens are reserved). Pure, the clock passed in; the lane (destination-lane.ts) keeps
// the timer that sends the paced request.
import { Semaphore } from './semaphore.js';
import { countBits } from './url-circuits.js';
import type { Admitted } from './url-circuits.js';

/** What a request holds: its URLs' admission, its requests (one per URL sent to) and its permits. */
export interface Grant {
  admitted: Admitted;
  requests: number;
  weight: number;
}

export class LanePermits<R> {
  private readonly slots: Semaphore;
  private waiting: { request: R; grant: Grant; untilMs: number } | undefined;

  constructor(capacity: number) {
    this.slots = new Semaphore(capacity);
  }

  /** Whether every permit is taken: nothing may start until a request ends. */
  get allTaken(): boolean {
    return this.slots.inUse === this.slots.capacity;
  }

  get inUse(): number {
    return this.slots.inUse;
  }

  /** The permits for a request to the URLs `admitted` sends to, if they are free; undefined (nothing taken) if not. */
  take(admitted: Admitted): Grant | undefined {
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    return this.slots.tryAcquire(weight) ? { admitted, requests, weight } : undefined;
  }

  /** The request ended (or never went): its permits are free. */
  release(grant: Grant): void {
    this.slots.release(grant.weight);
  }

  /** `request` waits for its rate-limit tokens until `untilMs`, its permits held; the lane starts nothing else meanwhile. */
  pace(request: R, grant: Grant, untilMs: number): void {
    if (this.waiting !== undefined) throw new Error('LanePermits.pace: a request is paced already; send or cancel it first');
    this.waiting = { request, grant, untilMs };
  }

  /** The request waiting for its tokens, if any. */
  get paced(): R | undefined {
    return this.waiting?.request;
  }

  /** When the paced request's tokens are there; undefined when none waits. */
  get pacedUntilMs(): number | undefined {
    return this.waiting?.untilMs;
  }

  /** The paced request leaves the wait (to be sent, or given up: then its grant is to be released). */
  unpace(): { request: R; grant: Grant } | undefined {
    const waiting = this.waiting;
    this.waiting = undefined;
    return waiting;
  }
}
