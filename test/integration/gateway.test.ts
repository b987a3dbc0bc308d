// The gateway against the run's real broker, over real HTTP on port 0: every status
// of docs/http-api.md, and what lands in the `calls` and `calls.invalid` topics (bytes, keys,
// headers), read back with a consumer.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Consumer } from '@platformatic/kafka';
import type { Message } from '@platformatic/kafka';
import type { Config } from '../../src/config/schema.js';
import type { ConfigStore } from '../../src/config/store.js';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayOptions, GatewayService } from '../../src/gateway/gateway-service.js';
import { createKafka } from '../../src/kafka/index.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { createTestAdmin, randomName, randomPrefix, testBrokers, testClientOptions } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const NOON = Date.UTC(2026, 4, 1, 12); // 2026-05-01T12:00:00.000Z
const WEB_KEY = 'wk-web-0123456789';
const MOBILE_KEY = 'wk-mobile-0123456789';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function makeConfig(prefix: string, sources: unknown[]): Config {
  return testConfig(
    {
      kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 2, replicationFactor: 1 },
      gateway: { port: 0, host: '127.0.0.1' },
      sources,
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
    },
    'gateway-test.yaml',
  );
}

interface Running {
  gateway: GatewayService;
  metrics: Metrics;
  base: string;
  setConfig(next: Config): void;
  /** The gateway's log lines (info and up), raw. */
  logs: string[];
}

async function startGateway(config: Config, options: GatewayOptions = {}): Promise<Running> {
  let current = config;
  const store: ConfigStore = { current: () => current, onChange: () => () => undefined, close: () => undefined };
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination: sink });
  const metrics = createMetrics({ defaultMetrics: false });
  const gateway = createGatewayService({ config: store, kafka: createKafka(config.kafka, silentLogger()), metrics, logger }, options);
  await gateway.start();
  return {
    gateway,
    metrics,
    base: `http://127.0.0.1:${gateway.port()}`,
    logs,
    setConfig(next) {
      current = next;
    },
  };
}

function basic(writeKey: string): string {
  return `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

async function post(
  base: string,
  path: string,
  body: unknown,
  options: { writeKey?: string; headers?: Record<string, string>; method?: 'POST' | 'GET' | 'PUT' } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.writeKey !== undefined) headers.authorization = basic(options.writeKey);
  const payload = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const res = await request(`${base}${path}`, {
    method: options.method ?? 'POST',
    headers,
    ...(options.method === 'GET' ? {} : { body: payload }),
  });
  const text = await res.body.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // asserted by the test
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

interface Record_ {
  topic: string;
  timestamp: string;
  key: string | null;
  text: string;
  json: Record<string, unknown>;
  headers: Record<string, string>;
}

/** Reads a set of topics from the beginning for the whole file, into one list. */
async function collect(topics: string[]): Promise<{ records: Record_[]; consumer: { disconnect(): Promise<void> } }> {
  const records: Record_[] = [];
  const consumer = new Consumer({ ...testClientOptions(randomName('gateway-test')), groupId: randomName('gateway-test'), autocommit: false, maxWaitTime: 200 });
  const stream = await consumer.consume({ topics, mode: 'earliest' });
  stream.on('data', (message: Message<Buffer, Buffer, Buffer, Buffer>) => {
    const headers: Record<string, string> = {};
    for (const [name, value] of message.headers) if (!(name.toString() in headers)) headers[name.toString()] = value.toString();
    const text = message.value?.toString('utf8') ?? '';
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {
      // a kept body that is not JSON
    }
    records.push({ topic: message.topic, timestamp: message.timestamp.toString(), key: message.key?.toString() ?? null, text, json, headers });
  });
  return {
    records,
    consumer: {
      async disconnect() {
        await stream.close();
        await consumer.close(true);
      },
    },
  };
}

describe('gateway', () => {
  const prefix = randomPrefix();
  const callsTopic = `${prefix}calls`;
  const invalidTopic = `${prefix}calls.invalid`;
  const config = makeConfig(prefix, [
    { id: 'web', writeKey: WEB_KEY, destinations: ['hooks'] },
    { id: 'mobile', writeKey: MOBILE_KEY, destinations: ['hooks'] },
  ]);
  let clock = NOON;
  let running: Running;
  let records: Record_[];
  let consumer: { disconnect(): Promise<void> };

  /** Records of `topic` whose key (or body) mentions `marker`, once there are `count`. */
  const recordsFor = (topic: string, marker: string, count: number): Promise<Record_[]> =>
    waitFor(
      () => {
        const found = records.filter((r) => r.topic === topic && (r.key?.includes(marker) || r.text.includes(marker)));
        return found.length >= count ? found : undefined;
      },
      { timeoutMs: 20_000, what: `${count} record(s) in ${topic} for ${marker}` },
    );

  beforeAll(async () => {
    running = await startGateway(config, { now: () => clock });
    ({ records, consumer } = await collect([callsTopic, invalidTopic]));
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await running?.gateway.stop();
  });

  it('is ready once listening with a connected producer, and created both topics', async () => {
    expect(running.gateway.health()).toEqual({ live: true, ready: true });
    const admin = createTestAdmin();
    try {
      expect(await admin.listTopics()).toEqual(expect.arrayContaining([callsTopic, invalidTopic]));
    } finally {
      await admin.close();
    }
  });

  it('writes a batch (Basic auth) to the calls topic, keyed, with source-id and traceparent, before answering 200', async () => {
    clock = NOON;
    const user = randomName('u');
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const answer = await post(
      running.base,
      '/v1/batch',
      {
        batch: [
          { type: 'track', userId: user, messageId: 'm-1', event: 'Order Completed', properties: { total: 99.5 }, timestamp: '2026-05-01T11:59:00.000Z' },
          { type: 'identify', anonymousId: `${user}-anon`, traits: { plan: 'pro' } },
        ],
        sentAt: '2026-05-01T11:59:30.000Z',
        context: { ip: '203.0.113.9' },
      },
      { writeKey: WEB_KEY, headers: { traceparent } },
    );
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.text).toBe('{"success":true}');

    const found = await recordsFor(callsTopic, user, 2);
    const track = found.find((r) => r.key === user)!;
    expect(track.text).toBe(
      `{"type":"track","userId":"${user}","messageId":"m-1","event":"Order Completed","properties":{"total":99.5},` +
        '"timestamp":"2026-05-01T11:59:30.000Z","context":{"ip":"203.0.113.9"},"receivedAt":"2026-05-01T12:00:00.000Z",' +
        '"sentAt":"2026-05-01T11:59:30.000Z"}',
    );
    expect(track.headers).toEqual({ 'source-id': 'web', traceparent });
    // The record's timestamp is when the gateway received the call (the router's received-at).
    expect(track.timestamp).toBe(String(NOON));
    const identify = found.find((r) => r.key === `${user}-anon`)!;
    expect(identify.json).toMatchObject({
      type: 'identify',
      anonymousId: `${user}-anon`,
      timestamp: '2026-05-01T12:00:00.000Z',
      receivedAt: '2026-05-01T12:00:00.000Z',
      context: { ip: '203.0.113.9' },
    });
    expect(identify.json.messageId).toMatch(UUID);
  });

  it('stores every call of many concurrent requests (their writes merged) before answering each', async () => {
    const user = randomName('many');
    const requests = 60;
    const perRequest = 5;
    const answers = await Promise.all(
      Array.from({ length: requests }, (_, r) =>
        post(
          running.base,
          '/v1/batch',
          { batch: Array.from({ length: perRequest }, (_, i) => ({ type: 'track', userId: `${user}-${r}`, event: `E${i}`, messageId: `${user}-${r}-${i}` })) },
          { writeKey: WEB_KEY },
        ),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(new Array(requests).fill(200));
    const stored = await recordsFor(callsTopic, user, requests * perRequest);
    expect(new Set(stored.map((r) => r.json.messageId)).size).toBe(requests * perRequest);
    // Each user's calls stay in order within their partition.
    const first = stored.filter((r) => r.key === `${user}-0`).map((r) => r.json.event);
    expect(first).toEqual(['E0', 'E1', 'E2', 'E3', 'E4']);
  });

  it('passes no traceparent on when the header is malformed', async () => {
    const user = randomName('u');
    const answer = await post(running.base, '/v1/identify', { userId: user }, { writeKey: WEB_KEY, headers: { traceparent: 'not-a-trace' } });
    expect(answer.status).toBe(200);
    const [record] = await recordsFor(callsTopic, user, 1);
    expect(record!.headers).toEqual({ 'source-id': 'web' });
  });

  it('accepts /v1/import, the writeKey in the body, and removes it from the stored call', async () => {
    const user = randomName('u');
    const answer = await post(running.base, '/v1/import', {
      writeKey: MOBILE_KEY,
      batch: [{ type: 'identify', userId: user, messageId: 'm-import', writeKey: MOBILE_KEY }],
    });
    expect(answer.status).toBe(200);
    const [record] = await recordsFor(callsTopic, user, 1);
    expect(record!.headers['source-id']).toBe('mobile');
    expect(record!.text).not.toContain('writeKey');
    expect(record!.text).not.toContain(MOBILE_KEY);
  });

  it.each(['identify', 'track', 'page', 'screen', 'group', 'alias'] as const)('accepts one call on /v1/%s, typed by the path', async (type) => {
    const user = randomName('u');
    const body = { userId: user, previousId: `${user}-before`, groupId: 'g-1', event: 'Signed Up', name: 'Home', writeKey: WEB_KEY };
    const answer = await post(running.base, `/v1/${type}`, body);
    expect(answer.status).toBe(200);
    expect(answer.text).toBe('{"success":true}');
    const [record] = await recordsFor(callsTopic, user, 1);
    expect(record!.json.type).toBe(type);
    expect(record!.key).toBe(user);
    expect(record!.json.messageId).toMatch(UUID);
  });

  it('reads a gzip body', async () => {
    const user = randomName('u');
    const body = gzipSync(JSON.stringify({ batch: [{ type: 'track', userId: user, event: 'Zipped' }] }));
    const answer = await post(running.base, '/v1/batch', body, { writeKey: WEB_KEY, headers: { 'content-encoding': 'gzip' } });
    expect(answer.status).toBe(200);
    const [record] = await recordsFor(callsTopic, user, 1);
    expect(record!.json.event).toBe('Zipped');
  });

  it('corrects clock skew exactly, with the Go library’s timestamp form and payload', async () => {
    clock = Date.UTC(2026, 4, 1, 12, 0, 0, 500);
    const user = randomName('u');
    // What the deprecated Go library (v2) sends: Basic auth, its own time format, context.library.
    const answer = await post(
      running.base,
      '/v1/batch',
      {
        batch: [{ type: 'track', userId: user, event: 'Download', messageId: 'go-1', timestamp: '2009-11-10T23:00:00+0000', properties: { platform: 'osx' } }],
        context: { library: { name: 'analytics-go', version: '2.1.0' } },
        messageId: 'batch-1',
        sentAt: '2009-11-10T23:00:02+0000',
      },
      { writeKey: WEB_KEY },
    );
    expect(answer.status).toBe(200);
    const [record] = await recordsFor(callsTopic, user, 1);
    // receivedAt − (sentAt − timestamp) = 12:00:00.500 − 2 s.
    expect(record!.json).toMatchObject({
      timestamp: '2026-05-01T11:59:58.500Z',
      receivedAt: '2026-05-01T12:00:00.500Z',
      sentAt: '2009-11-10T23:00:02+0000',
      messageId: 'go-1',
      context: { library: { name: 'analytics-go', version: '2.1.0' } },
    });
    clock = NOON;
  });

  it('keeps invalid calls in calls.invalid with the reason, lists them in the 200, and accepts the others', async () => {
    const user = randomName('u');
    const bad = { type: 'track', userId: `${user}-bad`, messageId: 'bad-1', properties: { a: 1 } };
    const answer = await post(
      running.base,
      '/v1/batch',
      { batch: [{ type: 'track', userId: user, event: 'Good' }, bad, { type: 'identify' }], context: { ip: '203.0.113.9' } },
      { writeKey: WEB_KEY },
    );
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual({
      success: true,
      invalid: [
        { index: 1, code: 'missing_event', message: 'track call without "event": set event to the event name' },
        { index: 2, code: 'missing_identity', message: 'identify call has neither userId nor anonymousId: set one of them' },
      ],
    });
    const [kept] = await recordsFor(invalidTopic, `${user}-bad`, 1);
    // The call as sent: no merged context, no generated fields.
    expect(kept!.text).toBe(JSON.stringify(bad));
    expect(kept!.key).toBe(`${user}-bad`);
    expect(kept!.headers['source-id']).toBe('web');
    expect(kept!.headers.error).toBe('missing_event: track call without "event": set event to the event name');
    await recordsFor(callsTopic, user, 1);
    const invalid = await running.metrics.callsInvalid.get();
    expect(invalid.values.find((v) => v.labels.reason === 'missing_event')?.value).toBeGreaterThanOrEqual(1);
  });

  it('answers 400 to a body that is not JSON, and keeps it when the source is known', async () => {
    const marker = randomName('broken');
    const answer = await post(running.base, '/v1/batch', `{"batch":[{"userId":"${marker}"`, { writeKey: WEB_KEY });
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/json');
    expect(answer.json).toMatchObject({ success: false, code: 'invalid_json' });
    expect(answer.json.message).toMatch(/^body is not valid JSON \(.+\): send the calls as one JSON object$/);
    const [kept] = await recordsFor(invalidTopic, marker, 1);
    expect(kept!.text).toBe(`{"batch":[{"userId":"${marker}"`);
    expect(kept!.headers.error).toMatch(/^malformed_json: body is not valid JSON/);
  });

  it('answers 200 and writes nothing to a batch that is null (analytics-go v2 closing with an empty buffer), empty or absent', async () => {
    const admin = createTestAdmin();
    const total = async () => {
      let sum = 0;
      for (const topic of [callsTopic, invalidTopic]) for (const p of await admin.fetchTopicOffsets(topic)) sum += Number(p.high);
      return sum;
    };
    try {
      const before = await total();
      const okBefore = (await running.metrics.gatewayRequests.get()).values.filter((v) => v.labels.status === '200').reduce((sum, v) => sum + v.value, 0);
      // Byte for byte what gopkg.in/segmentio/analytics-go.v2 (v2.0.0) sends from Close()
      // when its last flush left the buffer empty (Go's encoding of its Batch struct).
      const goClose = '{"context":{"library":{"name":"analytics-go","version":"2.0.0"}},"batch":null,"messageId":"0b0c3d9c-7f6e-4a53-8d55-2b4f7f1f6a10","sentAt":"2026-05-01T12:00:00+0000"}';
      const closing = await post(running.base, '/v1/batch', goClose, { writeKey: WEB_KEY, headers: { 'user-agent': 'analytics-go (version: 2.0.0)' } });
      expect(closing.status).toBe(200);
      expect(closing.json).toEqual({ success: true });
      for (const [path, body] of [
        ['/v1/batch', { batch: [] }],
        ['/v1/import', { batch: null }],
        ['/v1/import', { context: { library: { name: 'analytics-go', version: '2.0.0' } } }],
      ] as const) {
        const answer = await post(running.base, path, body, { writeKey: WEB_KEY });
        expect(answer.status, `${path} ${JSON.stringify(body)}`).toBe(200);
        expect(answer.json).toEqual({ success: true });
      }
      // Counted as requests, not as invalid calls; nothing written anywhere.
      const okAfter = (await running.metrics.gatewayRequests.get()).values.filter((v) => v.labels.status === '200').reduce((sum, v) => sum + v.value, 0);
      expect(okAfter - okBefore).toBe(4);
      expect(await total()).toBe(before);
    } finally {
      await admin.close();
    }
  });

  it('answers 400 to a batch request whose batch is not a list, and keeps it', async () => {
    const marker = randomName('not-a-list');
    const answer = await post(running.base, '/v1/batch', { batch: { type: 'identify', userId: marker } }, { writeKey: WEB_KEY });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({
      success: false,
      code: 'invalid_request',
      message: 'body has "batch" as an object, not a list: send {"batch":[{"type":"track",...}, ...]} (the request is kept in calls.invalid)',
    });
    const [kept] = await recordsFor(invalidTopic, marker, 1);
    expect(kept!.headers.error).toMatch(/^bad_field: body has "batch" as an object, not a list/);
  });

  it.each([
    ['an unknown Basic write key', { authorization: basic('nope') }, {}, /^unknown write key: no source/],
    ['no write key at all', {}, {}, /^no write key: send it as the HTTP Basic user name/],
    ['an unknown writeKey in the body', {}, { writeKey: 'nope' }, /^unknown write key/],
    ['another auth scheme', { authorization: 'Bearer abc' }, { writeKey: WEB_KEY }, /uses the "Bearer" scheme/],
  ])('answers 401 to %s', async (_what, headers, extra, message) => {
    const user = randomName('u');
    const answer = await post(running.base, '/v1/batch', { ...extra, batch: [{ type: 'identify', userId: user }] }, { headers });
    expect(answer.status).toBe(401);
    expect(answer.json).toMatchObject({ success: false, code: 'unauthorized' });
    expect(answer.json.message).toMatch(message);
    expect(answer.text).not.toContain('nope');
    // Logged at info with the reason the client got, never with the key it sent.
    const line = running.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === `request refused: ${String(answer.json.message)}`);
    expect(line).toMatchObject({ level: 30, route: '/v1/batch', status: 401, code: 'unauthorized' });
    expect(running.logs.join('\n')).not.toContain('nope');
  });

  it('follows write keys through a config reload', async () => {
    const user = randomName('u');
    const rotated = makeConfig(prefix, [{ id: 'web', writeKey: 'wk-rotated-0001', destinations: ['hooks'] }]);
    expect((await post(running.base, '/v1/identify', { userId: user }, { writeKey: 'wk-rotated-0001' })).status).toBe(401);
    running.setConfig(rotated);
    try {
      expect((await post(running.base, '/v1/identify', { userId: user }, { writeKey: 'wk-rotated-0001' })).status).toBe(200);
      expect((await post(running.base, '/v1/identify', { userId: user }, { writeKey: WEB_KEY })).status).toBe(401);
    } finally {
      running.setConfig(config);
    }
  });

  it('answers 404 to an unknown route and 405 to another method, labelling metrics by route template', async () => {
    const unknown = await post(running.base, '/v1/secret-path-123', { batch: [] }, { writeKey: WEB_KEY });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toBe('application/json');
    expect(unknown.json).toMatchObject({ success: false, code: 'not_found' });
    expect(unknown.json.message).toContain('POST calls to one of /v1/batch, /v1/import, /v1/identify');
    const wrongMethod = await post(running.base, '/v1/batch', undefined, { method: 'GET' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('POST');
    expect(wrongMethod.json).toMatchObject({ success: false, code: 'method_not_allowed' });

    const counted = (await running.metrics.gatewayRequests.get()).values;
    expect(counted.find((v) => v.labels.route === 'other' && v.labels.status === '404')?.value).toBeGreaterThanOrEqual(1);
    expect(counted.find((v) => v.labels.route === '/v1/batch' && v.labels.status === '405')?.value).toBeGreaterThanOrEqual(1);
    expect(counted.find((v) => v.labels.route === '/v1/batch' && v.labels.status === '200')?.value).toBeGreaterThanOrEqual(1);
    expect(counted.some((v) => String(v.labels.route).includes('secret'))).toBe(false);
  });

  it('answers 413 to one call over 32 KB, and keeps it', async () => {
    const user = randomName('u');
    const answer = await post(running.base, '/v1/track', { userId: user, event: 'Big', properties: { blob: 'x'.repeat(33 * 1024) } }, { writeKey: WEB_KEY });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({ success: false, code: 'call_too_large' });
    expect(answer.json.message).toMatch(/over the 32768-byte limit: send less data in properties, traits or context/);
    const [kept] = await recordsFor(invalidTopic, user, 1);
    expect(kept!.headers.error).toMatch(/^too_large: /);
  });

  it('answers 413 to a request over 500 KB, and to a gzip bomb without inflating it', async () => {
    const big = JSON.stringify({ batch: [{ type: 'identify', userId: 'u', traits: { blob: 'x'.repeat(600 * 1024) } }] });
    const answer = await post(running.base, '/v1/batch', big, { writeKey: WEB_KEY });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({ success: false, code: 'request_too_large' });
    expect(answer.json.message).toMatch(/over the limit of 512000 bytes \(500 KB\) per request: send fewer calls per batch/);

    // 40 gzip members of 10 MB of zeros: ~400 KB on the wire, 400 MB inflated.
    const member = gzipSync(Buffer.alloc(10 * 1024 * 1024));
    const bomb = Buffer.concat(Array.from({ length: 40 }, () => member));
    expect(bomb.length).toBeLessThan(500 * 1024);
    const rssBefore = process.memoryUsage().rss;
    const bombed = await post(running.base, '/v1/batch', bomb, { writeKey: WEB_KEY, headers: { 'content-encoding': 'gzip' } });
    const grown = process.memoryUsage().rss - rssBefore;
    expect(bombed.status).toBe(413);
    // Whichever comes first as it inflates: the 500 KB or the ratio to what has arrived.
    expect(bombed.json.message).toMatch(/^(decompressed body is over the limit of 512000 bytes|the gzip body inflates more than 100 times)/);
    // Inflating it all would take 400 MB; the gateway stops at 500 KB.
    expect(grown).toBeLessThan(100 * 1024 * 1024);
    // Served again after the refusals (which closed their connections).
    expect((await post(running.base, '/v1/identify', { userId: randomName('u') }, { writeKey: WEB_KEY })).status).toBe(200);
  });

  it('answers 413 to a request that would write over 1 MiB (the review\'s amplification), and writes nothing of it', async () => {
    const marker = randomName('amp');
    // 2,500 tiny calls and a 30 KB context copied into each: 79 MB as stored, 7 KB gzipped.
    const batch = Array.from({ length: 2500 }, (_, i) => ({ type: 'identify', userId: `${marker}-${i}`, messageId: `${marker}-m-${i}` }));
    const body = gzipSync(JSON.stringify({ batch, context: { page: { title: 'x'.repeat(30_000) } } }));
    expect(body.length).toBeLessThan(20 * 1024);
    const answer = await post(running.base, '/v1/batch', body, { writeKey: WEB_KEY, headers: { 'content-encoding': 'gzip' } });
    expect(answer.status).toBe(413);
    expect(answer.json).toMatchObject({ success: false, code: 'write_too_large' });
    expect(answer.json.message).toMatch(/more than 1048576 bytes \(1 MiB, the most one request may write; .*\); nothing was written/);
    // A request after it lands; by then the refused one would have been there too.
    const after = randomName('after');
    expect((await post(running.base, '/v1/identify', { userId: after }, { writeKey: WEB_KEY })).status).toBe(200);
    await recordsFor(callsTopic, after, 1);
    expect(records.filter((r) => r.key?.startsWith(marker) || r.text.includes(marker))).toEqual([]);
  });

  it('answers 415 to an encoding other than gzip', async () => {
    const answer = await post(running.base, '/v1/batch', '{}', { writeKey: WEB_KEY, headers: { 'content-encoding': 'br' } });
    expect(answer.status).toBe(415);
    expect(answer.json).toMatchObject({ success: false, code: 'unsupported_encoding' });
  });

  it('answers 431 with a JSON body to headers over 16 KB', async () => {
    const answer = await rawExchange(running.base, `POST /v1/batch HTTP/1.1\r\nhost: x\r\nx-pad: ${'a'.repeat(20_000)}\r\ncontent-length: 2\r\n\r\n{}`);
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer).toContain('content-type: application/json');
    expect(answer).toContain('"code":"headers_too_large"');
  });
});

describe('gateway: load, slow clients and shutdown', () => {
  const prefix = randomPrefix();
  let running: Running;

  beforeAll(async () => {
    const config = makeConfig(prefix, [{ id: 'web', writeKey: WEB_KEY, destinations: ['hooks'] }]);
    running = await startGateway(config, { maxInFlightRequests: 1, headersTimeoutMs: 1_000, requestTimeoutMs: 4_000, drainTimeoutMs: 20_000 });
  });

  afterAll(async () => {
    await running?.gateway.stop();
  });

  const head = (length: number) =>
    `POST /v1/batch HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

  /**
   * Sends the headers and 5 bytes of `body` on a raw connection and returns once that
   * request holds the only slot: a probe is refused while it has no answer. (The probe
   * can still win the race for the slot; then the attempt is dropped and made again.)
   */
  const holdSlot = (body: string) =>
    waitFor(
      async () => {
        const slow = await openSocket(running.base);
        slow.socket.write(head(body.length) + body.slice(0, 5));
        // NOTE: the probe comes on a new connection too: one kept alive from an earlier
        // request would be read first and always win the slot.
        const call = JSON.stringify({ userId: randomName('probe') });
        const probe = await rawExchange(
          running.base,
          `POST /v1/identify HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\nconnection: close\r\ncontent-length: ${call.length}\r\n\r\n${call}`,
        );
        if (probe.startsWith('HTTP/1.1 503 ') && slow.received() === '') return slow;
        slow.socket.destroy();
        return undefined;
      },
      { timeoutMs: 15_000, what: 'a slow request to hold the only slot' },
    );

  it('answers 503 with Retry-After over the bound of requests in flight, and serves again once below it', async () => {
    const body = JSON.stringify({ batch: [{ type: 'identify', userId: randomName('u') }] });
    const slow = await holdSlot(body);
    const refused = await post(running.base, '/v1/identify', { userId: randomName('u') }, { writeKey: WEB_KEY });
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['content-type']).toBe('application/json');
    expect(refused.json).toMatchObject({ success: false, code: 'overloaded' });
    slow.socket.write(body.slice(5));
    expect(await slow.response(/\r\n\r\n\{"success":true\}/)).toMatch(/^HTTP\/1\.1 200 /);
    slow.socket.destroy();
    await waitFor(async () => (await post(running.base, '/v1/identify', { userId: randomName('u') }, { writeKey: WEB_KEY })).status === 200, {
      timeoutMs: 10_000,
      what: 'the gateway to serve again',
    });
  });

  it('survives a client that goes away mid-body, and frees its slot', async () => {
    const client = await openSocket(running.base);
    client.socket.write(head(1000) + '{"batch":[');
    client.socket.destroy();
    await waitFor(async () => (await post(running.base, '/v1/identify', { userId: randomName('u') }, { writeKey: WEB_KEY })).status === 200, {
      timeoutMs: 10_000,
      what: 'the slot to be freed',
    });
  });

  it('answers 408 to a client that sends its headers too slowly (slowloris), and to a body that stalls', async () => {
    const headers = await openSocket(running.base);
    headers.socket.write('POST /v1/batch HTTP/1.1\r\nhost: x\r\n');
    const headersAnswer = await headers.closed(15_000);
    expect(headersAnswer).toMatch(/^HTTP\/1\.1 408 /);
    expect(headersAnswer).toContain('"code":"request_timeout"');

    const body = await openSocket(running.base);
    body.socket.write(head(100) + '{"batch":[');
    expect(await body.closed(15_000)).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('finishes in-flight requests on stop, answers 503 to requests that still arrive, and becomes unready', async () => {
    const user = randomName('u');
    const first = JSON.stringify({ batch: [{ type: 'identify', userId: user }] });
    const client = await holdSlot(first);
    const stopped = running.gateway.stop();
    expect(running.gateway.health().ready).toBe(false);
    // The rest of the first request, and a second one pipelined behind it.
    const second = JSON.stringify({ batch: [{ type: 'identify', userId: `${user}-late` }] });
    client.socket.write(first.slice(5) + head(second.length) + second);
    const exchange = await client.closed(30_000);
    await stopped;
    const answers = exchange.split(/(?=HTTP\/1\.1 )/);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"success":true\}$/);
    expect(answers[1]).toMatch(/^HTTP\/1\.1 503 /);
    expect(answers[1]).toMatch(/retry-after: 1/i);
    expect(answers[1]).toContain('"code":"shutting_down"');

    // The in-flight call was written to Kafka before its 200.
    const admin = createTestAdmin();
    try {
      const offsets = await admin.fetchTopicOffsets(`${prefix}calls`);
      expect(offsets.reduce((sum, p) => sum + Number(p.high), 0)).toBeGreaterThanOrEqual(1);
    } finally {
      await admin.close();
    }
    expect(running.gateway.health()).toMatchObject({ live: true, ready: false });
  });
});

/** A raw connection for exchanges undici will not make (slow, partial, pipelined). */
describe('gateway: callers without a key cost nothing shared', () => {
  const prefix = randomPrefix();
  let running: Running;
  const KEYED_SLOTS = 4;
  const BODY_KEY_SLOTS = 2;
  const CONNECTIONS = 12;

  beforeAll(async () => {
    const config = makeConfig(prefix, [{ id: 'web', writeKey: WEB_KEY, destinations: ['hooks'] }]);
    running = await startGateway(config, {
      maxInFlightRequests: KEYED_SLOTS,
      maxInFlightKeyInBody: BODY_KEY_SLOTS,
      maxConnections: CONNECTIONS,
      bodyPace: { firstByteTimeoutMs: 3_000, minBytesPerSecond: 1_000 },
    });
  });

  afterAll(async () => {
    await running?.gateway.stop();
  });

  const partial = (headers: string) => `POST /v1/batch HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n${headers}\r\n{"batch":[`;
  const keyed = async () => (await post(running.base, '/v1/identify', { userId: randomName('u') }, { writeKey: WEB_KEY, headers: { connection: 'close' } })).status;

  it('requests without a key header wait in their own small pool: a keyed request is served while they trickle, and they are cut off', async () => {
    const slow = await Promise.all(Array.from({ length: BODY_KEY_SLOTS + 3 }, () => openSocket(running.base)));
    for (const client of slow) client.socket.write(partial(''));
    // The pool is full: the others are refused at once, their connections closed.
    const refused = await waitFor(() => {
      const done = slow.filter((client) => client.received().startsWith('HTTP/1.1 503 '));
      return done.length === 3 ? done : undefined;
    }, { timeoutMs: 10_000, what: 'three requests refused with 503' });
    for (const client of refused) {
      const answer = await client.closed(5_000);
      expect(answer).toMatch(/connection: close/i);
      expect(answer).toContain('"code":"overloaded"');
      expect(answer).toContain('send the key as the HTTP Basic user name');
    }
    // The pool's two still trickle; a request with a key is served.
    expect(slow.filter((client) => client.received() === '')).toHaveLength(BODY_KEY_SLOTS);
    expect(await keyed()).toBe(200);
    // Their bodies are too slow: 408, closed.
    for (const client of slow.filter((c) => !refused.includes(c))) {
      const answer = await client.closed(15_000);
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toContain('the body arrived slower than 1000 bytes a second');
    }
  });

  it('answers an unknown key in the header with 401 before reading the body, and closes the connection', async () => {
    const client = await openSocket(running.base);
    client.socket.write(partial(`authorization: ${basic('wk-unknown')}\r\n`));
    const answer = await client.closed(10_000);
    expect(answer).toMatch(/^HTTP\/1\.1 401 /);
    expect(answer).toMatch(/connection: close/i);
    expect(answer).toContain('unknown write key');
  });

  it('closes the connection of every refusal, whatever the client asked', async () => {
    const refusals: [string, RegExp][] = [
      ['GET /x HTTP/1.1\r\nhost: x\r\nconnection: keep-alive\r\n\r\n', /^HTTP\/1\.1 404 /],
      ['GET /v1/batch HTTP/1.1\r\nhost: x\r\nconnection: keep-alive\r\n\r\n', /^HTTP\/1\.1 405 /],
      [`POST /v1/batch HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\ncontent-encoding: br\r\ncontent-length: 2\r\nconnection: keep-alive\r\n\r\n{}`, /^HTTP\/1\.1 415 /],
      [`POST /v1/batch HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\ncontent-length: 600000\r\nconnection: keep-alive\r\n\r\n`, /^HTTP\/1\.1 413 /],
      [`POST /v1/batch HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\ncontent-length: 1\r\nconnection: keep-alive\r\n\r\n{`, /^HTTP\/1\.1 400 /],
    ];
    for (const [text, status] of refusals) {
      const answer = await rawExchange(running.base, text);
      expect(answer).toMatch(status);
      expect(answer).toMatch(/connection: close/i);
    }
  });

  it('answers a connection that sends no whole request within about 2 s with 408, and closes it', async () => {
    const silent = await openSocket(running.base);
    const halfLine = await openSocket(running.base);
    halfLine.socket.write('POST /v1/ba');
    const opened = Date.now();
    for (const client of [silent, halfLine]) {
      const answer = await client.closed(6_000);
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toContain('no whole request arrived within 2 s of connecting');
    }
    expect(Date.now() - opened).toBeGreaterThanOrEqual(1_500);
  });

  it('keeps slots for other addresses: one address gets at most the cap less an eighth', async () => {
    // 12 slots, 11 per address (gateway-service.ts): 11 idle sockets from 127.0.0.1 and a 12th refused from there,
    // while a keyed request from 127.0.0.2 (another loopback address) is served.
    const idle = await Promise.all(Array.from({ length: CONNECTIONS - 1 }, () => openSocket(running.base)));
    try {
      const refused = await openSocket(running.base).catch(() => undefined);
      if (refused !== undefined) await waitFor(() => refused.socket.closed, { timeoutMs: 1_000, intervalMs: 10, what: 'the 12th connection from 127.0.0.1 closed' });
      expect(refused?.received() ?? '').toBe('');
      const { port } = new URL(running.base);
      const other = connect({ port: Number(port), host: '127.0.0.1', localAddress: '127.0.0.2' });
      let answer = '';
      other.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
      const body = JSON.stringify({ userId: randomName('u') });
      other.write(`POST /v1/identify HTTP/1.1\r\nhost: x\r\nauthorization: ${basic(WEB_KEY)}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      await new Promise<void>((resolve) => other.once('close', () => resolve()));
      expect(answer).toMatch(/^HTTP\/1\.1 200 /);
      // All within the first-request deadline: the 11 from 127.0.0.1 still held their slots.
      expect(idle.filter((client) => client.socket.closed || client.received() !== '')).toHaveLength(0);
    } finally {
      for (const client of idle) client.socket.destroy();
    }
  });

  it('closes connections over the cap as they arrive, and takes new ones once below it', async () => {
    const clients = await Promise.all(Array.from({ length: CONNECTIONS + 1 }, () => openSocket(running.base)));
    try {
      // One more than the cap: at least one is closed at once, without an answer.
      const dropped = await waitFor(() => {
        const gone = clients.filter((client) => client.socket.closed);
        return gone.length > 0 ? gone : undefined;
      }, { timeoutMs: 10_000, what: 'a connection over the cap to be closed' });
      for (const client of dropped) expect(client.received()).toBe('');
      await waitFor(() => running.logs.some((line) => line.includes('connections refused')), { timeoutMs: 5_000, what: 'the refused connection logged' });
    } finally {
      for (const client of clients) client.socket.destroy();
    }
    await waitFor(async () => (await keyed().catch(() => 0)) === 200, { timeoutMs: 10_000, what: 'the gateway to take connections again' });
  });
});

async function openSocket(base: string): Promise<{
  socket: Socket;
  received(): string;
  response(until: RegExp, timeoutMs?: number): Promise<string>;
  closed(timeoutMs: number): Promise<string>;
}> {
  const { port } = new URL(base);
  const socket = connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = '';
  let ended = false;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('utf8');
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    ended = true;
  });
  return {
    socket,
    received: () => received,
    response: (until, timeoutMs = 15_000) =>
      waitFor(() => (until.test(received) ? received : undefined), { timeoutMs, intervalMs: 20, what: `a response matching ${until}` }),
    closed: (timeoutMs) => waitFor(() => (ended ? received : undefined), { timeoutMs, intervalMs: 20, what: 'the server to close the connection' }),
  };
}

async function rawExchange(base: string, text: string): Promise<string> {
  const client = await openSocket(base);
  client.socket.write(text);
  return client.closed(10_000);
}
