import { describe, expect, it } from 'vitest';
import { figuresBetween, histogramQuantile, startRecentDeliveries, windowFigures } from '../../../src/observability/recent-deliveries.js';
import type { DeliveryTotals } from '../../../src/observability/recent-deliveries.js';
import { createMetrics } from '../../../src/observability/metrics.js';

const INF = Number.POSITIVE_INFINITY;

describe('histogramQuantile', () => {
  const cases: { name: string; buckets: { le: number; count: number }[]; q: number; expected: number | null }[] = [
    { name: 'empty', buckets: [{ le: 0.1, count: 0 }, { le: INF, count: 0 }], q: 0.95, expected: null },
    { name: 'linear within the bucket', buckets: [{ le: 0.1, count: 0 }, { le: 0.5, count: 100 }, { le: INF, count: 100 }], q: 0.95, expected: 0.1 + 0.4 * 0.95 },
    { name: 'in the first bucket, from 0', buckets: [{ le: 0.2, count: 10 }, { le: INF, count: 10 }], q: 0.5, expected: 0.1 },
    { name: 'in +Inf: the highest finite bound', buckets: [{ le: 1, count: 1 }, { le: INF, count: 100 }], q: 0.95, expected: 1 },
    { name: 'buckets out of order', buckets: [{ le: INF, count: 4 }, { le: 1, count: 4 }, { le: 0.5, count: 0 }], q: 0.5, expected: 0.75 },
  ];
  for (const { name, buckets, q, expected } of cases) {
    it(name, () => {
      const got = histogramQuantile(q, buckets);
      if (expected === null) expect(got).toBeNull();
      else expect(got).toBeCloseTo(expected, 9);
    });
  }
});

describe('windowFigures', () => {
  const totals = (t: Partial<DeliveryTotals>): DeliveryTotals => ({ delivered: 0, retryScheduled: 0, deadLettered: 0, attempts: {}, buckets: [], ...t });

  it('counts the increase over the window, as Prometheus increase() does', () => {
    const older = totals({ delivered: 100, retryScheduled: 5, attempts: { '2xx': 100, '5xx': 5 }, buckets: [{ le: 0.1, count: 90 }, { le: INF, count: 105 }] });
    const newer = totals({ delivered: 160, retryScheduled: 25, deadLettered: 15, attempts: { '2xx': 160, '5xx': 45 }, buckets: [{ le: 0.1, count: 150 }, { le: INF, count: 205 }] });
    expect(windowFigures(older, newer, 60)).toEqual({
      delivered: 60,
      eventsPerSecond: 1,
      retryScheduled: 20,
      deadLettered: 15,
      errorRate: 35 / 95,
      attempts: { '2xx': 60, '5xx': 40 },
      p95AttemptSeconds: 0.1,
    });
  });

  it('counts a destination new in the window, or a counter that went down, from 0; no round: no error rate', () => {
    expect(windowFigures(undefined, totals({ delivered: 3 }), 10)).toMatchObject({ delivered: 3, eventsPerSecond: 0.3, errorRate: 0 });
    expect(windowFigures(totals({ delivered: 50 }), totals({ delivered: 4 }), 10)).toMatchObject({ delivered: 4 });
    expect(windowFigures(totals({ delivered: 5 }), totals({ delivered: 5 }), 10)).toMatchObject({ delivered: 0, errorRate: null, p95AttemptSeconds: null, attempts: {} });
  });

  it('figuresBetween covers every destination of the newer snapshot over the time between', () => {
    const got = figuresBetween({ atMs: 0, destinations: new Map() }, { atMs: 30_000, destinations: new Map([['a', totals({ delivered: 30 })]]) });
    expect(got.seconds).toBe(30);
    expect(got.byDestination.get('a')).toMatchObject({ delivered: 30, eventsPerSecond: 1 });
  });
});

describe('startRecentDeliveries', () => {
  it('reads the delivery metrics of this process since its first snapshot, within the first minute', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    let now = 0;
    // Before the start: in the first snapshot, so not in the figures.
    metrics.deliveries.inc({ destination: 'hooks', result: 'delivered' }, 10);
    const recent = startRecentDeliveries(metrics, { intervalMs: 3_600_000, now: () => now });
    try {
      await recent.started;
      now = 20_000;
      metrics.deliveries.inc({ destination: 'hooks', result: 'delivered' }, 5);
      metrics.deliveries.inc({ destination: 'hooks', result: 'dead_lettered' }, 5);
      metrics.deliveryAttempts.inc({ destination: 'hooks', outcome: '5xx' }, 5);
      metrics.deliveryDuration.observe({ destination: 'hooks' }, 0.2);
      const figures = await recent.figures();
      expect(figures.seconds).toBe(20);
      expect(figures.byDestination.get('hooks')).toMatchObject({ delivered: 5, deadLettered: 5, errorRate: 0.5, attempts: { '5xx': 5 }, eventsPerSecond: 0.25 });
      expect(figures.byDestination.get('hooks')?.p95AttemptSeconds).toBeGreaterThan(0);
    } finally {
      recent.stop();
    }
  });
});
