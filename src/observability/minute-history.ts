// The last hour of each destination's deliveries in this process, minute by minute, for
// the operator console's chart (docs/admin-api.md#get-v1destinations). Like
// recent-deliveries.ts it reads the process's own switchyard_deliveries_total rather than
// the delivery path: at each minute's start it keeps the counter's values, and a minute's
// figures are the increase from its start to the next one's (to now for the current one).
import type { Metrics } from './metrics.js';

export const MINUTE_MS = 60_000;
/** Minutes in the chart: the last hour, the current (partial) minute the last of them. */
export const HISTORY_MINUTES = 60;

/** One destination's cumulative counts at one moment. */
export interface MinuteTotals {
  delivered: number;
  /** Delivery attempts that did not deliver: sent to a retry tier or dead-lettered. */
  failed: number;
}

/** Per destination, oldest minute first; index i covers the minute starting at `fromMs + i * MINUTE_MS`. */
export interface HourFigures {
  fromMs: number;
  minutes: number;
  byDestination: Map<string, { delivered: number[]; failed: number[] }>;
}

export function minuteOf(atMs: number): number {
  return Math.floor(atMs / MINUTE_MS) * MINUTE_MS;
}

/**
 * The figures of the `minutes` minutes up to the one holding `nowMs`, from the totals kept
 * at minute starts (`starts`, by the minute's start) and the totals now: each kept start's
 * minute gets the increase up to the next kept start (to now for the last). A minute
 * without kept totals (its timer was late past the whole minute) shows 0, its events in the
 * minute before. A destination absent from a kept start counts from 0; a counter that went
 * down (a series made again) counts from 0 too. Pure.
 */
export function hourFigures(starts: ReadonlyMap<number, ReadonlyMap<string, MinuteTotals>>, now: ReadonlyMap<string, MinuteTotals>, nowMs: number, minutes = HISTORY_MINUTES): HourFigures {
  const current = minuteOf(nowMs);
  const fromMs = current - (minutes - 1) * MINUTE_MS;
  const byDestination = new Map<string, { delivered: number[]; failed: number[] }>();
  for (const id of now.keys()) byDestination.set(id, { delivered: new Array<number>(minutes).fill(0), failed: new Array<number>(minutes).fill(0) });
  const increase = (before: number, after: number) => (after < before ? after : after - before);
  const kept = [...starts.keys()].filter((at) => at <= current).sort((a, b) => a - b);
  kept.forEach((at, j) => {
    const i = (at - fromMs) / MINUTE_MS;
    if (i < 0) return;
    const base = starts.get(at)!;
    const next = kept[j + 1];
    const end = next === undefined ? now : starts.get(next)!;
    for (const [id, series] of byDestination) {
      const after = end.get(id);
      if (after === undefined) continue;
      const before = base.get(id);
      series.delivered[i] = increase(before?.delivered ?? 0, after.delivered);
      series.failed[i] = increase(before?.failed ?? 0, after.failed);
    }
  });
  return { fromMs, minutes, byDestination };
}

/** switchyard_deliveries_total now, per destination (cheap: three series each). */
export async function readMinuteTotals(metrics: Pick<Metrics, 'deliveries'>): Promise<Map<string, MinuteTotals>> {
  const totals = new Map<string, MinuteTotals>();
  for (const { labels, value } of (await metrics.deliveries.get()).values) {
    const id = String(labels.destination);
    const entry = totals.get(id) ?? { delivered: 0, failed: 0 };
    if (labels.result === 'delivered') entry.delivered += value;
    else if (labels.result === 'retry_scheduled' || labels.result === 'dead_lettered') entry.failed += value;
    totals.set(id, entry);
  }
  return totals;
}

export interface MinuteHistory {
  figures(): Promise<HourFigures>;
  stop(): void;
}

/**
 * Keeps the totals at the process's start and at every minute's start, for the last hour.
 * NOTE: the timer is set to each minute's start rather than repeated every 60 s, so a late
 * tick (a busy event loop) does not drift into the next minutes.
 */
export function startMinuteHistory(metrics: Pick<Metrics, 'deliveries'>, options: { now?: () => number; minutes?: number } = {}): MinuteHistory {
  const now = options.now ?? Date.now;
  const minutes = options.minutes ?? HISTORY_MINUTES;
  const starts = new Map<number, Map<string, MinuteTotals>>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const keep = async (atMs: number) => {
    const totals = await readMinuteTotals(metrics);
    // At the process's start the counters are all 0: its first minute counts from there.
    starts.set(minuteOf(atMs), totals);
    for (const at of starts.keys()) if (at < minuteOf(atMs) - minutes * MINUTE_MS) starts.delete(at);
  };
  const next = () => {
    if (stopped) return;
    const wait = minuteOf(now()) + MINUTE_MS - now();
    timer = setTimeout(() => {
      void keep(now()).catch(() => undefined).finally(next);
    }, wait);
    timer.unref();
  };
  void keep(now()).catch(() => undefined).finally(next);
  return {
    async figures() {
      return hourFigures(starts, await readMinuteTotals(metrics), now(), minutes);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
