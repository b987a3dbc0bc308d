// Whether a lane's next request may go, and on what terms: its URLs' circuits
// (url-circuits.ts), its permits (`delivery.concurrencyPerDestination`) and its rate
// limit (rate-pace.ts). A request takes one permit per URL it goes to (a URL whose
// circuit is open gets no request, so it takes no permit and no token), at least one, at
// most all. A request whose rate-limit tokens are not there yet waits with its permits
// held: the lane's one paced request, which holds the lane (its tokens are reserved).
// The clock passed in; the lane (destination-lane.ts) keeps the timer that sends it.
import type { PreparedDestination } from './destination-settings.js';
import type { RatePace } from './rate-pace.js';
import { Semaphore } from './semaphore.js';
import { countBits } from './url-circuits.js';
import type { Admitted, UrlCircuits } from './url-circuits.js';

/** What a request holds: its URLs' admission, its requests (one per URL sent to) and its permits. */
export interface Grant {
  admitted: Admitted;
  requests: number;
  weight: number;
}

/** A request's answer: it may go (after `paceMs`, its tokens reserved); every URL's circuit is open until `circuitsOpenUntilMs`; or no permit is free. */
export type Admission = { grant: Grant; paceMs: number } | { circuitsOpenUntilMs: number } | 'no-permit';

export class LanePermits<R> {
  private readonly slots: Semaphore;
  private waiting: { request: R; grant: Grant } | undefined;

  constructor(
    capacity: number,
    private readonly circuits: Pick<UrlCircuits, 'admit' | 'abandon' | 'allOpenUntil'>,
    private readonly pace: Pick<RatePace, 'reserve'>,
  ) {
    this.slots = new Semaphore(capacity);
  }

  /** Whether every permit is taken: nothing may start until a request ends. */
  get allTaken(): boolean {
    return this.slots.inUse === this.slots.capacity;
  }

  get inUse(): number {
    return this.slots.inUse;
  }

  /**
   * Whether a request may go at `nowMs`. NOTE: with every URL's circuit open, a request
   * whose events' retry windows all ended (`windowsEnded`) goes on: no request is made,
   * each event's dead letter (with the circuit's last failure) instead of waiting for a probe.
   */
  admit(settings: PreparedDestination, windowsEnded: () => boolean, nowMs: number): Admission {
    const openUntil = this.circuits.allOpenUntil(settings, nowMs);
    if (openUntil !== undefined && !windowsEnded()) return { circuitsOpenUntilMs: openUntil };
    const admitted = this.circuits.admit(settings, nowMs);
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    if (!this.slots.tryAcquire(weight)) {
      this.circuits.abandon(admitted, nowMs);
      return 'no-permit';
    }
    return { grant: { admitted, requests, weight }, paceMs: this.pace.reserve(settings, requests, nowMs) };
  }

  /** The request ended: its permits are free. */
  release(grant: Grant): void {
    this.slots.release(grant.weight);
  }

  /** The request never went: its URLs' admission (a probe's turn) and its permits are given back. */
  giveBack(grant: Grant, nowMs: number): void {
    this.circuits.abandon(grant.admitted, nowMs);
    this.slots.release(grant.weight);
  }

  /** `request` waits for its rate-limit tokens, its permits held; the lane starts nothing else meanwhile (the lane keeps the timer). */
  wait(request: R, grant: Grant): void {
    if (this.waiting !== undefined) throw new Error('LanePermits.wait: a request is paced already; send or give it back first');
    this.waiting = { request, grant };
  }

  /** The request waiting for its tokens, if any. */
  get paced(): R | undefined {
    return this.waiting?.request;
  }

  /** The paced request leaves the wait (to be sent, or given back). */
  unpace(): { request: R; grant: Grant } | undefined {
    const waiting = this.waiting;
    this.waiting = undefined;
    return waiting;
  }
}
