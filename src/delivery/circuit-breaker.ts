// Per-URL circuit breaker (docs/webhooks.md#delivery-and-retries): after N consecutive retryable failures a URL
// is skipped for a cool-down, then one probe request decides. Pure: the clock comes
// in as `nowMs`, so every transition is unit-tested without a timer
// (test/unit/delivery/circuit-breaker.test.ts).

export type CircuitState = 'closed' | 'open' | 'half-open';

/** The `switchyard_circuit_state` gauge value of each state (docs/metrics.md). */
export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, open: 1, 'half-open': 2 };

export interface CircuitPolicy {
  /** Consecutive retryable failures that open the circuit. */
  failureThreshold: number;
  /** The first cool-down; each failed probe doubles it. */
  coolDownMs: number;
  maxCoolDownMs: number;
  /**
   * How long the one tracked request (probe or watch, below) may stay unsettled before
   * another may be sent: a backstop for a result that never came back. Longer than
   * `delivery.timeout`, which ends every request.
   */
  trackedLeaseMs: number;
}

export const DEFAULT_CIRCUIT_POLICY: Omit<CircuitPolicy, 'trackedLeaseMs'> = {
  failureThreshold: 5,
  coolDownMs: 30_000,
  maxCoolDownMs: 600_000,
};

/**
 * What to do with the next request to the URL:
 * - `send`: send it; another URL's 2xx may cancel it.
 * - `watch`: send it and let it finish (never cancelled): the breaker's sample of a URL
 *   that always loses the race to another one (below).
 * - `probe`: the one request after a cool-down that decides; never cancelled either.
 * - `skip`: the circuit is open: no request (outcome `circuit_open`).
 */
export type Admission = 'send' | 'watch' | 'probe' | 'skip';

/** How a request ended: `unknown` when it was cancelled or never sent. */
export type Verdict = 'success' | 'failure' | 'unknown';

export interface CircuitTransition {
  from: CircuitState;
  to: CircuitState;
  /** Consecutive retryable failures so far (when opening: the ones that opened it). */
  failures: number;
  /** The cool-down that starts now (when opening). */
  coolDownMs: number;
}

/**
 * One URL's circuit.
 *
 * NOTE: when several URLs share an event, the first 2xx cancels the requests still
 * running (fan-out.ts), so a URL that hangs would only ever produce `cancelled` results,
 * which say nothing, and its circuit would never open. So one request per URL at a time
 * is `watch`ed: it runs to its answer or its timeout and its result counts. Every other
 * request that finishes counts too; cancelled ones do not.
 *
 * A success (url-circuits.ts: any result that is not a retryable failure, e.g. a 2xx, or
 * a 4xx that says the request, not the receiver, is wrong) closes the circuit from any
 * state and resets the count. A failure of a request sent before the circuit opened is
 * ignored once it is open: the failures before it opened the circuit already.
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private consecutiveFailures = 0;
  private coolDownMs: number;
  private openUntilMs = 0;
  /** When the one tracked (watched or probe) request started; undefined when none runs. */
  private trackedSinceMs: number | undefined;
  /** For people: why the circuit opened (the last failure's reason). */
  lastFailure = '';

  constructor(
    private readonly policy: CircuitPolicy,
    private readonly onTransition: (transition: CircuitTransition) => void = () => undefined,
  ) {
    if (!Number.isInteger(policy.failureThreshold) || policy.failureThreshold < 1) {
      throw new RangeError(`CircuitBreaker: failureThreshold must be a positive integer, got ${policy.failureThreshold}`);
    }
    this.coolDownMs = policy.coolDownMs;
  }

  get state(): CircuitState {
    return this.current;
  }

  /** Retryable failures in a row, the failed probes included; 0 after a success. */
  get failures(): number {
    return this.consecutiveFailures;
  }

  /** When an open circuit lets the next probe through. */
  get openUntil(): number {
    return this.openUntilMs;
  }

  admit(nowMs: number): Admission {
    switch (this.current) {
      case 'closed':
        return this.claimTracked(nowMs) ? 'watch' : 'send';
      case 'open':
        if (nowMs < this.openUntilMs) return 'skip';
        this.trackedSinceMs = nowMs;
        this.move('half-open');
        return 'probe';
      case 'half-open':
        return this.claimTracked(nowMs) ? 'probe' : 'skip';
    }
  }

  /** What became of a request admitted as `admission` (an unsent or cancelled one: `unknown`). */
  settle(admission: Admission, verdict: Verdict, nowMs: number, reason = ''): void {
    if (admission === 'skip') return;
    // A watch belongs to the closed state and a probe to the half-open one; a late
    // result of the other kind must not free the slot of the request running now.
    if ((admission === 'watch' && this.current === 'closed') || (admission === 'probe' && this.current === 'half-open')) {
      this.trackedSinceMs = undefined;
    }
    if (verdict === 'success') {
      this.consecutiveFailures = 0;
      this.coolDownMs = this.policy.coolDownMs;
      if (this.current !== 'closed') this.move('closed');
      return;
    }
    if (verdict === 'unknown') return;
    this.lastFailure = reason;
    if (this.current === 'closed') {
      this.consecutiveFailures += 1;
      if (this.consecutiveFailures >= this.policy.failureThreshold) this.open(nowMs);
    } else if (this.current === 'half-open' && admission === 'probe') {
      this.consecutiveFailures += 1;
      this.coolDownMs = Math.min(this.coolDownMs * 2, this.policy.maxCoolDownMs);
      this.open(nowMs);
    }
  }

  private claimTracked(nowMs: number): boolean {
    if (this.trackedSinceMs !== undefined && nowMs - this.trackedSinceMs < this.policy.trackedLeaseMs) return false;
    this.trackedSinceMs = nowMs;
    return true;
  }

  private open(nowMs: number): void {
    this.openUntilMs = nowMs + this.coolDownMs;
    this.move('open');
  }

  private move(to: CircuitState): void {
    const from = this.current;
    this.current = to;
    this.onTransition({ from, to, failures: this.consecutiveFailures, coolDownMs: this.coolDownMs });
  }
}
