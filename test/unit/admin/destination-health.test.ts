import { describe, expect, it } from 'vitest';
import { compareRows, judgeDestination } from '../../../src/admin/destination-health.js';
import type { HealthInput, KafkaFigures } from '../../../src/admin/destination-health.js';
import type { UrlStatus } from '../../../src/delivery/url-circuits.js';
import type { WindowFigures } from '../../../src/observability/recent-deliveries.js';

const NOW = Date.UTC(2026, 4, 1, 12);
const quiet: WindowFigures = { delivered: 0, eventsPerSecond: 0, retryScheduled: 0, deadLettered: 0, errorRate: null, attempts: {}, p95AttemptSeconds: null };
const minute = (figures: Partial<WindowFigures>) => ({ seconds: 60, figures: { ...quiet, ...figures } });
const closed = (index: number): UrlStatus & { label: string } => ({ index, label: `webhooks[${index}] https://h${index}.test`, state: 'closed', failures: 0 });
const emptyKafka: KafkaFigures = { consumerLag: 0, retryBacklog: [{ tier: '10s', waiting: 0 }], deadLetters: { kept: 0, notReplayed: 0 } };
const base: HealthInput = { enabled: true, recent: minute({}), urls: [closed(0)], kafka: emptyKafka, nowMs: NOW };

describe('judgeDestination', () => {
  const cases: { name: string; input: Partial<HealthInput>; health: string; reasons: string[] }[] = [
    { name: 'nothing wrong', input: {}, health: 'ok', reasons: [] },
    { name: 'no figures at all (a gateway pod, Kafka away)', input: { recent: undefined, urls: undefined, kafka: undefined }, health: 'ok', reasons: [] },
    {
      name: 'disabled: says so first, whatever else',
      input: { enabled: false, kafka: { ...emptyKafka, consumerLag: 5_000 } },
      health: 'disabled',
      reasons: ['disabled in the config: its events wait in its topics until it is enabled', '5000 events not yet attempted (consumer lag)'],
    },
    {
      name: 'rounds failing at the alert rate',
      input: { recent: minute({ delivered: 9, retryScheduled: 1, errorRate: 0.1 }) },
      health: 'failing',
      reasons: ['1 of 10 delivery attempts failed in the last 60 s (1 sent to retry)'],
    },
    { name: 'rounds failing below the alert rate', input: { recent: minute({ delivered: 19, deadLettered: 1, errorRate: 0.05 }) }, health: 'ok', reasons: [] },
    {
      name: 'the only URL open, with its last answer and next probe',
      input: {
        urls: [{ ...closed(0), state: 'open', failures: 5, nextProbeAtMs: NOW + 29_500, failingSinceMs: NOW - 60_000, lastFailure: { atMs: NOW - 1_000, outcome: '5xx', reason: '503 Service Unavailable' } }],
      },
      health: 'failing',
      reasons: ['webhooks[0] https://h0.test: circuit open after 5 failures in a row (no requests, next probe in 30 s); last answer 503 Service Unavailable at 2026-05-01T11:59:59.000Z'],
    },
    {
      name: 'one URL of two without a 2xx: the other still delivers',
      input: { urls: [closed(0), { ...closed(1), failingSinceMs: NOW - 5_000, lastFailure: { atMs: NOW - 5_000, outcome: '4xx', reason: '404 Not Found' } }] },
      health: 'attention',
      reasons: ['webhooks[1] https://h1.test: no 2xx since 2026-05-01T11:59:55.000Z; last answer 404 Not Found at 2026-05-01T11:59:55.000Z'],
    },
    {
      name: 'waiting work: dead letters not replayed, a retry backlog, lag over the alert',
      input: { kafka: { consumerLag: 1_000, retryBacklog: [{ tier: '10s', waiting: 2 }, { tier: '1m', waiting: 1 }], deadLetters: { kept: 5, notReplayed: 1 } } },
      health: 'attention',
      reasons: ['1 dead letter not replayed', '3 events waiting to be retried', '1000 events not yet attempted (consumer lag)'],
    },
    { name: 'dead letters all replayed', input: { kafka: { ...emptyKafka, deadLetters: { kept: 5, notReplayed: 0 } } }, health: 'ok', reasons: [] },
    {
      name: 'failing and waiting: the failure first',
      input: { recent: minute({ deadLettered: 3, errorRate: 1 }), kafka: { ...emptyKafka, deadLetters: { kept: 3, notReplayed: 3 } } },
      health: 'failing',
      reasons: ['3 of 3 delivery attempts failed in the last 60 s (3 dead-lettered)', '3 dead letters not replayed'],
    },
  ];
  for (const { name, input, health, reasons } of cases) {
    it(name, () => {
      expect(judgeDestination({ ...base, ...input })).toEqual({ health, reasons });
    });
  }
});

describe('compareRows', () => {
  it('lists failing first, then attention, ok, disabled; by id within each', () => {
    const rows = [
      { id: 'b', health: 'ok' as const },
      { id: 'z', health: 'disabled' as const },
      { id: 'c', health: 'failing' as const },
      { id: 'a', health: 'attention' as const },
      { id: 'a', health: 'ok' as const },
      { id: 'b', health: 'failing' as const },
    ];
    expect([...rows].sort(compareRows).map((r) => `${r.health}:${r.id}`)).toEqual(['failing:b', 'failing:c', 'attention:a', 'ok:a', 'ok:b', 'disabled:z']);
  });
});
