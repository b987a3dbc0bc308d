// The deliverer against a real broker and real local receivers: Standard Webhooks
// signing (verified with the official `standardwebhooks` package, never with our code),
// secret rotation, and Segment's status rules for 410, 460 and 501.
import { createHash, createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
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
import { printedUrl, startReceiver, staysQuiet } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

// Two 24-byte keys, as `whsec_` + `openssl rand -base64 24` would give them.
const NEW = 'whsec_bmV3LXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';
const OLD = 'whsec_b2xkLXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
const receivers: Record<string, Receiver> = {};

const HOOK_IDS = ['standard', 'rotating', 'segment-rotating', 'gone', 'closed', 'not-implemented', 'version'] as const;
type HookId = (typeof HOOK_IDS)[number];

function produce(destination: HookId, ids: string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({
      key: 'u-1',
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

/** What the official library says of a request, for each secret alone. */
function verifies(secret: string, body: Buffer, headers: Record<string, string | string[] | undefined>): boolean {
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  kafka = await createTestKafka();
  for (const id of HOOK_IDS) receivers[id] = await startReceiver();
  prefix = randomPrefix();
  const hook = (id: HookId, settings: Record<string, unknown> = {}) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: receivers[id]!.url() }], ...settings } });
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('signing'), topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '2s', retryTiers: ['200ms', '500ms'], maxRetryWindow: '30s', concurrencyPerDestination: 8 },
    sources: [{ id: 'web' }],
    destinations: [
      hook('standard', { signing: 'standard', sharedSecret: NEW }),
      hook('rotating', { signing: 'standard', sharedSecrets: [NEW, OLD] }),
      hook('segment-rotating', { sharedSecrets: ['segment-new', 'segment-old'] }),
      hook('gone'),
      hook('closed'),
      hook('not-implemented'),
      hook('version'),
    ],
  };
  const config: Config = testConfig(doc, 'deliver-signing-status.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService(
    { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() },
    { sampleIntervalMs: 60_000 },
  );
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'every destination consumer to join' });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await kafka?.close();
});

describe('signing: standard', () => {
  it('a receiver verifying with the standardwebhooks package accepts every request', async () => {
    const receiver = receivers.standard!;
    receiver.reply((req, res, body) => {
      res.writeHead(verifies(NEW, body, req.headers) ? 200 : 401);
      res.end();
    });
    const started = Math.floor(Date.now() / 1000);
    await produce('standard', ['s-1', 's-2', 's-3']);
    await waitFor(async () => (await count('deliveries', { destination: 'standard', result: 'delivered' })) === 3, { what: '3 delivered' });

    expect(receiver.requests).toHaveLength(3);
    for (const request of receiver.requests) {
      const id = /"messageId":"(s-\d)"/.exec(request.text)![1]!;
      expect(request.headers['webhook-id']).toBe(id);
      expect(Number(request.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(started);
      expect(Number(request.headers['webhook-timestamp'])).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      expect(request.headers).not.toHaveProperty('x-signature');
      expect(request.text).toBe(trackBody(id));
    }
    expect(await count('deliveryAttempts', { destination: 'standard', outcome: '4xx' })).toBe(0);
  });

  it('a messageId a header cannot carry (a control character, non-Latin-1) is delivered with a header-safe webhook-id the receiver verifies', async () => {
    const receiver = receivers.standard!;
    const before = receiver.requests.length;
    const delivered = await count('deliveries', { destination: 'standard', result: 'delivered' });
    const messageId = 'order\n注文-1';
    const value = `{"version":1,"type":"track","userId":"u-1","messageId":${JSON.stringify(messageId)},"timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed"}`;
    await kafka.produce(`${prefix}deliveries.standard`, [
      { key: 'u-1', value, headers: { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) } },
    ]);
    await waitFor(async () => (await count('deliveries', { destination: 'standard', result: 'delivered' })) === delivered + 1, { what: 'the event delivered' });
    const request = receiver.requests[before]!;
    expect(request.headers['webhook-id']).toBe(`msg_sha256_${createHash('sha256').update(messageId, 'utf8').digest('hex').slice(0, 32)}`);
    expect(verifies(NEW, request.body, request.headers)).toBe(true);
    // The body keeps the messageId as it was.
    expect(request.text).toBe(value);
  });

  it('during a rotation each request carries both signatures, and either secret alone verifies it, on every attempt', async () => {
    const receiver = receivers.rotating!;
    const checks: { newSecret: boolean; oldSecret: boolean; timestamp: string }[] = [];
    // The first attempt of each event fails, so the retry is signed again with its own timestamp.
    const attempts = new Map<string, number>();
    receiver.reply((req, res, body) => {
      checks.push({
        newSecret: verifies(NEW, body, req.headers),
        oldSecret: verifies(OLD, body, req.headers),
        timestamp: String(req.headers['webhook-timestamp']),
      });
      const id = String(req.headers['webhook-id']);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      res.writeHead(n === 1 ? 503 : 200);
      res.end();
    });
    await produce('rotating', ['r-1', 'r-2']);
    await waitFor(async () => (await count('deliveries', { destination: 'rotating', result: 'delivered' })) === 2, { what: '2 delivered on their second attempt' });

    expect(receiver.requests).toHaveLength(4);
    expect(checks).toHaveLength(4);
    for (const check of checks) expect(check).toMatchObject({ newSecret: true, oldSecret: true });
    for (const request of receiver.requests) {
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    }
    // A receiver that knows neither secret refuses the request.
    const first = receiver.requests[0]!;
    expect(verifies('whsec_c29tZW9uZS1lbHNl', first.body, first.headers)).toBe(false);
  });
});

describe('signing: segment during a rotation', () => {
  it('signs X-Signature with the first (new) secret', async () => {
    await produce('segment-rotating', ['g-1']);
    await waitFor(() => receivers['segment-rotating']!.requests.length === 1, { what: 'a request' });
    const [request] = receivers['segment-rotating']!.requests;
    expect(request!.headers['x-signature']).toBe(createHmac('sha1', 'segment-new').update(request!.body).digest('hex'));
    expect(request!.headers).not.toHaveProperty('webhook-signature');
  });
});

describe("Segment's status rules", () => {
  it('410 Gone is retried', async () => {
    receivers.gone!.replyWith((_req, i) => ({ status: i === 0 ? 410 : 200 }));
    await produce('gone', ['x-1']);
    await waitFor(async () => (await count('deliveries', { destination: 'gone', result: 'delivered' })) === 1, { what: 'delivered after the 410' });
    expect(receivers.gone!.requests).toHaveLength(2);
    expect(await count('deliveries', { destination: 'gone', result: 'retry_scheduled' })).toBe(1);
    expect(await count('deliveryAttempts', { destination: 'gone', outcome: '4xx' })).toBe(1);
  });

  it('460 (a load balancer: client closed the connection) is retried', async () => {
    receivers.closed!.replyWith((_req, i) => ({ status: i === 0 ? 460 : 200 }));
    await produce('closed', ['c-1']);
    await waitFor(async () => (await count('deliveries', { destination: 'closed', result: 'delivered' })) === 1, { what: 'delivered after the 460' });
    expect(receivers.closed!.requests).toHaveLength(2);
  });

  it.each([
    ['not-implemented', 501, '501 Not Implemented'],
    ['version', 505, '505 HTTP Version Not Supported'],
  ] as const)('%s: %i is dead-lettered after one attempt, though it is a 5xx', async (id, status, reason) => {
    receivers[id]!.reply({ status });
    await produce(id, [`${id}-1`]);
    const [dead] = await kafka.readAll(`${prefix}deliveries.${id}.dlq`, { atLeast: 1, timeoutMs: 30_000 });
    expect(dead!.headers.error).toBe(`${printedUrl(receivers[id]!.url())}: ${reason}`);
    expect(dead!.headers.attempt).toBe('1');
    expect(dead!.text).toBe(trackBody(`${id}-1`));
    // Longer than both tiers: a retry would have come by now.
    expect(await staysQuiet(receivers[id]!, 1_000)).toBe(true);
    expect(receivers[id]!.requests).toHaveLength(1);
    expect(await count('deliveryAttempts', { destination: id, outcome: '5xx' })).toBe(1);
    expect(await count('deliveries', { destination: id, result: 'retry_scheduled' })).toBe(0);
  });
});
