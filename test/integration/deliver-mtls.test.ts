// `settings.tls` against a real broker and an HTTPS receiver on 127.0.0.1 that requires
// a client certificate from its own CA (docs/webhooks.md#tls); the certificates are
// made here with openssl. Without the client certificate the receiver refuses the
// handshake and gets no request; with it, every event is delivered.
import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
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
import { createTestPki } from '../support/test-pki.js';
import type { TestPki } from '../support/test-pki.js';
import { waitFor } from '../support/wait-for.js';

const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"E","properties":{}}`;

let pki: TestPki;
let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
let server: Server;
let origin: string;
/** Each request that got through: the client certificate's subject CN and the path. */
const requests: { cn: string | undefined; path: string | undefined; body: string }[] = [];
let handshakesRefused = 0;
let handshakesCompleted = 0;

async function count(metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

function produce(destination: string, ids: readonly string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({ key: id, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

beforeAll(async () => {
  pki = createTestPki();
  kafka = await createTestKafka();
  server = createServer({ key: pki.read(pki.server.key), cert: pki.read(pki.server.cert), ca: pki.read(pki.ca.cert), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      requests.push({ cn: typeof peer.subject?.CN === 'string' ? peer.subject.CN : undefined, path: req.url, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end();
    });
  });
  server.on('tlsClientError', () => {
    handshakesRefused += 1;
  });
  server.on('secureConnection', () => {
    handshakesCompleted += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  prefix = randomPrefix();
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('mtls'), topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '2s', retryTiers: ['30s'], maxRetryWindow: '5m', concurrencyPerDestination: 8 },
    sources: [{ id: 'web' }],
    destinations: [
      { id: 'mtls', type: 'webhooks', settings: { webhooks: [{ url: `${origin}/with` }], tls: { clientCert: pki.client.cert, clientKey: pki.client.key, ca: pki.ca.cert, minVersion: 'TLSv1.2' } } },
      { id: 'no-cert', type: 'webhooks', settings: { webhooks: [{ url: `${origin}/without` }], tls: { ca: pki.ca.cert } } },
      { id: 'stranger', type: 'webhooks', settings: { webhooks: [{ url: `${origin}/stranger` }], tls: { clientCert: pki.stranger.cert, clientKey: pki.stranger.key, ca: pki.ca.cert } } },
    ],
  };
  const config: Config = testConfig(doc, 'deliver-mtls.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
});

afterAll(async () => {
  await service?.stop();
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  await kafka?.close();
  pki?.remove();
});

describe('settings.tls', () => {
  it('with the client certificate its CA signed, the receiver accepts every event', async () => {
    await produce('mtls', ['m-1', 'm-2', 'm-3']);
    await waitFor(async () => (await count('deliveries', { destination: 'mtls', result: 'delivered' })) === 3, { what: 'the events delivered' });
    const accepted = requests.filter((r) => r.path === '/with');
    expect(accepted.map((r) => r.cn)).toEqual(['switchyard-client', 'switchyard-client', 'switchyard-client']);
    expect(accepted.map((r) => r.body).sort()).toEqual(['m-1', 'm-2', 'm-3'].map(body));
  });

  it('connections are kept alive: 80 more events cost no more handshakes than requests run at once (8)', async () => {
    const before = handshakesCompleted;
    const ids = Array.from({ length: 80 }, (_, i) => `k-${i}`);
    await produce('mtls', ids);
    await waitFor(async () => (await count('deliveries', { destination: 'mtls', result: 'delivered' })) === 3 + ids.length, { what: 'the events delivered' });
    expect(handshakesCompleted - before).toBeLessThanOrEqual(8);
  });

  it('without a client certificate, or with one the CA did not sign, the handshake is refused: no request, the event goes to its retry tier', async () => {
    const refusedBefore = handshakesRefused;
    await produce('no-cert', ['n-1']);
    await produce('stranger', ['s-1']);
    for (const destination of ['no-cert', 'stranger']) {
      await waitFor(async () => (await count('deliveries', { destination, result: 'retry_scheduled' })) === 1, { what: `the event of ${destination} scheduled for a retry` });
      expect(await count('deliveries', { destination, result: 'delivered' })).toBe(0);
      const failed = (await count('deliveryAttempts', { destination, outcome: 'tls' })) + (await count('deliveryAttempts', { destination, outcome: 'network' }));
      expect(failed).toBe(1);
    }
    expect(requests.filter((r) => r.path !== '/with')).toEqual([]);
    expect(handshakesRefused).toBeGreaterThan(refusedBefore);
  });

  it('reports when the client certificate expires, as Unix time in seconds', async () => {
    const { values } = await metrics.tlsClientCertExpiry.get();
    const expected = Math.floor(Date.parse(new X509Certificate(pki.read(pki.client.cert)).validTo) / 1000);
    expect(values.find((v) => v.labels.destination === 'mtls')?.value).toBe(expected);
    expect(values.find((v) => v.labels.destination === 'no-cert')).toBeUndefined();
    expect(expected * 1000 - Date.now()).toBeGreaterThan(0);
    expect(expected * 1000 - Date.now()).toBeLessThanOrEqual(86_400_000 + 60_000);
  });
});
