// The circuit breaker with its default thresholds (docs/webhooks.md#circuit-breaker), on a
// real broker and real local receivers, each in a process of its own (as a receiver is: in
// the test's process it would share the deliverer's event loop): a receiver that mostly answers keeps its circuit
// closed; a dead receiver's circuit opens and, while it is open, nothing is attempted or
// written; a config reload under load stalls nothing, opens no circuit and duplicates nothing.
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { captureLogs } from '../support/captured-logs.js';
import { mutableStore, testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startProcessReceiver } from '../support/process-receiver.js';
import { waitFor } from '../support/wait-for.js';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let service: Service | undefined;
let metrics: Metrics;
const stopLater: (() => Promise<void>)[] = [];
let watch: NodeJS.Timeout | undefined;

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterEach(async () => {
  clearInterval(watch);
  await service?.stop();
  service = undefined;
  await Promise.all(stopLater.splice(0).map((stop) => stop()));
});

afterAll(async () => {
  await kafka?.close();
});

async function produce(prefix: string, destination: string, ids: string[]): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await kafka.produce(
      `${prefix}deliveries.${destination}`,
      ids.slice(i, i + 500).map((id) => ({
        key: id,
        value: trackBody(id),
        headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) },
      })),
    );
  }
}

async function count(metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

/** The highest `switchyard_circuit_state` seen for each destination, sampled every 25 ms from now on. */
function watchCircuits(): Map<string, number> {
  const highest = new Map<string, number>();
  watch = setInterval(() => {
    void metrics.circuitState.get().then(({ values }) => {
      for (const v of values) highest.set(String(v.labels.destination), Math.max(highest.get(String(v.labels.destination)) ?? 0, v.value));
    });
  }, 25);
  return highest;
}

async function start(store: ConfigStore, logger = silentLogger()): Promise<void> {
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: store, kafka: createKafka(store.current().kafka, silentLogger()), metrics, logger }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service!.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join its group' });
}

/** Records in the destination's retry tiers, read committed (the moves are transactions: their markers take offsets too). */
async function tierRecords(prefix: string, destination: string, tiers: string[]): Promise<number> {
  const records = await Promise.all(tiers.map((tier) => kafka.readAll(`${prefix}deliveries.${destination}.retry.${tier}`)));
  return records.reduce((sum, list) => sum + list.length, 0);
}

describe('circuit breaker, default thresholds', () => {
  it('a receiver answering 80 % at once (15 % 503, 5 % too slow) under 64 in flight never opens its circuit and gets every event', async () => {
    const flaky = await startProcessReceiver({ ok: 0.8, unavailable: 0.15, slowMs: 1_500 });
    stopLater.push(() => flaky.close());
    const prefix = randomPrefix();
    const config = testConfig(
      {
        kafka: { brokers: testBrokers(), clientId: randomName('circuit-flaky'), topicPrefix: prefix, partitions: 4 },
        delivery: { timeout: '1s', retryTiers: ['100ms'], maxRetryWindow: '10m', concurrencyPerDestination: 64 },
        sources: [{ id: 'web' }],
        destinations: [{ id: 'flaky', type: 'webhooks', settings: { webhooks: [{ url: flaky.url() }] } }],
      },
      'deliver-circuit-wait.test.yaml',
    );
    await start(mutableStore(config));
    const highest = watchCircuits();
    const ids = Array.from({ length: 3_000 }, (_, i) => `f-${i}`);
    await produce(prefix, 'flaky', ids);
    await waitFor(async () => (await count('deliveries', { destination: 'flaky', result: 'delivered' })) === ids.length, { timeoutMs: 90_000, what: 'every event delivered' });

    const { accepted } = await flaky.counts();
    expect(Object.keys(accepted).length).toBe(ids.length);
    expect(highest.get('flaky') ?? 0).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'flaky', outcome: 'circuit_open' })).toBe(0);
    const failed = (await count('deliveryAttempts', { destination: 'flaky', outcome: '5xx' })) + (await count('deliveryAttempts', { destination: 'flaky', outcome: 'timeout' }));
    expect(failed).toBeGreaterThan(ids.length / 10); // the receiver did fail about one in five
    expect(await count('deliveries', { destination: 'flaky', result: 'dead_lettered' })).toBe(0);
    // NOTE: the wait above allows 90 s: 3,000 events with one in five failing take about a minute on a loaded machine.
  }, 120_000);

  it('a dead receiver\'s circuit opens within a few attempts, and while it is open nothing is attempted and no retry-tier record is written', async () => {
    // A port nothing listens on: connections are refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const prefix = randomPrefix();
    const tiers = ['10s', '1m'];
    const config = testConfig(
      {
        kafka: { brokers: testBrokers(), clientId: randomName('circuit-dead'), topicPrefix: prefix, partitions: 2 },
        delivery: { timeout: '2s', retryTiers: tiers, maxRetryWindow: '4h', concurrencyPerDestination: 64 },
        sources: [{ id: 'web' }],
        destinations: [{ id: 'dead', type: 'webhooks', settings: { webhooks: [{ url: `http://127.0.0.1:${port}/hook` }] } }],
      },
      'deliver-circuit-wait.test.yaml',
    );
    await start(mutableStore(config));
    const highest = watchCircuits();
    await produce(prefix, 'dead', Array.from({ length: 300 }, (_, i) => `d-${i}`));
    await waitFor(() => (highest.get('dead') ?? 0) === 1, { timeoutMs: 30_000, what: 'the circuit to open' });
    // Let the requests sent before it opened settle, then watch for 3 s (the cool-down is 30 s).
    await waitFor(async () => (await count('deliveries', { destination: 'dead', result: 'retry_scheduled' })) === (await count('deliveryAttempts', { destination: 'dead', outcome: 'network' })), {
      what: 'every failed attempt written to its retry tier',
    });
    const attempts = await count('deliveryAttempts', { destination: 'dead', outcome: 'network' });
    const written = await tierRecords(prefix, 'dead', tiers);
    expect(written).toBe(attempts);
    expect(attempts).toBeLessThanOrEqual(64 + 5);
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await count('deliveryAttempts', { destination: 'dead', outcome: 'network' })).toBe(attempts);
    expect(await count('deliveryAttempts', { destination: 'dead', outcome: 'circuit_open' })).toBe(0);
    expect(await tierRecords(prefix, 'dead', tiers)).toBe(written);
    expect(await count('deliveries', { destination: 'dead', result: 'dead_lettered' })).toBe(0);
  });

  it('a reload under load (a destination added) opens no circuit, times nothing out and delivers every event once', async () => {
    // NOTE: every answer after 200 ms: 128 in flight deliver about 640 events a second, so
    // the 8,000 take over ten seconds and the reload's rejoin lands while they go on
    // (checked below: the new destination's first event arrives before the last of them).
    const healthy = await startProcessReceiver({ ok: 0, unavailable: 0, slowMs: 200 });
    stopLater.push(() => healthy.close());
    const prefix = randomPrefix();
    const clientId = randomName('circuit-reload-load');
    const shape = (ids: string[]) => ({
      kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 6 },
      delivery: { timeout: '2s', retryTiers: ['1s'], maxRetryWindow: '10m', concurrencyPerDestination: 64 },
      sources: [{ id: 'web', destinations: ids }],
      destinations: ids.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: healthy.url(`/${id}`) }] } })),
    });
    const store = mutableStore(testConfig(shape(['first', 'second']), 'deliver-circuit-wait.test.yaml'));
    const logs = captureLogs();
    await start(store, logs.logger);
    const highest = watchCircuits();
    const ids = Array.from({ length: 4_000 }, (_, i) => `r-${i}`);
    await Promise.all(['first', 'second'].map((d) => produce(prefix, d, ids)));
    await waitFor(async () => (await count('deliveries', { result: 'delivered' })) >= 1_000, { timeoutMs: 60_000, what: 'deliveries under way' });
    const applied = () => logs.count('delivering for the configured destinations');
    const appliedBefore = applied();
    store.set(testConfig(shape(['first', 'second', 'third']), 'deliver-circuit-wait.test.yaml'));
    await waitFor(() => applied() > appliedBefore, { timeoutMs: 60_000, what: "the reload to be applied (the third destination's lane started)" });
    // The third destination's partitions come with the rejoin the reload started.
    await produce(prefix, 'third', ['t-1']);
    await waitFor(async () => (await count('deliveries', { destination: 'third', result: 'delivered' })) === 1, { timeoutMs: 60_000, what: 'the third destination to get its event after the rejoin' });
    const deliveredAtRejoin = await count('deliveries', { result: 'delivered', destination: 'first' }) + (await count('deliveries', { result: 'delivered', destination: 'second' }));
    expect(deliveredAtRejoin, 'events of first and second delivered once the rejoin was done (the reload must land under load)').toBeLessThan(2 * ids.length);
    await waitFor(async () => (await count('deliveries', { result: 'delivered' })) === 2 * ids.length + 1, { timeoutMs: 90_000, what: 'every event delivered' });

    const counts = (await healthy.counts()).requests;
    for (const d of ['first', 'second']) {
      const got = Object.entries(counts).filter(([key]) => key.startsWith(`/${d} `));
      expect(got.length, `distinct events at ${d}`).toBe(ids.length);
      expect(got.filter(([, n]) => n !== 1), `events ${d} got more than once`).toEqual([]);
      expect(highest.get(d) ?? 0, `highest circuit state of ${d}`).toBe(0);
    }
    expect(await count('deliveryAttempts', { outcome: 'timeout' })).toBe(0);
    expect(await count('deliveryAttempts', { outcome: 'circuit_open' })).toBe(0);
  });
});
