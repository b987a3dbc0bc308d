// What one destination's deliveries came to over a window (src/observability/recent-deliveries.ts
// works it out from the metrics): types only.
// NOTE: this file imports nothing: the operator console (browser code, checked without
// Node's types) reads it through src/admin/answers.ts, and an import here would bring
// its file into the console's program (eslint.config.js holds this).

/** What one destination did over the window. */
export interface WindowFigures {
  delivered: number;
  /** Events delivered per second over the window. */
  eventsPerSecond: number;
  retryScheduled: number;
  deadLettered: number;
  /**
   * Delivery rounds that did not deliver (retry scheduled or dead-lettered) over all
   * rounds, as the success-rate alerts count them; null without a round.
   */
  errorRate: number | null;
  /** Attempts by outcome (the outcomes seen only). */
  attempts: Record<string, number>;
  /** The 95th percentile of one request's duration, from the histogram's buckets; null without a request. */
  p95AttemptSeconds: number | null;
}
