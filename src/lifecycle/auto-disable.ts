// Automatic disabling (docs/webhooks.md#automatic-disabling), decided from what every
// deliverer pod reported. Each pod counts its own attempts of a destination (AttemptLog)
// and reports them as a record of its own in `destinations.state`; every pod reads all
// the reports and decides the same way (decideTransition), so that the share of the
// partitions a pod delivers does not matter: `minAttempts` counts the attempts of every
// pod, and one pod's success is a success of the destination. Pure; the clock is passed in.
import type { AutoDisableConfig } from '../config/schema.js';
import { formatDuration } from '../config/duration.js';
import { AUTOMATIC_ACTOR } from './lifecycle-state.js';
import type { DestinationLifecycle, TransitionRequest } from './lifecycle-state.js';

/** Failed attempts in [from, to] (epoch ms). */
export interface FailureSpan {
  from: number;
  to: number;
  count: number;
}

/** One pod's attempts of one destination since its last success, as written to `destinations.state`. */
export interface AttemptReport {
  destination: string;
  /** The life of the pod that counted them (state-records.ts, `instanceName`). */
  instance: string;
  at: number;
  lastSuccessAt?: number;
  /** Failed attempts since `lastSuccessAt` (or since the pod started), oldest first. */
  failures: FailureSpan[];
}

/** Spans a report keeps: older neighbours merge, so a report stays small however long the failure lasts. */
export const MAX_SPANS = 24;

/** The shares of `after` at which `destination.failing` is written. */
export const FAILING_SHARES = [0.5, 0.9] as const;

/** One pod's count of one destination's attempts. */
export class AttemptLog {
  private lastSuccessAt: number | undefined;
  private failures: FailureSpan[] = [];
  private changed = false;

  /** What happened since the last tick: `succeeded` attempts answered 2xx, `failed` did not. A success in the tick wins. */
  tick(nowMs: number, succeeded: number, failed: number): void {
    if (succeeded > 0) {
      this.lastSuccessAt = nowMs;
      this.failures = [];
      this.changed = true;
      return;
    }
    if (failed <= 0) return;
    const last = this.failures[this.failures.length - 1];
    this.failures.push({ from: last === undefined ? nowMs : Math.min(nowMs, last.to), to: nowMs, count: failed });
    if (this.failures.length > MAX_SPANS) {
      const [a, b, ...rest] = this.failures;
      this.failures = [{ from: a!.from, to: b!.to, count: a!.count + b!.count }, ...rest];
    }
    this.changed = true;
  }

  /** The report to write, when something changed since the last one taken. */
  takeReport(destination: string, instance: string, nowMs: number): AttemptReport | undefined {
    if (!this.changed) return undefined;
    this.changed = false;
    return { destination, instance, at: nowMs, ...(this.lastSuccessAt === undefined ? {} : { lastSuccessAt: this.lastSuccessAt }), failures: [...this.failures] };
  }
}

/** What every pod's reports say since `baseline`: the latest success, the first failure and the failed attempts after it. */
export function summarize(reports: readonly AttemptReport[], baseline: number): { lastSuccessAt: number | undefined; firstFailureAt: number | undefined; attempts: number } {
  let lastSuccessAt: number | undefined;
  for (const report of reports) if (report.lastSuccessAt !== undefined && (lastSuccessAt === undefined || report.lastSuccessAt > lastSuccessAt)) lastSuccessAt = report.lastSuccessAt;
  const since = Math.max(baseline, lastSuccessAt ?? -Infinity);
  let firstFailureAt: number | undefined;
  let attempts = 0;
  for (const report of reports) {
    for (const span of report.failures) {
      // NOTE: a span that straddles `since` counts whole: a report's spans are coarse, and
      // counting a few attempts too many only matters below minAttempts.
      if (span.to <= since) continue;
      attempts += span.count;
      const from = Math.max(span.from, since);
      if (firstFailureAt === undefined || from < firstFailureAt) firstFailureAt = from;
    }
  }
  return { lastSuccessAt, firstFailureAt, attempts };
}

/**
 * The transition the reports call for now, if any: `failing` at half of `after` without a
 * success and again at 90 %, `disabled` at `after` (with at least `minAttempts` attempts),
 * `recovered` at a success while failing. One step per call; the next tick takes the next.
 */
export function decideTransition(input: {
  destination: string;
  autoDisable: AutoDisableConfig;
  lifecycle: DestinationLifecycle;
  reports: readonly AttemptReport[];
  nowMs: number;
}): TransitionRequest | undefined {
  const { destination, autoDisable, lifecycle, reports, nowMs } = input;
  if (lifecycle.state === 'disabled') return undefined;
  const { lastSuccessAt, firstFailureAt, attempts } = summarize(reports, lifecycle.resetAt);
  if (lifecycle.state === 'failing') {
    const failingSince = lifecycle.failingSince ?? lifecycle.since;
    if (lastSuccessAt !== undefined && lastSuccessAt > failingSince) return { kind: 'recovered', destination, at: nowMs, succeededAt: lastSuccessAt };
    const elapsed = nowMs - failingSince;
    if (elapsed >= autoDisable.afterMs && attempts >= autoDisable.minAttempts) {
      const reason = `no successful attempt for ${formatDuration(autoDisable.afterMs)} (since ${new Date(failingSince).toISOString()}, ${attempts} attempts): settings.autoDisable`;
      return { kind: 'disable', destination, at: nowMs, by: AUTOMATIC_ACTOR, reason, automatic: true };
    }
    const share = FAILING_SHARES.filter((s) => elapsed >= s * autoDisable.afterMs && s > (lifecycle.announcedShare ?? 0)).pop();
    return share === undefined ? undefined : { kind: 'failing', destination, at: nowMs, noSuccessSince: failingSince, share, attempts };
  }
  if (firstFailureAt === undefined) return undefined;
  const elapsed = nowMs - firstFailureAt;
  const share = FAILING_SHARES.filter((s) => elapsed >= s * autoDisable.afterMs).pop();
  return share === undefined ? undefined : { kind: 'failing', destination, at: nowMs, noSuccessSince: firstFailureAt, share, attempts };
}

/** A report read back from its record, or undefined when the value is not one. */
export function parseAttemptReport(value: unknown): AttemptReport | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.destination !== 'string' || typeof r.instance !== 'string' || typeof r.at !== 'number' || !Array.isArray(r.failures)) return undefined;
  const failures = r.failures.filter((s): s is FailureSpan => typeof s === 'object' && s !== null && [s.from, s.to, s.count].every((n) => typeof n === 'number'));
  const report: AttemptReport = { destination: r.destination, instance: r.instance, at: r.at, failures };
  if (typeof r.lastSuccessAt === 'number') report.lastSuccessAt = r.lastSuccessAt;
  return report;
}
