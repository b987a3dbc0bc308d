// The circuit breakers of one destination's URLs (one CircuitBreaker per URL, by
// index), their `switchyard_circuit_state` series and their log lines. Logs and labels
// name a URL by its index only: a URL may carry a token.
import type { Logger } from 'pino';
import type { Gauge } from 'prom-client';
import { answerText } from './attempt-history.js';
import type { AttemptResult, OutcomeLabel } from './classify.js';
import { CIRCUIT_STATE_VALUE, CircuitBreaker } from './circuit-breaker.js';
import type { Admission, CircuitPolicy, CircuitState, CircuitTransition, Verdict } from './circuit-breaker.js';
import type { PreparedDestination } from './destination-settings.js';
import type { FanOutSelection, UrlResult } from './fan-out.js';

/** What the circuits let through for one event, as bit masks by URL index. */
export interface Admitted extends FanOutSelection {
  /** Of `keep`: the probes (the rest of `keep` are watched requests). */
  probe: number;
  /** URLs whose circuit is open: no request, outcome `circuit_open`. */
  skipped: number;
  /**
   * The breakers that admitted it, by URL index. NOTE: a reload may replace a URL's
   * breaker while the event's requests run; their results belong to the old URL and
   * must not count against the new one.
   */
  breakers: readonly CircuitBreaker[];
}

export interface UrlCircuitsOptions {
  destinationId: string;
  /** The policy for a destination's `circuitBreaker` settings (config overrides over the defaults). */
  policy: (overrides: Partial<CircuitPolicy> | undefined) => CircuitPolicy;
  gauge: Gauge<'destination' | 'url_index'>;
  logger: Logger;
}

/**
 * One URL as an operator sees it (the console's destinations view,
 * docs/admin-api.md#get-v1destinations): its circuit, and what it answered last.
 */
export interface UrlStatus {
  index: number;
  state: CircuitState;
  /** Retryable failures in a row (the breaker's count). */
  failures: number;
  /** The breaker's sliding window now: attempts that counted, and how many of them failed retryably. */
  window?: { attempts: number; failed: number };
  /** While open: when the next probe may go. */
  nextProbeAtMs?: number;
  /** The last answer that did not deliver (any outcome but a 2xx), and when. */
  lastFailure?: { atMs: number; outcome: OutcomeLabel; reason: string };
  lastSuccessAtMs?: number;
  /** The first failure after the last 2xx: since when this URL has not delivered. */
  failingSinceMs?: number;
}

/** What one URL answered last; kept beside its breaker and replaced with it. */
class LastAnswers {
  lastFailure: UrlStatus['lastFailure'];
  lastSuccessAtMs: number | undefined;
  failingSinceMs: number | undefined;

  note(result: AttemptResult, nowMs: number): void {
    if (result.verdict === 'delivered') {
      this.lastSuccessAtMs = nowMs;
      this.failingSinceMs = undefined;
      return;
    }
    this.lastFailure = { atMs: nowMs, outcome: result.outcome, reason: answerText(result) };
    this.failingSinceMs ??= nowMs;
  }
}

/** How many URLs a mask selects. */
export function countBits(mask: number): number {
  let n = 0;
  for (let m = mask; m !== 0; m &= m - 1) n += 1;
  return n;
}

export class UrlCircuits {
  private breakers: CircuitBreaker[] = [];
  private answers: LastAnswers[] = [];
  private urls: string[] = [];
  private seen: PreparedDestination | undefined;
  private policy: CircuitPolicy | undefined;
  private policyJson = '';

  constructor(private readonly options: UrlCircuitsOptions) {}

  /** Decides, per URL of `settings`, whether this event sends to it. */
  admit(settings: PreparedDestination, nowMs: number): Admitted {
    this.follow(settings);
    const admitted: Admitted = { send: 0, keep: 0, probe: 0, skipped: 0, breakers: this.breakers };
    for (let i = 0; i < this.breakers.length; i++) {
      const bit = 1 << i;
      const admission = this.breakers[i]!.admit(nowMs);
      if (admission === 'skip') {
        admitted.skipped |= bit;
        continue;
      }
      admitted.send |= bit;
      if (admission === 'watch' || admission === 'probe') admitted.keep |= bit;
      if (admission === 'probe') admitted.probe |= bit;
    }
    return admitted;
  }

  /** Feeds each URL's result to its circuit. Results of URLs that were not sent are ignored. */
  settle(admitted: Admitted, results: readonly UrlResult[], nowMs: number): void {
    for (const { index, result } of results) {
      const breaker = admitted.breakers[index];
      const bit = 1 << index;
      if (breaker === undefined || (admitted.send & bit) === 0) continue;
      let verdict: Verdict = 'unknown';
      let reason = '';
      if (result.outcome !== 'cancelled') {
        verdict = verdictOf(result);
        reason = answerText(result);
        // A late result of a URL replaced by a reload is not the new URL's answer.
        if (breaker === this.breakers[index]) this.answers[index]?.note(result, nowMs);
      }
      breaker.settle(admissionOf(admitted, bit), verdict, nowMs, reason);
    }
  }

  /** The event was not sent after all (stopping, or nothing to send): frees its probes. */
  abandon(admitted: Admitted, nowMs: number): void {
    admitted.breakers.forEach((breaker, i) => {
      const bit = 1 << i;
      if ((admitted.send & bit) !== 0) breaker.settle(admissionOf(admitted, bit), 'unknown', nowMs);
    });
  }

  /** A `circuit_open` result for every skipped URL: retryable, so the event is never dead-lettered for it before its window ends. */
  skippedResults(admitted: Admitted): UrlResult[] {
    const results: UrlResult[] = [];
    admitted.breakers.forEach((breaker, i) => {
      if ((admitted.skipped & (1 << i)) === 0) return;
      const result: AttemptResult & { durationMs: number } = { outcome: 'circuit_open', verdict: 'retryable', reason: skipReason(breaker), durationMs: 0 };
      results.push({ index: i, result });
    });
    return results;
  }

  /**
   * Whether every URL's circuit is open now (no request would go to any of them), and
   * if so the earliest time one may let a request through: the lane then holds its
   * events instead of attempting them (docs/webhooks.md#circuit-breaker).
   */
  allOpenUntil(settings: PreparedDestination, nowMs: number): number | undefined {
    this.follow(settings);
    if (this.breakers.length === 0) return undefined;
    let earliest = Infinity;
    for (const breaker of this.breakers) {
      const at = breaker.nextAdmissionAt(nowMs);
      if (at <= nowMs) return undefined;
      earliest = Math.min(earliest, at);
    }
    return earliest;
  }

  /** Each URL's circuit and last answers, by index (read-only: for the operator's console). */
  statuses(nowMs = Date.now()): UrlStatus[] {
    return this.breakers.map((breaker, index) => {
      const answers = this.answers[index];
      const status: UrlStatus = { index, state: breaker.state, failures: breaker.failures, window: breaker.windowTotals(nowMs) };
      if (breaker.state === 'open') status.nextProbeAtMs = breaker.openUntil;
      if (answers?.lastFailure !== undefined) status.lastFailure = answers.lastFailure;
      if (answers?.lastSuccessAtMs !== undefined) status.lastSuccessAtMs = answers.lastSuccessAtMs;
      if (answers?.failingSinceMs !== undefined) status.failingSinceMs = answers.failingSinceMs;
      return status;
    });
  }

  /** Drops the gauge series (the lane stops). */
  close(): void {
    for (let i = 0; i < this.breakers.length; i++) this.options.gauge.remove(this.options.destinationId, String(i));
    this.breakers = [];
    this.answers = [];
    this.urls = [];
    this.seen = undefined;
  }

  /** Keeps one breaker per URL: a URL changed by a config reload starts closed. Also sets each URL's gauge series (0) from the start. */
  follow(settings: PreparedDestination): void {
    if (settings === this.seen) return;
    this.seen = settings;
    const { destinationId, gauge } = this.options;
    const policyJson = JSON.stringify(settings.circuitBreaker ?? {});
    if (this.policy === undefined || policyJson !== this.policyJson) {
      this.policy = this.options.policy(settings.circuitBreaker);
      this.policyJson = policyJson;
      for (const breaker of this.breakers) breaker.updatePolicy(this.policy);
    }
    const policy = this.policy;
    const urls = settings.targets.map((t) => t.target.url);
    for (let i = urls.length; i < this.breakers.length; i++) gauge.remove(destinationId, String(i));
    // A new array, not changed in place: events admitted before keep the breakers they had.
    this.answers = urls.map((url, i) => (this.breakers[i] !== undefined && this.urls[i] === url ? this.answers[i] : undefined) ?? new LastAnswers());
    const breakers = urls.map((url, i): CircuitBreaker => {
      const kept = this.breakers[i];
      if (kept !== undefined && this.urls[i] === url) return kept;
      // NOTE: a breaker that was replaced (or closed) may still see late results; its
      // moves no longer show in the gauge or the log.
      const breaker: CircuitBreaker = new CircuitBreaker(policy, (t) => {
        if (this.breakers[i] === breaker) this.transition(i, t);
      });
      gauge.set({ destination: destinationId, url_index: String(i) }, CIRCUIT_STATE_VALUE.closed);
      return breaker;
    });
    this.breakers = breakers;
    this.urls = urls;
  }

  private transition(index: number, t: CircuitTransition): void {
    const { destinationId, gauge, logger } = this.options;
    gauge.set({ destination: destinationId, url_index: String(index) }, CIRCUIT_STATE_VALUE[t.to]);
    const fields = { urlIndex: index, attempts: t.attempts, failed: t.failed, unanswered: t.unanswered, coolDownMs: t.coolDownMs };
    const pause = `no requests to it for ${formatSeconds(t.coolDownMs)}, then probes`;
    if (t.to === 'open' && t.cause === 'unanswered') {
      logger.warn(fields, `webhook URL #${index}: ${t.unanswered} attempts in a row got no answer (connection failed or timed out); its circuit is open: ${pause}`);
    } else if (t.to === 'open' && t.cause === 'failure-rate') {
      logger.warn(fields, `webhook URL #${index}: ${t.failed} of its last ${t.attempts} attempts failed; its circuit is open: ${pause}`);
    } else if (t.to === 'open') {
      logger.warn(fields, `webhook URL #${index} failed its probes; its circuit stays open for ${formatSeconds(t.coolDownMs)}`);
    } else if (t.to === 'closed') {
      logger.info(fields, `webhook URL #${index} answered again; its circuit is closed`);
    } else {
      logger.debug(fields, `webhook URL #${index}: cool-down over; sending probes`);
    }
  }
}

/** What a result says about the URL's health (circuit-breaker.ts `Verdict`). */
function verdictOf(result: AttemptResult): Verdict {
  if (result.verdict !== 'retryable') return 'success';
  if (result.outcome === 'timeout') return 'timeout';
  // NOTE: no HTTP answer at all (refused, reset, no DNS, a failed handshake): nothing is there to answer.
  if (result.outcome === 'network' || result.outcome === 'tls') return 'unreachable';
  return 'failure';
}

/**
 * Why a URL got no request, for the dead-letter `error`: what it answered last, first.
 * NOTE: no timer, no count and no breaker state: the reason is stored with the event, and
 * "next probe in 5s" is stale once read (retry-or-dead-letter.ts puts the URL's last
 * answer from the attempt history here, with its time, when the history has one).
 */
function skipReason(breaker: CircuitBreaker): string {
  return breaker.lastFailure === '' ? 'no request this attempt: the URL had been failing' : `${breaker.lastFailure} (its last failed answer; no request this attempt)`;
}

function admissionOf(admitted: Admitted, bit: number): Admission {
  if ((admitted.probe & bit) !== 0) return 'probe';
  return (admitted.keep & bit) !== 0 ? 'watch' : 'send';
}

/** Seconds, rounded up to a tenth: "30s", "0.5s". */
function formatSeconds(ms: number): string {
  return `${Math.ceil(Math.max(0, ms) / 100) / 10}s`;
}
