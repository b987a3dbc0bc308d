// The per-URL circuit breaker and the per-destination rate limit (docs/webhooks.md#delivery-and-retries), against a
// real broker and real local HTTP receivers that count what they get.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

/** Shorter than DESIGN's 30 s so the test can wait for a probe; long enough for a few events to pass meanwhile. */
const COOL_DOWN_MS = 4_000;
const RATE = 20;

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let config: Config;
let metrics: Metrics;
let service: Service;
const HOOK_IDS = ['failing', 'healthy', 'lonely', 'paced', 'free'] as const;
const receivers = {} as Record<(typeof HOOK_IDS)[number], Receiver>;

function produce(destination: string, ids: string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({
      key: id,
      value: trackBody(id),
      headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) },
    })),
  );
}

async function count(metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

async function circuitState(destination: string, urlIndex: number): Promise<number | undefined> {
  const { values } = await metrics.circuitState.get();
  return values.find((v) => v.labels.destination === destination && v.labels.url_index === String(urlIndex))?.value;
}

const delivered = (destination: string) => count('deliveries', { destination, result: 'delivered' });

beforeAll(async () => {
  kafka = await createTestKafka();
  for (const id of HOOK_IDS) receivers[id] = await startReceiver();
  prefix = randomPrefix();
  const hook = (id: string, urls: string[], extra: Record<string, unknown> = {}) => ({ id, type: 'webhooks', settings: { webhooks: urls.map((url) => ({ url })), ...extra } });
  config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('circuit'), topicPrefix: prefix, partitions: 2 },
      // Five attempts in the window (all failed) open a circuit: these tests send a few events one at a time.
      delivery: { timeout: '2s', retryTiers: ['200ms', '1s'], maxRetryWindow: '60s', concurrencyPerDestination: 16, circuitBreaker: { minAttempts: 5 } },
      sources: [{ id: 'web' }],
      destinations: [
        // URL 0 fails, URL 1 answers: the token in URL 0 must never reach a label or a log.
        hook('pair', [receivers.failing.url('/hook?token=do-not-print'), receivers.healthy.url()]),
        hook('lonely', [receivers.lonely.url()]),
        hook('paced', [receivers.paced.url()], { rateLimit: { requestsPerSecond: RATE, burst: 1 } }),
        hook('free', [receivers.free.url()]),
      ],
    },
    'deliver-circuit-rate.test.yaml',
  );
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService(
    { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() },
    { sampleIntervalMs: 60_000, circuitBreaker: { coolDownMs: COOL_DOWN_MS } },
  );
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'every destination consumer to join' });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await kafka?.close();
});

describe('circuit breaker per URL', () => {
  it('a URL whose attempts failed (5, the configured minimum, of 5) gets no requests while the other URL keeps delivering, then a probe after the cool-down', async () => {
    const { failing, healthy } = receivers;
    let recovered = false;
    failing.replyWith(() => ({ status: recovered ? 200 : 500 }));
    expect(await circuitState('pair', 0)).toBe(0);

    // One event at a time, so that each failure is counted before the next event starts.
    for (let i = 1; i <= 5; i++) {
      await produce('pair', [`p-${i}`]);
      await waitFor(async () => (await delivered('pair')) === i, { what: `event p-${i} delivered` });
    }
    expect(failing.requests).toHaveLength(5);
    expect(await circuitState('pair', 0)).toBe(1);
    expect(await circuitState('pair', 1)).toBe(0);

    // Open: these go to the healthy URL only.
    await produce('pair', ['p-6', 'p-7']);
    await waitFor(async () => (await delivered('pair')) === 7, { what: 'p-6 and p-7 delivered' });
    expect(failing.requests).toHaveLength(5);
    expect(healthy.requests.map((r) => r.text).sort()).toEqual(['p-1', 'p-2', 'p-3', 'p-4', 'p-5', 'p-6', 'p-7'].map(trackBody).sort());
    expect(await count('deliveryAttempts', { destination: 'pair', outcome: 'circuit_open' })).toBe(2);
    expect(await count('deliveryAttempts', { destination: 'pair', outcome: '5xx' })).toBe(5);

    // After the cool-down the next event probes the URL; it answers now, so the circuit closes.
    recovered = true;
    const openedAt = failing.requests[4]!.at;
    await waitFor(() => Date.now() >= openedAt + COOL_DOWN_MS + 200, { timeoutMs: COOL_DOWN_MS + 5_000, what: 'the cool-down to pass' });
    await produce('pair', ['p-8']);
    await waitFor(() => failing.requests.length === 6, { what: 'the probe' });
    expect(failing.requests[5]!.text).toBe(trackBody('p-8'));
    expect(failing.requests[5]!.at - openedAt).toBeGreaterThanOrEqual(COOL_DOWN_MS);
    await waitFor(async () => (await circuitState('pair', 0)) === 0, { what: 'the circuit to close' });

    // Closed again: both URLs get the next event.
    await produce('pair', ['p-9']);
    await waitFor(() => failing.requests.length === 7 && healthy.requests.some((r) => r.text === trackBody('p-9')), { what: 'p-9 at both URLs' });
    expect(await count('deliveries', { destination: 'pair', result: 'dead_lettered' })).toBe(0);
    expect(await metrics.registry.metrics()).not.toContain('do-not-print');
  });

  it('with its only URL open an event waits in the lane (no attempt, no retry-tier record) and is delivered after the probe, not dead-lettered', async () => {
    const { lonely } = receivers;
    lonely.replyWith((_req, i) => ({ status: i < 5 ? 503 : 200 }));
    await produce('lonely', ['l-1']);
    await waitFor(async () => (await delivered('lonely')) === 1, { timeoutMs: 45_000, what: 'l-1 delivered after the probe' });
    // 5 failures open the circuit; the 6th request is the probe, at least a cool-down later.
    expect(lonely.requests).toHaveLength(6);
    expect(lonely.requests[5]!.at - lonely.requests[4]!.at).toBeGreaterThanOrEqual(COOL_DOWN_MS);
    // Waiting wrote nothing: a retry-tier record per failed request, none for the cool-down.
    expect(await count('deliveryAttempts', { destination: 'lonely', outcome: 'circuit_open' })).toBe(0);
    expect(await count('deliveries', { destination: 'lonely', result: 'retry_scheduled' })).toBe(5);
    // Read committed: the moves are transactions, whose markers take offsets too.
    const tierRecords = await Promise.all(['200ms', '1s'].map((tier) => kafka.readAll(`${prefix}deliveries.lonely.retry.${tier}`)));
    expect(tierRecords.reduce((sum, list) => sum + list.length, 0)).toBe(5);
    expect(await count('deliveries', { destination: 'lonely', result: 'dead_lettered' })).toBe(0);
  });
});

describe('rate limit per destination', () => {
  it(`rateLimit ${RATE}/s: the receiver gets ${RATE}/s (±10 %) over 10 s while another destination runs at full speed`, async () => {
    const { paced, free } = receivers;
    const pacedIds = Array.from({ length: 320 }, (_, i) => `r-${i}`);
    const freeIds = Array.from({ length: 2_000 }, (_, i) => `f-${i}`);
    await Promise.all([produce('paced', pacedIds), produce('free', freeIds)]);

    // The other destination is not held up by the paced one's waits: all of it arrives
    // while the paced one has not even got through 12 seconds' worth.
    await waitFor(async () => (await delivered('free')) === freeIds.length, { timeoutMs: 60_000, what: 'every event of the unpaced destination' });
    expect(paced.requests.length).toBeLessThan(RATE * 12);

    await waitFor(() => paced.requests.length > 0 && paced.requests.at(-1)!.at >= paced.requests[0]!.at + 11_500, { timeoutMs: 60_000, what: '11.5 s of paced requests' });
    // From 1 s after the first request (past the start-up) over 10 s.
    const from = paced.requests[0]!.at + 1_000;
    const inWindow = paced.requests.filter((r) => r.at >= from && r.at < from + 10_000).length;
    expect(inWindow).toBeGreaterThanOrEqual(RATE * 10 * 0.9);
    expect(inWindow).toBeLessThanOrEqual(RATE * 10 * 1.1);
    expect(free.requests.length).toBe(freeIds.length);
  });
});
