// The log of destinations whose filter or transform fails at run time
// (docs/webhooks.md#when-an-expression-fails): one line per expression per minute, with
// how many calls failed since the last line, so a broken expression on a busy source
// does not flood the log. Every failure is counted in the metrics regardless.
import type { Logger } from 'pino';
import type { RouteDecision } from './routing-rules.js';

/** Where the call that failed was read, to find it again (no user id is logged). */
export interface CallOrigin {
  topic: string;
  partition: number;
  offset: string;
}

interface Seen {
  loggedAtMs: number;
  /** Failures since the last line. */
  since: number;
}

export const SHAPING_ERROR_LOG_INTERVAL_MS = 60_000;
/** Expressions remembered at most; past it, the ones not logged for an interval are forgotten. */
const MAX_REMEMBERED = 1_000;

export class ShapingErrorLog {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
    private readonly intervalMs = SHAPING_ERROR_LOG_INTERVAL_MS,
  ) {}

  /** A `transform_error` decision of a call from `source`. */
  failed(source: string, decision: Extract<RouteDecision, { routed: false }>, origin: CallOrigin): void {
    const error = decision.error ?? 'failed';
    const stage = error.startsWith('filter') ? 'filter' : 'transform';
    const expression = decision.target.shaping?.[stage]?.text;
    const key = `${decision.target.id}\u0000${stage}\u0000${expression ?? ''}`;
    const now = this.nowMs();
    const seen = this.seen.get(key);
    if (seen !== undefined && now - seen.loggedAtMs < this.intervalMs) {
      seen.since += 1;
      return;
    }
    const failures = (seen?.since ?? 0) + 1;
    this.remember(key, now);
    this.logger.warn(
      { destination: decision.target.id, source, stage, expression, error, failures, ...origin },
      `destination ${decision.target.id}: its ${stage} failed on ${failures} call(s) since it was last logged, so they were not sent there ` +
        `(counted as switchyard_events_filtered_total{reason="transform_error"}; other destinations are not affected); ` +
        `the latest, at ${origin.topic} partition ${origin.partition} offset ${origin.offset}: ${error}`,
    );
  }

  private remember(key: string, now: number): void {
    if (this.seen.size >= MAX_REMEMBERED && !this.seen.has(key)) {
      for (const [k, s] of this.seen) if (now - s.loggedAtMs >= this.intervalMs) this.seen.delete(k);
    }
    this.seen.set(key, { loggedAtMs: now, since: 0 });
  }
}
