// Egress proxies (docs/webhooks.md#egress-proxy) against a real broker, an HTTPS
// receiver and a CONNECT proxy, both made here on 127.0.0.1: the proxy sees every
// request of a proxied destination, `noProxy` bypasses it, and with
// blockPrivateNetworks the receiver's address is still judged before the proxy is asked.
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { connectionProfile } from '../../src/delivery/destination-settings.js';
import { createHttpSender, webhookTarget } from '../../src/delivery/http-sender.js';
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

/** A CONNECT proxy: each tunnel's target, and the local port of its socket to the target (what the receiver sees as the client's port). */
interface ConnectProxy {
  url: string;
  targets: string[];
  tunnelPorts: Set<number>;
  close(): Promise<void>;
}

async function startConnectProxy(): Promise<ConnectProxy> {
  const targets: string[] = [];
  const tunnelPorts = new Set<number>();
  const sockets = new Set<Socket>();
  const server: HttpServer = createHttpServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    const target = req.url ?? '';
    targets.push(target);
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    const upstream = connect(port, host, () => {
      tunnelPorts.add(upstream.localPort!);
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => socket.destroy());
      socket.on('close', () => sockets.delete(socket));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    targets,
    tunnelPorts,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let pki: TestPki;
let proxy: ConnectProxy;
let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
let receiver: Server;
let origin: string;
const requests: { path: string | undefined; remotePort: number | undefined }[] = [];

async function delivered(destination: string): Promise<number> {
  const { values } = await metrics.deliveries.get();
  return values.filter((v) => v.labels.destination === destination && v.labels.result === 'delivered').reduce((sum, v) => sum + v.value, 0);
}

function produce(destination: string, ids: readonly string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({ key: id, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

beforeAll(async () => {
  pki = createTestPki();
  proxy = await startConnectProxy();
  kafka = await createTestKafka();
  receiver = createServer({ key: pki.read(pki.server.key), cert: pki.read(pki.server.cert) }, (req, res) => {
    req.resume();
    req.on('end', () => {
      requests.push({ path: req.url, remotePort: req.socket.remotePort });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  origin = `https://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  prefix = randomPrefix();
  const tls = { ca: pki.ca.cert };
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('proxy'), topicPrefix: prefix, partitions: 2 },
    delivery: { timeout: '2s', retryTiers: ['30s'], maxRetryWindow: '5m', concurrencyPerDestination: 16, proxy: { url: proxy.url } },
    sources: [{ id: 'web' }],
    destinations: [
      // delivery.proxy applies.
      { id: 'proxied', type: 'webhooks', settings: { webhooks: [{ url: `${origin}/proxied` }], tls } },
      // Its own proxy settings: the same proxy, but not for 127.0.0.1.
      { id: 'bypassed', type: 'webhooks', settings: { webhooks: [{ url: `${origin}/bypassed` }], tls, proxy: { url: proxy.url, noProxy: ['127.0.0.1'] } } },
    ],
  };
  const config: Config = testConfig(doc, 'deliver-proxy.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
});

afterAll(async () => {
  await service?.stop();
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => (receiver === undefined ? resolve() : receiver.close(() => resolve())));
  await proxy?.close();
  await kafka?.close();
  pki?.remove();
});

describe('egress proxy', () => {
  it('every request of a proxied destination goes through a CONNECT tunnel of the proxy', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `p-${i}`);
    await produce('proxied', ids);
    await waitFor(async () => (await delivered('proxied')) === ids.length, { what: 'every event delivered' });
    const proxied = requests.filter((r) => r.path === '/proxied');
    expect(proxied).toHaveLength(ids.length);
    expect(proxy.targets.length).toBeGreaterThanOrEqual(1);
    expect(new Set(proxy.targets)).toEqual(new Set([origin.slice('https://'.length)]));
    // Each request came over a connection the proxy opened.
    for (const request of proxied) expect(proxy.tunnelPorts.has(request.remotePort!)).toBe(true);
  });

  it('noProxy: the hosts listed go straight to the receiver, the proxy sees nothing of them', async () => {
    const tunnels = proxy.targets.length;
    await produce('bypassed', ['b-1', 'b-2', 'b-3']);
    await waitFor(async () => (await delivered('bypassed')) === 3, { what: 'every event delivered' });
    const bypassed = requests.filter((r) => r.path === '/bypassed');
    expect(bypassed).toHaveLength(3);
    for (const request of bypassed) expect(proxy.tunnelPorts.has(request.remotePort!)).toBe(false);
    expect(proxy.targets.length).toBe(tunnels);
  });

  it('with blockPrivateNetworks, a receiver at a private address is refused before the proxy is asked', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, blockPrivateNetworks: true });
    const tunnels = proxy.targets.length;
    try {
      const profile = connectionProfile(undefined, { url: proxy.url, noProxy: [] });
      const result = await sender.send(webhookTarget(`${origin}/guarded`, profile), Buffer.from(body('g-1')), { 'content-type': 'application/json' });
      expect(result).toMatchObject({ outcome: 'blocked', verdict: 'permanent' });
      expect(proxy.targets.length).toBe(tunnels);
      expect(requests.filter((r) => r.path === '/guarded')).toEqual([]);
    } finally {
      await sender.close();
    }
  });
});
