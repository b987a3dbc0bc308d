import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/observability/metrics.js';
import { RouterTally } from '../../../src/router/router-tally.js';

describe('RouterTally', () => {
  it('adds its counts to the docs/metrics.md counters once, then starts over', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const tally = new RouterTally();
    tally.callReceived('web', 'track');
    tally.callReceived('web', 'track');
    tally.callReceived('app', 'identify');
    tally.eventRouted('web', 'main');
    tally.eventFiltered('web', 'off', 'disabled');
    tally.eventFiltered('web', 'main', 'track_filter');
    tally.recordInvalid('unknown_source');
    tally.applyTo(metrics);
    tally.applyTo(metrics); // nothing twice
    const values = async (metric: { get(): Promise<{ values: { labels: object; value: number }[] }> }) =>
      (await metric.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]).sort();
    expect(await values(metrics.callsReceived)).toEqual([
      ['app/identify', 1],
      ['web/track', 2],
    ]);
    expect(await values(metrics.eventsRouted)).toEqual([['web/main', 1]]);
    expect(await values(metrics.eventsFiltered)).toEqual([
      ['web/main/track_filter', 1],
      ['web/off/disabled', 1],
    ]);
    expect(await values(metrics.callsInvalid)).toEqual([['unknown_source', 1]]);
  });
});
