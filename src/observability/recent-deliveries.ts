// The last minute of each destination's deliveries in this process, for the operator's
// console (docs/admin-api.md#get-v1destinations). Read from the process's own metrics
// (switchyard_deliveries_total, switchyard_delivery_attempts_total,
// switchyard_delivery_duration_seconds): a snapshot every few seconds, and the figures are
// the difference between now and a minute ago, worked out as Prometheus does (increase,
// histogram_quantile), so the console and the dashboard agree. The delivery path is not
// touched: nothing is counted twice.
import type { Metrics } from './metrics.js';
import type { WindowFigures } from './window-figures.js';

/** One destination's counts at one moment (cumulative, as the metrics hold them). */
export interface DeliveryTotals {
  delivered: number;
  retryScheduled: number;
  deadLettered: number;
  /** Attempts by outcome label. */
  attempts: Record<string, number>;
  /** The request-duration histogram's cumulative buckets, by upper bound in seconds (the last one +Infinity). */
  buckets: { le: number; count: number }[];
}

export interface Snapshot {
  atMs: number;
  destinations: Map<string, DeliveryTotals>;
}

export type { WindowFigures } from './window-figures.js';

export interface RecentFigures {
  /** How many seconds the figures cover: the window, or less in the first minute after start. */
  seconds: number;
  byDestination: Map<string, WindowFigures>;
}

export interface RecentDeliveries {
  figures(): Promise<RecentFigures>;
  /** Settles once the first snapshot, taken at the start, is kept. */
  started: Promise<void>;
  stop(): void;
}

const DEFAULT_WINDOW_MS = 60_000;
/**
 * NOTE: the window is 60 to 75 s (the figures say how long). A snapshot reads every series
 * of three metrics, as a Prometheus scrape does, on the deliverer's event loop: at 1,000
 * destinations tens of ms (mostly the duration histogram's buckets), so every 15 s
 * rather than every 5 s. Figures: docs/benchmarks.md#figures-behind-the-code.
 */
const DEFAULT_INTERVAL_MS = 15_000;

/** The `q` quantile of a histogram's cumulative buckets, as Prometheus's histogram_quantile: linear within the bucket; null when empty. */
export function histogramQuantile(q: number, buckets: readonly { le: number; count: number }[]): number | null {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const bucket of sorted) {
    if (bucket.count >= rank) {
      // In the +Inf bucket: the highest finite bound is the best answer there is.
      if (bucket.le === Number.POSITIVE_INFINITY) return lowerBound;
      const inBucket = bucket.count - lowerCount;
      return inBucket <= 0 ? bucket.le : lowerBound + ((bucket.le - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = bucket.le;
    lowerCount = bucket.count;
  }
  return lowerBound;
}

/** What changed from `older` to `newer` over `seconds`; a destination absent before counts from 0. */
export function windowFigures(older: DeliveryTotals | undefined, newer: DeliveryTotals, seconds: number): WindowFigures {
  // A counter never goes down within a process; should one (a series removed and made again), count it from 0.
  const increase = (before: number | undefined, after: number) => (before === undefined || after < before ? after : after - before);
  const delivered = increase(older?.delivered, newer.delivered);
  const retryScheduled = increase(older?.retryScheduled, newer.retryScheduled);
  const deadLettered = increase(older?.deadLettered, newer.deadLettered);
  const rounds = delivered + retryScheduled + deadLettered;
  const attempts: Record<string, number> = {};
  for (const [outcome, count] of Object.entries(newer.attempts)) {
    const n = increase(older?.attempts[outcome], count);
    if (n > 0) attempts[outcome] = n;
  }
  const olderBuckets = new Map(older?.buckets.map((b) => [b.le, b.count]));
  const buckets = newer.buckets.map((b) => ({ le: b.le, count: increase(olderBuckets.get(b.le), b.count) }));
  return {
    delivered,
    eventsPerSecond: seconds > 0 ? delivered / seconds : 0,
    retryScheduled,
    deadLettered,
    errorRate: rounds === 0 ? null : (retryScheduled + deadLettered) / rounds,
    attempts,
    p95AttemptSeconds: histogramQuantile(0.95, buckets),
  };
}

/** The figures between two snapshots, for every destination of the newer one. */
export function figuresBetween(older: Snapshot, newer: Snapshot): RecentFigures {
  const seconds = Math.max(0, (newer.atMs - older.atMs) / 1000);
  const byDestination = new Map<string, WindowFigures>();
  for (const [id, totals] of newer.destinations) byDestination.set(id, windowFigures(older.destinations.get(id), totals, seconds));
  return { seconds, byDestination };
}

/** The delivery metrics' values now, per destination. */
export async function takeSnapshot(metrics: Metrics, atMs: number): Promise<Snapshot> {
  const destinations = new Map<string, DeliveryTotals>();
  const of = (id: string): DeliveryTotals => {
    let totals = destinations.get(id);
    if (totals === undefined) {
      totals = { delivered: 0, retryScheduled: 0, deadLettered: 0, attempts: {}, buckets: [] };
      destinations.set(id, totals);
    }
    return totals;
  };
  for (const { labels, value } of (await metrics.deliveries.get()).values) {
    const totals = of(String(labels.destination));
    if (labels.result === 'delivered') totals.delivered = value;
    else if (labels.result === 'retry_scheduled') totals.retryScheduled = value;
    else if (labels.result === 'dead_lettered') totals.deadLettered = value;
  }
  for (const { labels, value } of (await metrics.deliveryAttempts.get()).values) of(String(labels.destination)).attempts[String(labels.outcome)] = value;
  for (const { labels, value, metricName } of (await metrics.deliveryDuration.get()).values) {
    if (metricName?.endsWith('_bucket') !== true) continue;
    // NOTE: prom-client types a histogram's values with its own labels only; a bucket's also carry `le`.
    const bound = (labels as Record<string, string | number | undefined>).le;
    const le = bound === '+Inf' ? Number.POSITIVE_INFINITY : Number(bound);
    of(String(labels.destination)).buckets.push({ le, count: value });
  }
  return { atMs, destinations };
}

/**
 * Snapshots the delivery metrics every `intervalMs` (the first at once) and keeps what the
 * last `windowMs` needs. NOTE: started with a role that delivers, so that the console's
 * first look already has a minute behind it.
 */
export function startRecentDeliveries(metrics: Metrics, options: { windowMs?: number; intervalMs?: number; now?: () => number } = {}): RecentDeliveries {
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  const now = options.now ?? Date.now;
  let snapshots: Snapshot[] = [];
  const keep = (snapshot: Snapshot) => {
    snapshots.push(snapshot);
    // The newest snapshot at least a window old is the base of the next figures; older ones go.
    const base = snapshots.findLastIndex((s) => s.atMs <= snapshot.atMs - windowMs);
    if (base > 0) snapshots = snapshots.slice(base);
  };
  const sample = () => takeSnapshot(metrics, now()).then(keep, () => undefined);
  const started = sample();
  const timer = setInterval(() => void sample(), options.intervalMs ?? DEFAULT_INTERVAL_MS);
  timer.unref();
  return {
    started,
    async figures() {
      const current = await takeSnapshot(metrics, now());
      const base = snapshots.findLast((s) => s.atMs <= current.atMs - windowMs) ?? snapshots[0] ?? current;
      return figuresBetween(base, current);
    },
    stop: () => clearInterval(timer),
  };
}
