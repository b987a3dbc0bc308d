// The deliverer against a real broker and real local HTTP and HTTPS receivers: what a
// receiver sees, and where each kind of answer sends the event next.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { captureLogs } from '../support/captured-logs.js';
import { testConfig } from '../support/config.js';
import { startSelfSignedReceiver } from '../support/https-receiver.js';
import type { SelfSignedReceiver } from '../support/https-receiver.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { printedUrl, startReceiver, staysQuiet } from '../support/receiver.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const SECRET = 'shh-its-a-secret';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const WINDOW_MS = 4_000;
/** The deliverer's log lines, parsed. */
const logs = captureLogs('warn');

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let config: Config;
let metrics: Metrics;
let service: Service;
const receivers: Record<string, Receiver> = {};
let tls: SelfSignedReceiver;

const HOOK_IDS = ['sig', 'plain', 'multi1', 'multi2', 'multi3', 'flaky', 'bad', 'down', 'busy', 'slow', 'moved', 'chatty'] as const;
type HookId = (typeof HOOK_IDS)[number];
const url = (id: HookId, path?: string) => receivers[id]!.url(path);

function produce(destination: string, messages: { id: string; body?: string | null; traceparent?: string }[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    messages.map((m) => ({
      key: 'u-1',
      value: m.body === undefined ? trackBody(m.id) : m.body,
      headers: {
        'source-id': 'web',
        'message-id': m.id,
        attempt: '0',
        'first-attempt-at': '',
        'received-at': String(Date.now()),
        ...(m.traceparent ? { traceparent: m.traceparent } : {}),
      },
    })),
  );
}

const readTopic = (suffix: string, atLeast = 1): Promise<ReadMessage[]> => kafka.readAll(`${prefix}deliveries.${suffix}`, { atLeast, timeoutMs: 30_000 });

async function count(metric: 'deliveries' | 'deliveryAttempts', labels: Record<string, string>): Promise<number> {
  const { values } = await metrics[metric].get();
  const has = (v: { labels: object }) => Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want);
  return values.filter(has).reduce((sum, v) => sum + v.value, 0);
}

beforeAll(async () => {
  kafka = await createTestKafka();
  for (const id of HOOK_IDS) receivers[id] = await startReceiver();
  tls = await startSelfSignedReceiver();
  prefix = randomPrefix();
  const hook = (id: HookId, extra: Record<string, unknown> = {}) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: url(id) }], ...extra } });
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('deliver'), topicPrefix: prefix, partitions: 2 },
    // Five attempts (all failed) open a circuit here, so that the short window sees it open and probing.
    delivery: { timeout: '1s', retryTiers: ['200ms', '500ms'], maxRetryWindow: `${WINDOW_MS / 1000}s`, concurrencyPerDestination: 8, circuitBreaker: { minAttempts: 5 } },
    sources: [{ id: 'web' }], // a config needs a source; this test only delivers
    destinations: [
      { id: 'sig', type: 'webhooks', settings: { webhooks: [{ url: url('sig', '/segment?team=growth'), headers: { 'X-Team': 'growth' } }], sharedSecret: SECRET } },
      hook('plain'),
      { id: 'multi', type: 'webhooks', settings: { webhooks: [{ url: url('multi1') }, { url: url('multi2') }, { url: url('multi3') }] } },
      hook('flaky'),
      hook('bad'),
      hook('down'),
      // Its largest tier covers the Retry-After below: a Retry-After is honoured up to the largest tier (docs/webhooks.md#retry-policy-per-destination).
      hook('busy', { retry: { tiers: ['200ms', '2500ms'] } }),
      hook('slow'),
      hook('moved'),
      hook('chatty'),
      { id: 'selfsigned', type: 'webhooks', settings: { webhooks: [{ url: tls.url() }] } },
    ],
  };
  config = testConfig(doc, 'deliver.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService(
    { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: logs.logger },
    { sampleIntervalMs: 500 },
  );
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'every destination consumer to join' });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all([...Object.values(receivers).map((r) => r.close()), tls?.close()]);
  await kafka?.close();
});

describe('deliverer', () => {
  it('posts the body bytes unchanged with the contract headers and a signature a receiver can verify', async () => {
    const verified: boolean[] = [];
    receivers.sig!.replyWith(() => (req, res, body) => {
      // What a receiver does (seed, Authentication 3): parse, re-serialize, HMAC, compare.
      const expected = createHmac('sha1', SECRET).update(JSON.stringify(JSON.parse(body.toString('utf8'))), 'utf8').digest('hex');
      verified.push(req.headers['x-signature'] === expected);
      res.writeHead(req.headers['x-signature'] === expected ? 200 : 401);
      res.end();
    });
    const unicode = '{"version":1,"type":"identify","userId":"ü-1","messageId":"m-3","timestamp":"2026-05-01T12:00:00.000Z","traits":{"name":"Zoë Ünïcødé ✓ 漢字 🎉","quote":"\\"\u2028\\\\"}}';
    // As the router renders it: JSON.stringify output (U+2028 stays raw, quotes and backslashes escaped).
    expect(JSON.stringify(JSON.parse(unicode))).toBe(unicode);
    await produce('sig', [{ id: 'm-1', traceparent: TRACEPARENT }, { id: 'm-2' }, { id: 'm-3', body: unicode }]);
    await waitFor(() => receivers.sig!.requests.length >= 3, { what: '3 requests at the receiver' });

    const first = receivers.sig!.requests.find((r) => r.text.includes('"m-1"'))!;
    expect(first.method).toBe('POST');
    expect(first.path).toBe('/segment?team=growth');
    expect(first.text).toBe(
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}',
    );
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['user-agent']).toBe(`switchyard/${VERSION}`);
    expect(first.headers['x-team']).toBe('growth');
    expect(first.headers['x-signature']).toBe(createHmac('sha1', SECRET).update(first.body).digest('hex'));
    expect(first.headers['x-signature']).toMatch(/^[0-9a-f]{40}$/);
    expect(first.headers.traceparent).toBe(TRACEPARENT);
    expect(first.headers['content-length']).toBe(String(first.body.length));
    expect(Object.keys(first.headers).sort()).toEqual(['connection', 'content-length', 'content-type', 'host', 'traceparent', 'user-agent', 'x-signature', 'x-team']);

    const third = receivers.sig!.requests.find((r) => r.text.includes('"m-3"'))!;
    expect(third.body.equals(Buffer.from(unicode, 'utf8'))).toBe(true);
    expect(third.headers).not.toHaveProperty('traceparent');
    expect(verified).toEqual([true, true, true]);
    await waitFor(async () => (await count('deliveries', { destination: 'sig', result: 'delivered' })) === 3, { what: '3 delivered' });
    expect(await count('deliveryAttempts', { destination: 'sig', outcome: '2xx' })).toBe(3);
  });

  it('sends no X-Signature without a shared secret, and dead-letters a message without a body', async () => {
    await produce('plain', [{ id: 'p-1' }, { id: 'p-tombstone', body: null }]);
    await waitFor(() => receivers.plain!.requests.length >= 1, { what: 'a request at the receiver' });
    expect(receivers.plain!.requests[0]!.headers).not.toHaveProperty('x-signature');
    const [dead] = await readTopic('plain.dlq');
    expect(dead!.value).toBeNull();
    expect(dead!.headers['message-id']).toBe('p-tombstone');
    expect(dead!.headers.error).toMatch(/has no value \(a tombstone\?\): a delivery message must carry the webhook body; nothing was sent$/);
    expect(receivers.plain!.requests).toHaveLength(1);
  });

  it('delivers once when one of three URLs answers 2xx, and retries none of them', async () => {
    receivers.multi1!.reply({ status: 500 });
    receivers.multi2!.reply({ status: 200 });
    receivers.multi3!.reply({ status: 404 });
    await produce('multi', [{ id: 'x-1' }]);
    await waitFor(async () => (await count('deliveries', { destination: 'multi', result: 'delivered' })) === 1, { what: 'delivered' });
    // Longer than both tiers: a retry would have happened by now.
    expect(await staysQuiet(receivers.multi1!, 1_500)).toBe(true);
    for (const id of ['multi1', 'multi2', 'multi3'] as const) {
      expect(receivers[id]!.requests, id).toHaveLength(1);
      expect(receivers[id]!.requests[0]!.text).toBe(trackBody('x-1'));
    }
    expect(await count('deliveries', { destination: 'multi', result: 'retry_scheduled' })).toBe(0);
    expect(await count('deliveries', { destination: 'multi', result: 'dead_lettered' })).toBe(0);
  });

  it('503, 503, 200: three attempts spaced by the tiers', async () => {
    receivers.flaky!.replyWith((_req, i) => ({ status: i < 2 ? 503 : 200 }));
    await produce('flaky', [{ id: 'f-1', traceparent: TRACEPARENT }]);
    await waitFor(async () => (await count('deliveries', { destination: 'flaky', result: 'delivered' })) === 1, { what: 'delivered on the third attempt' });
    const at = receivers.flaky!.requests.map((r: ReceivedRequest) => r.at);
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(200);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(500);
    expect(receivers.flaky!.requests.every((r) => r.text === trackBody('f-1'))).toBe(true);

    const [tier1] = await readTopic('flaky.retry.200ms');
    const [tier2] = await readTopic('flaky.retry.500ms');
    expect(tier1!.text).toBe(trackBody('f-1'));
    expect(tier1!.key).toBe('u-1');
    expect(tier1!.headers).toMatchObject({ attempt: '1', 'source-id': 'web', 'message-id': 'f-1', traceparent: TRACEPARENT });
    expect(tier1!.headers['first-attempt-at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(tier1!.headers['received-at']).toMatch(/^\d+$/);
    expect(Number(tier1!.headers['due-at'])).toBeGreaterThanOrEqual(Date.parse(tier1!.headers['first-attempt-at']!) + 200);
    expect(tier2!.headers).toMatchObject({ attempt: '2', 'first-attempt-at': tier1!.headers['first-attempt-at'], 'message-id': 'f-1' });
    // Each retry says why the attempt before it failed (what `switchyard trace` shows as the last error).
    expect(tier1!.headers.error).toBe(`${printedUrl(url('flaky'))}: 503 Service Unavailable`);
    expect(tier2!.headers.error).toBe(`${printedUrl(url('flaky'))}: 503 Service Unavailable`);
    expect(await count('deliveries', { destination: 'flaky', result: 'retry_scheduled' })).toBe(2);
    expect(await count('deliveryAttempts', { destination: 'flaky', outcome: '5xx' })).toBe(2);
  });

  it('400: one attempt, then a dead letter that says why', async () => {
    receivers.bad!.reply({ status: 400 });
    await produce('bad', [{ id: 'b-1' }]);
    const [dead] = await readTopic('bad.dlq');
    expect(dead!.text).toBe(trackBody('b-1'));
    expect(dead!.key).toBe('u-1');
    expect(dead!.headers.error).toBe(`${printedUrl(url('bad'))}: 400 Bad Request`);
    expect(dead!.headers).toMatchObject({ attempt: '1', 'source-id': 'web', 'message-id': 'b-1' });
    expect(dead!.headers['first-attempt-at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(dead!.headers['last-attempt-at']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(dead!.headers['last-attempt-at']!)).toBeGreaterThanOrEqual(Date.parse(dead!.headers['first-attempt-at']!));
    expect(dead!.headers).not.toHaveProperty('due-at');
    expect(receivers.bad!.requests).toHaveLength(1);
    expect(await count('deliveries', { destination: 'bad', result: 'dead_lettered' })).toBe(1);
    // The warning says which message it was and where it sat.
    const warned = logs.lines.find((line) => line.destination === 'bad' && String(line.msg).startsWith('event dead-lettered'));
    expect(warned).toMatchObject({ level: 40, messageId: 'b-1', topic: `${prefix}deliveries.bad`, partition: expect.any(Number), offset: expect.stringMatching(/^\d+$/) });
  });

  it('always 500: five requests open the circuit; the event waits, probes go after each cool-down until the window ends, then a dead letter, then silence', async () => {
    receivers.down!.reply({ status: 500 });
    await produce('down', [{ id: 'd-1' }]);
    const [dead] = await kafka.readAll(`${prefix}deliveries.down.dlq`, { atLeast: 1, timeoutMs: WINDOW_MS + 20_000 });
    // The circuit breaker (docs/webhooks.md#circuit-breaker) opens after 5 failed attempts
    // (this file's minimum); its cool-down (a quarter of this short window) lets probes
    // through now and then. While it is open the event waits: no attempt, no record.
    const requests = receivers.down!.requests.length;
    expect(requests).toBeGreaterThanOrEqual(6);
    expect(await count('deliveryAttempts', { destination: 'down', outcome: 'circuit_open' })).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'down', outcome: '5xx' })).toBe(requests);
    expect(await count('deliveries', { destination: 'down', result: 'retry_scheduled' })).toBe(requests - 1);
    expect(dead!.headers.attempt).toBe(String(requests));
    expect(dead!.headers.error).toBe(`${printedUrl(url('down'))}: 500 Internal Server Error`);
    const gaps = receivers.down!.requests.slice(1).map((r, i) => r.at - receivers.down!.requests[i]!.at);
    // The 6th request is the first probe, a cool-down (WINDOW_MS / 4) after the 5th.
    expect(gaps[4]).toBeGreaterThanOrEqual(WINDOW_MS / 4 - 50);
    const first = Date.parse(dead!.headers['first-attempt-at']!);
    const last = Date.parse(dead!.headers['last-attempt-at']!);
    expect(last - first).toBeGreaterThanOrEqual(WINDOW_MS);
    expect(await staysQuiet(receivers.down!, 1_500)).toBe(true);
  });

  it('429 with Retry-After: 2 waits at least 2 s before the next try', async () => {
    receivers.busy!.replyWith((_req, i) => (i === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
    await produce('busy', [{ id: 'r-1' }]);
    await waitFor(async () => (await count('deliveries', { destination: 'busy', result: 'delivered' })) === 1, { what: 'delivered after the Retry-After' });
    const [a, b] = receivers.busy!.requests;
    expect(receivers.busy!.requests).toHaveLength(2);
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(2_000);
  });

  it('an answer slower than the timeout is retried', async () => {
    receivers.slow!.replyWith((_req, i) => (i === 0 ? { status: 200, delayMs: 2_500 } : { status: 200 }));
    await produce('slow', [{ id: 's-1' }]);
    await waitFor(async () => (await count('deliveries', { destination: 'slow', result: 'delivered' })) === 1, { what: 'delivered on the retry' });
    expect(receivers.slow!.requests.length).toBeGreaterThanOrEqual(2);
    expect(await count('deliveryAttempts', { destination: 'slow', outcome: 'timeout' })).toBeGreaterThanOrEqual(1);
    expect(await count('deliveries', { destination: 'slow', result: 'dead_lettered' })).toBe(0);
  });

  it('never follows a redirect: a 3xx is a permanent failure', async () => {
    const elsewhere = receivers.plain!;
    const before = elsewhere.requests.length;
    receivers.moved!.reply({ status: 301, headers: { location: elsewhere.url('/moved-here') } });
    await produce('moved', [{ id: 'mv-1' }]);
    const [dead] = await readTopic('moved.dlq');
    expect(dead!.headers.error).toBe(`${printedUrl(url('moved'))}: 301 Moved Permanently (redirects are not followed; configure the final URL)`);
    expect(receivers.moved!.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(before);
  });

  it('discards a response body it does not need, even an endless one', async () => {
    let closedByClient = false;
    receivers.chatty!.reply((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const timer = setInterval(() => res.write(chunk), 1);
      res.on('close', () => {
        clearInterval(timer);
        closedByClient = true;
      });
    });
    await produce('chatty', [{ id: 'c-1' }]);
    await waitFor(async () => (await count('deliveries', { destination: 'chatty', result: 'delivered' })) === 1, { what: 'delivered despite the endless body' });
    await waitFor(() => closedByClient, { what: 'the deliverer to drop the endless response' });
    expect(receivers.chatty!.requests).toHaveLength(1);
  });

  it('a self-signed HTTPS receiver gets no request, and the dead letter says why', async () => {
    await produce('selfsigned', [{ id: 't-1' }]);
    const [dead] = await readTopic('selfsigned.dlq');
    expect(dead!.headers.error).toBe(`${printedUrl(tls.url())}: self-signed certificate`);
    expect(dead!.headers.attempt).toBe('1');
    expect(tls.connections).toBeGreaterThanOrEqual(1);
    expect(tls.requests).toBe(0);
    expect(await count('deliveryAttempts', { destination: 'selfsigned', outcome: 'tls' })).toBe(1);
  });

  it('samples the retry queue depth per tier', async () => {
    await waitFor(
      async () => {
        const { values } = await metrics.retryQueueDepth.get();
        return values.some((v) => v.labels.destination === 'flaky' && v.labels.tier === '200ms');
      },
      { what: 'a retry queue depth sample' },
    );
    const { values } = await metrics.consumerLag.get();
    expect(values.some((v) => v.labels.topic === `${prefix}deliveries.flaky`)).toBe(true);
  });
});
