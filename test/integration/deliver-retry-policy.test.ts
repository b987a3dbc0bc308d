// A retry policy per destination (`settings.retry`, docs/webhooks.md#retry-policy-per-destination)
// against a real broker and real local receivers: a destination with its own tiers and
// window retries on its own tier topics and dead-letters at its own window's end, while
// another keeps `delivery.retryTiers`; `stopOn: [410]` dead-letters a 410 at once, where
// Segment's rules retry it; a Retry-After is honoured up to the policy's largest tier.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import type { ConfigListener, ConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { captureLogs } from '../support/captured-logs.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { printedUrl, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

/** The destination `own`'s window; the defaults' is 60 s, far beyond this test. */
const OWN_WINDOW_MS = 2_000;

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let config: Config;
let metrics: Metrics;
/** The deliverer's config, changed by a test as a file reload would (src/config/store.ts). */
const listeners = new Set<ConfigListener>();
const store: ConfigStore = {
  current: () => config,
  onChange: (listener) => {
    listeners.add(listener);
    return () => listeners.delete(listener);
  },
  close: () => listeners.clear(),
};
function reload(next: Config): void {
  const previous = config;
  config = next;
  for (const listener of listeners) listener(next, previous);
}
let service: Service;
/** The deliverer's log lines, in order. */
const logs = captureLogs();
const RECEIVER_IDS = ['own', 'plain', 'gone', 'goneDefault', 'capped'] as const;
const receivers = {} as Record<(typeof RECEIVER_IDS)[number], Receiver>;

function produce(destination: string, messageId: string) {
  const headers = { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) };
  return kafka.produce(`${prefix}deliveries.${destination}`, [{ key: 'u-1', value: trackBody(messageId), headers }]);
}

const readTopic = (suffix: string, atLeast = 1): Promise<ReadMessage[]> => kafka.readAll(`${prefix}deliveries.${suffix}`, { atLeast, timeoutMs: 30_000 });

async function count(metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

const gaps = (receiver: Receiver) => receiver.requests.slice(1).map((r, i) => r.at - receiver.requests[i]!.at);

beforeAll(async () => {
  kafka = await createTestKafka();
  for (const id of RECEIVER_IDS) receivers[id] = await startReceiver();
  prefix = randomPrefix();
  const hook = (id: string, receiver: Receiver, retry?: Record<string, unknown>) => ({
    id,
    type: 'webhooks',
    settings: { webhooks: [{ url: receiver.url() }], ...(retry === undefined ? {} : { retry }) },
  });
  config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('retry-policy'), topicPrefix: prefix, partitions: 1 },
      // NOTE: the circuit breaker is kept out of the way (no circuit opens on a handful of failures): this file is about the schedule.
      delivery: { timeout: '1s', retryTiers: ['300ms', '700ms'], maxRetryWindow: '60s', circuitBreaker: { minAttempts: 1000, unanswered: 1000 } },
      sources: [{ id: 'web' }],
      destinations: [
        hook('own', receivers.own, { tiers: ['100ms', '250ms'], maxWindow: `${OWN_WINDOW_MS / 1000}s` }),
        hook('plain', receivers.plain),
        hook('gone', receivers.gone, { stopOn: [410] }),
        hook('gone-default', receivers.goneDefault),
        hook('capped', receivers.capped, { tiers: ['200ms', '500ms'] }),
      ],
    },
    'deliver-retry-policy.test.yaml',
  );
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService(
    { config: store, kafka: createKafka(config.kafka, silentLogger()), metrics, logger: logs.logger },
    { sampleIntervalMs: 500 },
  );
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the delivery consumer to join' });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await kafka?.close();
});

describe('a retry policy per destination', () => {
  it("creates each destination's own tier topics, and only those", async () => {
    const topics = new Set(await kafka.admin.listTopics());
    const retryTopics = [...topics].filter((t) => t.startsWith(prefix) && t.includes('.retry.')).sort();
    expect(retryTopics).toEqual(
      [
        'capped.retry.200ms',
        'capped.retry.500ms',
        'gone-default.retry.300ms',
        'gone-default.retry.700ms',
        'gone.retry.300ms',
        'gone.retry.700ms',
        'own.retry.100ms',
        'own.retry.250ms',
        'plain.retry.300ms',
        'plain.retry.700ms',
      ].map((t) => `${prefix}deliveries.${t}`).sort(),
    );
  });

  it('own tiers and window: retries on its own tier topics, dead-lettered at its own window while another destination keeps the defaults', async () => {
    receivers.own.reply({ status: 503 });
    receivers.plain.replyWith((_req, i) => ({ status: i < 2 ? 503 : 200 }));
    await Promise.all([produce('own', 'o-1'), produce('plain', 'p-1')]);

    // `own`: 100ms, then 250ms repeating, until 2 s after the first attempt: then its dead letter.
    const [dead] = await kafka.readAll(`${prefix}deliveries.own.dlq`, { atLeast: 1, timeoutMs: 30_000 });
    const first = Date.parse(dead!.headers['first-attempt-at']!);
    const last = Date.parse(dead!.headers['last-attempt-at']!);
    expect(last - first).toBeGreaterThanOrEqual(OWN_WINDOW_MS);
    // Far from the defaults' 60 s window.
    expect(last - first).toBeLessThan(OWN_WINDOW_MS + 5_000);
    expect(dead!.headers.error).toBe(`${printedUrl(receivers.own.url())}: 503 Service Unavailable`);
    const requests = receivers.own.requests.length;
    expect(dead!.headers.attempt).toBe(String(requests));
    // 2 s at 100 ms then 250 ms: several attempts (the defaults' 300 ms and 700 ms would allow fewer).
    expect(requests).toBeGreaterThanOrEqual(5);
    const ownGaps = gaps(receivers.own);
    expect(ownGaps[0]).toBeGreaterThanOrEqual(100);
    expect(ownGaps[1]).toBeGreaterThanOrEqual(250);
    const tier1 = await readTopic('own.retry.100ms');
    const tier2 = await readTopic('own.retry.250ms', requests - 2);
    expect(tier1).toHaveLength(1);
    expect(tier1[0]!.headers).toMatchObject({ attempt: '1', 'message-id': 'o-1' });
    expect(tier2.map((m) => m.headers.attempt)).toEqual(Array.from({ length: requests - 2 }, (_, i) => String(i + 2)));
    expect(await count('deliveries', { destination: 'own', result: 'retry_scheduled' })).toBe(requests - 1);
    expect(await count('deliveries', { destination: 'own', result: 'dead_lettered' })).toBe(1);

    // `plain`: the defaults, 300 ms then 700 ms, on the default tier topics.
    await waitFor(async () => (await count('deliveries', { destination: 'plain', result: 'delivered' })) === 1, { what: 'plain delivered on its third attempt' });
    const plainGaps = gaps(receivers.plain);
    expect(plainGaps).toHaveLength(2);
    expect(plainGaps[0]).toBeGreaterThanOrEqual(300);
    expect(plainGaps[1]).toBeGreaterThanOrEqual(700);
    const [plain1] = await readTopic('plain.retry.300ms');
    const [plain2] = await readTopic('plain.retry.700ms');
    expect(plain1!.headers).toMatchObject({ attempt: '1', 'message-id': 'p-1' });
    expect(plain2!.headers).toMatchObject({ attempt: '2', 'message-id': 'p-1' });
  });

  it('stopOn: [410] dead-letters a 410 at once; without it a 410 is retried (Segment rules)', async () => {
    receivers.gone.reply({ status: 410, headers: { 'retry-after': '1' } });
    receivers.goneDefault.replyWith((_req, i) => ({ status: i === 0 ? 410 : 200 }));
    await Promise.all([produce('gone', 'g-1'), produce('gone-default', 'gd-1')]);

    const [dead] = await readTopic('gone.dlq');
    expect(dead!.text).toBe(trackBody('g-1'));
    expect(dead!.headers).toMatchObject({ attempt: '1', 'message-id': 'g-1' });
    expect(dead!.headers.error).toBe(`${printedUrl(receivers.gone.url())}: 410 Gone (listed in settings.retry.stopOn: not retried)`);
    expect(receivers.gone.requests).toHaveLength(1);
    expect(await count('deliveries', { destination: 'gone', result: 'dead_lettered' })).toBe(1);
    expect(await count('deliveries', { destination: 'gone', result: 'retry_scheduled' })).toBe(0);
    expect(await kafka.readAll(`${prefix}deliveries.gone.retry.300ms`)).toHaveLength(0);

    await waitFor(async () => (await count('deliveries', { destination: 'gone-default', result: 'delivered' })) === 1, { what: 'gone-default delivered on its second attempt' });
    expect(receivers.goneDefault.requests).toHaveLength(2);
    const [retried] = await readTopic('gone-default.retry.300ms');
    expect(retried!.headers.error).toBe(`${printedUrl(receivers.goneDefault.url())}: 410 Gone`);
  });

  it("a reload that changes a destination's tiers creates its new tier topics and retries there", async () => {
    const next = structuredClone(config);
    next.destinations[0]!.settings.retry = { tiers: [{ name: '150ms', ms: 150 }], maxWindowMs: 10_000 };
    receivers.own.requests.length = 0;
    receivers.own.replyWith((_req, i) => ({ status: i === 0 ? 503 : 200 }));
    const applied = () => logs.count('delivering for the configured destinations');
    const appliedBefore = applied();
    reload(next);
    // NOTE: the new tier topic shows before the reload is applied: an event the old lane
    // fetched in between is retried on the old tiers. The log line comes once the new lane runs.
    await waitFor(() => applied() > appliedBefore, { timeoutMs: 60_000, what: 'the reload to be applied (the new lane started)' });
    expect(await kafka.admin.listTopics()).toContain(`${prefix}deliveries.own.retry.150ms`);
    await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the delivery consumer to join again' });
    await produce('own', 'o-2');
    await waitFor(async () => (await count('deliveries', { destination: 'own', result: 'delivered' })) === 1, { what: 'o-2 delivered on its second attempt' });
    const [retry] = await readTopic('own.retry.150ms');
    expect(retry!.headers).toMatchObject({ attempt: '1', 'message-id': 'o-2' });
    // The old tiers got nothing new: o-1's records only.
    expect((await kafka.readAll(`${prefix}deliveries.own.retry.100ms`)).map((m) => m.headers['message-id'])).toEqual(['o-1']);
  });

  it("honours a Retry-After up to the policy's largest tier", async () => {
    // Asks for 30 s; `capped`'s largest tier is 500 ms, so the next try comes after 500 ms.
    receivers.capped.replyWith((_req, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '30' } } : { status: 200 }));
    await produce('capped', 'c-1');
    await waitFor(async () => (await count('deliveries', { destination: 'capped', result: 'delivered' })) === 1, { what: 'capped delivered on its second attempt' });
    const [gap] = gaps(receivers.capped);
    expect(gap).toBeGreaterThanOrEqual(500);
    expect(gap).toBeLessThan(10_000);
    const [retry] = await readTopic('capped.retry.500ms');
    const due = Number(retry!.headers['due-at']);
    expect(due - Date.parse(retry!.headers['first-attempt-at']!)).toBeLessThan(2_000);
    expect(await kafka.readAll(`${prefix}deliveries.capped.retry.200ms`)).toHaveLength(0);
  });
});
