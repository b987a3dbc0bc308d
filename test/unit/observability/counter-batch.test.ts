import { describe, expect, it } from 'vitest';
import { CounterBatch, LABEL_SEPARATOR, LabeledCounts } from '../../../src/observability/counter-batch.js';
import { createMetrics } from '../../../src/observability/metrics.js';

/** A counter child that records each inc() it gets. */
function recorder() {
  const calls: number[] = [];
  return { calls, inc: (value = 1) => void calls.push(value) };
}

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('CounterBatch', () => {
  it('keeps the counts until a flush, then adds them in one inc per counter', async () => {
    const batch = new CounterBatch();
    const a = recorder();
    const b = recorder();
    batch.add(a);
    batch.add(b);
    batch.add(a);
    batch.add(a, 2);
    await nextTurn();
    expect(a.calls).toEqual([]);
    batch.flush();
    expect(a.calls).toEqual([4]);
    expect(b.calls).toEqual([1]);
    // The next flush starts again from nothing.
    batch.add(b);
    batch.flush();
    batch.flush();
    expect(a.calls).toEqual([4]);
    expect(b.calls).toEqual([1, 1]);
  });

  it('is flushed by a read of the delivery counters: a scrape sees every count made before it', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.deliveryTally.add(metrics.deliveries.labels('d1', 'delivered'), 3);
    metrics.deliveryTally.add(metrics.deliveryAttempts.labels('d1', '2xx'));
    metrics.deliveryTally.add(metrics.deliveryAttempts.labels('d1', '2xx'));
    const text = await metrics.registry.metrics();
    expect(text).toContain('switchyard_deliveries_total{destination="d1",result="delivered"} 3');
    expect(text).toContain('switchyard_delivery_attempts_total{destination="d1",outcome="2xx"} 2');
    // Read again: nothing added twice.
    metrics.deliveryTally.add(metrics.deliveries.labels('d1', 'delivered'));
    const again = await metrics.deliveries.get();
    expect(again.values.find((v) => v.labels.result === 'delivered')?.value).toBe(4);
    expect(await metrics.registry.metrics()).toContain('switchyard_delivery_attempts_total{destination="d1",outcome="2xx"} 2');
  });
});

describe('LabeledCounts', () => {
  it('sums the counts of every hand-over and adds them at a read, one inc per series', () => {
    const counts = new LabeledCounts(['source', 'destination'] as const);
    const incs: [Record<string, string | undefined>, number | undefined][] = [];
    const counter = { inc: (labels: Partial<Record<'source' | 'destination', string>>, value?: number) => void incs.push([labels, value]) };
    const key = (source: string, destination: string) => source + LABEL_SEPARATOR + destination;
    counts.addAll(new Map([[key('web', 'd1'), 2], [key('web', 'd2'), 1]]));
    counts.addAll(new Map([[key('web', 'd1'), 3]]));
    expect(incs).toEqual([]);
    counts.flushInto(counter);
    expect(incs).toEqual([
      [{ source: 'web', destination: 'd1' }, 5],
      [{ source: 'web', destination: 'd2' }, 1],
    ]);
    counts.flushInto(counter);
    expect(incs).toHaveLength(2);
  });

  it('is flushed by a read of the router counters, beside direct incs (the gateway counts invalid calls itself)', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    metrics.routerCounts.routed.addAll(new Map([[`web${LABEL_SEPARATOR}main`, 4]]));
    metrics.routerCounts.invalid.addAll(new Map([['unknown_source', 2]]));
    metrics.callsInvalid.inc({ reason: 'unknown_source' });
    const text = await metrics.registry.metrics();
    expect(text).toContain('switchyard_events_routed_total{source="web",destination="main"} 4');
    expect(text).toContain('switchyard_calls_invalid_total{reason="unknown_source"} 3');
    // Read again: nothing added twice.
    expect(await metrics.registry.metrics()).toContain('switchyard_events_routed_total{source="web",destination="main"} 4');
  });
});
