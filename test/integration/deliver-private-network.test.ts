// `delivery.blockPrivateNetworks` against a real broker and a real local receiver that
// counts every connection and request: with the guard on, a URL to 127.0.0.1 (or to a
// name that resolves to it) gets nothing and the event is dead-lettered with the reason;
// with the guard off, the same receiver gets the event as it always did.
//
// NOTE: only loopback addresses are used: a guard that failed would otherwise send
// traffic to a network this test does not own.
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
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
import { waitFor } from '../support/wait-for.js';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}`;

/** A receiver on 127.0.0.1 that counts what reaches it: TCP connections and HTTP requests. */
interface CountingReceiver {
  port: number;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

async function startCountingReceiver(): Promise<CountingReceiver> {
  const counts = { connections: 0, requests: 0 };
  const server: Server = createServer((req, res) => {
    counts.requests += 1;
    req.resume();
    req.on('end', () => res.writeHead(200).end());
  });
  server.on('connection', () => {
    counts.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return counts.connections;
    },
    get requests() {
      return counts.requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: CountingReceiver;

interface Deliverer {
  prefix: string;
  metrics: Metrics;
  service: Service;
}
const deliverers: Deliverer[] = [];

async function startDeliverer(blockPrivateNetworks: boolean, destinations: { id: string; urls: string[] }[]): Promise<Deliverer> {
  const prefix = randomPrefix();
  const config: Config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('guard'), topicPrefix: prefix, partitions: 1 },
      delivery: { timeout: '2s', retryTiers: ['200ms'], maxRetryWindow: '30s', blockPrivateNetworks },
      sources: [{ id: 'web' }],
      destinations: destinations.map(({ id, urls }) => ({ id, type: 'webhooks', settings: { webhooks: urls.map((url) => ({ url })) } })),
    },
    'deliver-private-network.test.yaml',
  );
  const metrics = createMetrics({ defaultMetrics: false });
  const service = createDelivererService(
    { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() },
    { sampleIntervalMs: 60_000 },
  );
  const deliverer = { prefix, metrics, service };
  deliverers.push(deliverer);
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'every destination consumer to join' });
  return deliverer;
}

function produce(deliverer: Deliverer, destination: string, id: string) {
  return kafka.produce(`${deliverer.prefix}deliveries.${destination}`, [
    { key: 'u-1', value: trackBody(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) } },
  ]);
}

async function count(deliverer: Deliverer, metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await deliverer.metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

let guarded: Deliverer;
let open: Deliverer;
const url = (host: string, path: string) => `http://${host}:${receiver.port}${path}`;

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startCountingReceiver();
  [guarded, open] = await Promise.all([
    startDeliverer(true, [
      { id: 'literal', urls: [url('127.0.0.1', '/literal')] },
      { id: 'named', urls: [url('localhost', '/named')] },
      { id: 'both', urls: [url('127.0.0.1', '/both-1'), url('localhost', '/both-2')] },
    ]),
    startDeliverer(false, [{ id: 'open', urls: [url('127.0.0.1', '/open')] }]),
  ]);
});

afterAll(async () => {
  await Promise.allSettled(deliverers.map((d) => d.service.stop()));
  await receiver?.close();
  await kafka?.close();
});

describe('delivery.blockPrivateNetworks: true', () => {
  it.each([
    ['literal', /^webhooks\[0\] http:\/\/127\.0\.0\.1:\d+: not sent: 127\.0\.0\.1, a loopback address; delivery\.blockPrivateNetworks refuses it$/],
    ['named', /^webhooks\[0\] http:\/\/localhost:\d+: not sent: localhost resolves to (127\.0\.0\.1|::1), a loopback address; delivery\.blockPrivateNetworks refuses it$/],
    ['both', /^webhooks\[0\] http:\/\/127\.0\.0\.1:\d+: not sent: 127\.0\.0\.1, .+; webhooks\[1\] http:\/\/localhost:\d+: not sent: localhost resolves to .+$/],
  ])('%s: the receiver gets no connection and no request; the event is dead-lettered at once with the reason', async (id, reason) => {
    await produce(guarded, id, `${id}-1`);
    const [dead] = await kafka.readAll(`${guarded.prefix}deliveries.${id}.dlq`, { atLeast: 1, timeoutMs: 30_000 });
    expect(dead!.headers.error).toMatch(reason);
    expect(dead!.headers.attempt).toBe('1');
    expect(dead!.text).toBe(trackBody(`${id}-1`));
    const urls = id === 'both' ? 2 : 1;
    expect(await count(guarded, 'deliveryAttempts', { destination: id, outcome: 'blocked' })).toBe(urls);
    expect(await count(guarded, 'deliveries', { destination: id, result: 'retry_scheduled' })).toBe(0);
    expect(receiver.connections).toBe(0);
    expect(receiver.requests).toBe(0);
  });
});

describe('delivery.blockPrivateNetworks: false (the default)', () => {
  it('delivers to the same loopback receiver as before', async () => {
    await produce(open, 'open', 'o-1');
    await waitFor(async () => (await count(open, 'deliveries', { destination: 'open', result: 'delivered' })) === 1, { what: 'delivered' });
    expect(receiver.requests).toBe(1);
    expect(await count(open, 'deliveryAttempts', { destination: 'open', outcome: 'blocked' })).toBe(0);
  });
});
