// Per-URL circuit breaker (docs/webhooks.md#circuit-breaker): a URL's circuit opens when
// at least half of its attempts in a sliding window failed retryably (with a minimum
// number of attempts), or when several attempts in a row got no answer at all
// (connection refused or reset, no DNS, timeout) with nothing answered in between; open, it gets no request for a cool-down, then a
// few probes decide. Pure: the clock comes in as `nowMs`, so every transition is
// unit-tested without a timer (test/unit/delivery/circuit-breaker.test.ts).

export type CircuitState = 'closed' | 'open' | 'half-open';

/** The `switchyard_circuit_state` gauge value of each state (docs/metrics.md). */
export const CIRCUIT_STATE_VALUE: Readonly<Record<CircuitState, number>> = { closed: 0, open: 1, 'half-open': 2 };

export interface CircuitPolicy {
  /** The sliding window the failure rate is judged over. */
  windowMs: number;
  /** Attempts in the window below which the rate says nothing. */
  minAttempts: number;
  /** The share of failed attempts in the window (0 to 1) that opens the circuit. */
  failureRatio: number;
  /**
   * Attempts in a row that got no answer at all (connection refused or reset, no DNS; a
   * timeout of the watched request), with no answer between, that open the circuit.
   */
  unanswered: number;
  /** The first cool-down; each failed round of probes doubles it. */
  coolDownMs: number;
  maxCoolDownMs: number;
  /** Probes a half-open circuit sends at once; the first success closes it, all of them failing opens it again. */
  probes: number;
  /**
   * How long one tracked request (probe or watch, below) may stay unsettled before its
   * slot is free again: a backstop for a result that never came back. Longer than
   * `delivery.timeout`, which ends every request.
   */
  trackedLeaseMs: number;
}

/**
 * The defaults (docs/webhooks.md#circuit-breaker). NOTE: a run of 5 consecutive
 * retryable failures used to open a circuit; a receiver answering 80 % of requests had
 * such a run every few thousand requests at 64 in flight, and its circuit opened about
 * once a minute. A rate over a window with a minimum of attempts does not see a run of
 * bad luck; a dead or hanging receiver (nothing answered) still opens within 5 attempts; a
 * hanging URL beside a healthy one gets few results (its requests are cancelled by the
 * other's 2xx, all but the watched one), so a rate would hardly ever judge it.
 */
export const DEFAULT_CIRCUIT_POLICY: Omit<CircuitPolicy, 'trackedLeaseMs'> = {
  windowMs: 10_000,
  minAttempts: 20,
  failureRatio: 0.5,
  unanswered: 5,
  coolDownMs: 30_000,
  maxCoolDownMs: 600_000,
  probes: 3,
};

/**
 * What to do with the next request to the URL:
 * - `send`: send it; another URL's 2xx may cancel it.
 * - `watch`: send it and let it finish (never cancelled): the breaker's sample of a URL
 *   that always loses the race to another one (below).
 * - `probe`: a request after a cool-down that decides; never cancelled either.
 * - `skip`: the circuit is open: no request.
 */
export type Admission = 'send' | 'watch' | 'probe' | 'skip';

/**
 * How a request ended:
 * - `success`: anything but a retryable failure (a 2xx, or a 4xx that says the request, not the receiver, is wrong);
 * - `failure`: a retryable answer (a 5xx, 429, …);
 * - `timeout`: no complete answer in time;
 * - `unreachable`: the connection failed outright (refused, reset, no DNS);
 * - `unknown`: cancelled, or never sent.
 */
export type Verdict = 'success' | 'failure' | 'timeout' | 'unreachable' | 'unknown';

export interface CircuitTransition {
  from: CircuitState;
  to: CircuitState;
  /** When opening: what opened it. */
  cause?: 'failure-rate' | 'unanswered' | 'probes';
  /** The window's attempts and failures at the move (when opening on the rate: the ones that opened it). */
  attempts: number;
  failed: number;
  /** Attempts without an answer in a row. */
  unanswered: number;
  /** The cool-down that starts now (when opening). */
  coolDownMs: number;
}

/** Attempts and failures per slice of the window, in a ring: a sliding window with the slice's granularity. */
class AttemptWindow {
  private static readonly SLICES = 10;
  private readonly sliceMs: number;
  private readonly index = new Array<number>(AttemptWindow.SLICES).fill(-1);
  private readonly attempts = new Array<number>(AttemptWindow.SLICES).fill(0);
  private readonly failures = new Array<number>(AttemptWindow.SLICES).fill(0);

  constructor(windowMs: number) {
    this.sliceMs = Math.max(1, windowMs / AttemptWindow.SLICES);
  }

  record(nowMs: number, failed: boolean): void {
    const index = Math.floor(nowMs / this.sliceMs);
    const slot = index % AttemptWindow.SLICES;
    if (this.index[slot] !== index) {
      this.index[slot] = index;
      this.attempts[slot] = 0;
      this.failures[slot] = 0;
    }
    this.attempts[slot]! += 1;
    if (failed) this.failures[slot]! += 1;
  }

  /** Attempts and failures of the slices inside the window ending now. */
  totals(nowMs: number): { attempts: number; failed: number } {
    const newest = Math.floor(nowMs / this.sliceMs);
    let attempts = 0;
    let failed = 0;
    for (let slot = 0; slot < AttemptWindow.SLICES; slot++) {
      const index = this.index[slot]!;
      if (index < 0 || index <= newest - AttemptWindow.SLICES || index > newest) continue;
      attempts += this.attempts[slot]!;
      failed += this.failures[slot]!;
    }
    return { attempts, failed };
  }

  clear(): void {
    this.index.fill(-1);
  }
}

/**
 * One URL's circuit.
 *
 * NOTE: when several URLs share an event, the first 2xx cancels the requests still
 * running (fan-out.ts), so a URL that hangs would only ever produce `cancelled` results,
 * which say nothing. So one request per URL at a time is `watch`ed: it runs to its
 * answer or its timeout and its result counts. Every other request that finishes counts
 * too; cancelled ones do not.
 *
 * A success closes the circuit from any state and starts a fresh window. A failure of a
 * request sent before the circuit opened is ignored once it is open: the failures before
 * it opened the circuit already.
 */
export class CircuitBreaker {
  private current: CircuitState = 'closed';
  private readonly window: AttemptWindow;
  private unansweredRun = 0;
  private consecutiveFailures = 0;
  private coolDownMs: number;
  private openUntilMs = 0;
  /** When the one watched request started (closed state); undefined when none runs. */
  private watchSinceMs: number | undefined;
  /** When each probe still out started (half-open state). */
  private probesOut: number[] = [];
  /** Probes of this half-open spell that failed. */
  private probesFailed = 0;
  /** For people: why the circuit opened (the last failure's reason). */
  lastFailure = '';

  constructor(
    private policy: CircuitPolicy,
    private readonly onTransition: (transition: CircuitTransition) => void = () => undefined,
  ) {
    checkPolicy(policy);
    this.coolDownMs = policy.coolDownMs;
    this.window = new AttemptWindow(policy.windowMs);
  }

  get state(): CircuitState {
    return this.current;
  }

  /** Retryable failures in a row, the failed probes included; 0 after a success (for people). */
  get failures(): number {
    return this.consecutiveFailures;
  }

  /** When an open circuit lets the next probes through. */
  get openUntil(): number {
    return this.openUntilMs;
  }

  /** The window's attempts and failures now (for people). */
  windowTotals(nowMs: number): { attempts: number; failed: number } {
    return this.window.totals(nowMs);
  }

  /**
   * The earliest time a request that is skipped now could be admitted (now when one
   * would be): the end of the cool-down, or the lease of the oldest probe out. A probe
   * that settles earlier frees its slot before then.
   */
  nextAdmissionAt(nowMs: number): number {
    switch (this.current) {
      case 'closed':
        return nowMs;
      case 'open':
        return Math.max(nowMs, this.openUntilMs);
      case 'half-open':
        if (this.probesOut.length < this.policy.probes) return nowMs;
        return Math.max(nowMs, Math.min(...this.probesOut) + this.policy.trackedLeaseMs);
    }
  }

  /** A reload changed the thresholds: they apply from the next result on. */
  updatePolicy(policy: CircuitPolicy): void {
    checkPolicy(policy);
    if (policy.windowMs !== this.policy.windowMs) this.window.clear();
    this.policy = policy;
    this.coolDownMs = Math.min(Math.max(this.coolDownMs, policy.coolDownMs), policy.maxCoolDownMs);
  }

  admit(nowMs: number): Admission {
    switch (this.current) {
      case 'closed':
        if (this.watchSinceMs !== undefined && nowMs - this.watchSinceMs < this.policy.trackedLeaseMs) return 'send';
        this.watchSinceMs = nowMs;
        return 'watch';
      case 'open':
        if (nowMs < this.openUntilMs) return 'skip';
        this.probesOut = [];
        this.probesFailed = 0;
        this.move('half-open');
        return this.admitProbe(nowMs);
      case 'half-open':
        return this.admitProbe(nowMs);
    }
  }

  /** What became of a request admitted as `admission` (an unsent or cancelled one: `unknown`). */
  settle(admission: Admission, verdict: Verdict, nowMs: number, reason = ''): void {
    if (admission === 'skip') return;
    const probe = admission === 'probe' && this.current === 'half-open';
    // A watch belongs to the closed state and a probe to the half-open one; a late
    // result of the other kind must not free the slot of the request running now.
    if (admission === 'watch' && this.current === 'closed') this.watchSinceMs = undefined;
    if (probe) this.releaseProbe();
    if (verdict === 'unknown') return;
    if (verdict === 'success') {
      this.consecutiveFailures = 0;
      this.unansweredRun = 0;
      this.coolDownMs = this.policy.coolDownMs;
      if (this.current !== 'closed') {
        this.window.clear();
        this.move('closed');
      } else {
        this.window.record(nowMs, false);
      }
      return;
    }
    this.lastFailure = reason;
    if (this.current === 'closed') {
      this.consecutiveFailures += 1;
      // NOTE: an answer, however bad, says the receiver is there. A timeout counts in the
      // run only for the watched request (one at a time): many requests in flight to a
      // slow receiver time out together, a run of bad luck, not a receiver that is gone.
      if (verdict === 'failure') this.unansweredRun = 0;
      else if (verdict === 'unreachable' || admission === 'watch') this.unansweredRun += 1;
      this.window.record(nowMs, true);
      if (this.unansweredRun >= this.policy.unanswered) this.open(nowMs, 'unanswered');
      else if (this.rateTooHigh(nowMs)) this.open(nowMs, 'failure-rate');
    } else if (probe) {
      this.consecutiveFailures += 1;
      this.probesFailed += 1;
      if (this.probesFailed >= this.policy.probes) {
        this.coolDownMs = Math.min(this.coolDownMs * 2, this.policy.maxCoolDownMs);
        this.open(nowMs, 'probes');
      }
    }
  }

  private rateTooHigh(nowMs: number): boolean {
    const { attempts, failed } = this.window.totals(nowMs);
    return attempts >= this.policy.minAttempts && failed >= this.policy.failureRatio * attempts;
  }

  /** A probe while fewer than `probes` are out and fewer than `probes` failed; a lost one frees its slot after the lease. */
  private admitProbe(nowMs: number): Admission {
    const lease = this.policy.trackedLeaseMs;
    if (this.probesOut.some((at) => nowMs - at >= lease)) this.probesOut = this.probesOut.filter((at) => nowMs - at < lease);
    if (this.probesOut.length + this.probesFailed >= this.policy.probes) return 'skip';
    this.probesOut.push(nowMs);
    return 'probe';
  }

  private releaseProbe(): void {
    // Which probe settled does not matter: only how many are out and the oldest's age.
    this.probesOut.shift();
  }

  private open(nowMs: number, cause: NonNullable<CircuitTransition['cause']>): void {
    this.openUntilMs = nowMs + this.coolDownMs;
    this.watchSinceMs = undefined;
    this.probesOut = [];
    this.move('open', cause, nowMs);
  }

  private move(to: CircuitState, cause?: CircuitTransition['cause'], nowMs = 0): void {
    const from = this.current;
    this.current = to;
    const { attempts, failed } = this.window.totals(nowMs);
    const transition: CircuitTransition = { from, to, attempts, failed, unanswered: this.unansweredRun, coolDownMs: this.coolDownMs };
    if (cause !== undefined) transition.cause = cause;
    if (to === 'closed' || to === 'half-open') this.unansweredRun = 0;
    this.onTransition(transition);
  }
}

function checkPolicy(policy: CircuitPolicy): void {
  const positiveInt = (n: number) => Number.isInteger(n) && n >= 1;
  if (!positiveInt(policy.minAttempts)) throw new RangeError(`CircuitBreaker: minAttempts must be a positive integer, got ${policy.minAttempts}`);
  if (!positiveInt(policy.unanswered)) throw new RangeError(`CircuitBreaker: unanswered must be a positive integer, got ${policy.unanswered}`);
  if (!positiveInt(policy.probes)) throw new RangeError(`CircuitBreaker: probes must be a positive integer, got ${policy.probes}`);
  if (!(policy.failureRatio > 0 && policy.failureRatio <= 1)) throw new RangeError(`CircuitBreaker: failureRatio must be above 0 and at most 1, got ${policy.failureRatio}`);
  if (!(policy.windowMs > 0)) throw new RangeError(`CircuitBreaker: windowMs must be positive, got ${policy.windowMs}`);
}
