// A source's limits at a real gateway and broker (sources[].limits, docs/configuration.md#sources):
// over them 429 with Retry-After, the refused requests write nothing (counted on the
// topics' end offsets), the throttle metric counts them, and a reload applies new limits.
import { connect } from 'node:net';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import type { ConfigStore } from '../../src/config/store.js';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { testConfig } from '../support/config.js';
import { createTestAdmin, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const TIGHT_KEY = 'wk-limits-tight-0001';
const BYTES_KEY = 'wk-limits-bytes-0001';

function configWith(prefix: string, tight: Record<string, unknown>): Config {
  return testConfig({
    kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 1, replicationFactor: 1 },
    gateway: { port: 0, host: '127.0.0.1' },
    sources: [
      // 0.1 call a second and 30 s of it: 3 calls at once, one more every 10 s.
      { id: 'tight', writeKey: TIGHT_KEY, limits: tight },
      // 1 KB a second and 2 s of it: 2 KB at once.
      { id: 'bytes', writeKey: BYTES_KEY, limits: { bytesPerSecond: '1KB', burst: 2 } },
    ],
  });
}

const TIGHT = { callsPerSecond: 0.1, burst: 30 };

describe('gateway: limits per source', () => {
  const prefix = randomPrefix();
  let current: Config;
  let gateway: GatewayService;
  let metrics: Metrics;
  let base: string;

  beforeAll(async () => {
    current = configWith(prefix, TIGHT);
    const store: ConfigStore = { current: () => current, onChange: () => () => undefined, close: () => undefined };
    metrics = createMetrics({ defaultMetrics: false });
    gateway = createGatewayService({ config: store, kafka: createKafka(current.kafka, silentLogger()), metrics, logger: silentLogger() });
    await gateway.start();
    base = `http://127.0.0.1:${gateway.port()}`;
  });

  afterAll(async () => {
    await gateway?.stop();
  });

  async function post(path: string, body: string, writeKey: string | undefined): Promise<{ status: number; retryAfter: string | undefined; json: Record<string, unknown> }> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (writeKey !== undefined) headers.authorization = `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;
    const res = await request(`${base}${path}`, { method: 'POST', headers, body });
    const retryAfter = res.headers['retry-after'];
    return { status: res.statusCode, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, json: (await res.body.json()) as Record<string, unknown> };
  }

  /** Records on `calls` and `calls.invalid`, from their end offsets. */
  async function written(): Promise<number> {
    const admin = createTestAdmin();
    try {
      let sum = 0;
      for (const topic of [`${prefix}calls`, `${prefix}calls.invalid`]) for (const p of await admin.fetchTopicOffsets(topic)) sum += Number(p.high);
      return sum;
    } finally {
      await admin.close();
    }
  }

  const identify = () => JSON.stringify({ userId: randomName('u') });
  const throttled = async (source: string) => (await metrics.gatewayThrottled.get()).values.find((v) => v.labels.source === source)?.value ?? 0;

  it('answers 429 with Retry-After over callsPerSecond, and the refused requests write nothing', async () => {
    for (let i = 0; i < 3; i++) expect((await post('/v1/identify', identify(), TIGHT_KEY)).status).toBe(200);
    expect(await written()).toBe(3);

    const refused = await post('/v1/identify', identify(), TIGHT_KEY);
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(9);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(10);
    expect(refused.json).toMatchObject({ success: false, code: 'rate_limited' });
    expect(refused.json.message).toMatch(/^source "tight" is over its callsPerSecond \(sources\[\]\.limits\); nothing of this request was written: send it again after the Retry-After delay \(\d+ s\)$/);
    // The same with the key in the body, a batch, and a body that is not JSON (not kept).
    expect((await post('/v1/identify', JSON.stringify({ writeKey: TIGHT_KEY, userId: 'u-1' }), undefined)).status).toBe(429);
    expect((await post('/v1/batch', JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'E' }] }), TIGHT_KEY)).status).toBe(429);
    expect((await post('/v1/batch', '{"batch":[', TIGHT_KEY)).status).toBe(429);
    expect(await written()).toBe(3);
    expect(await throttled('tight')).toBe(4);
  });

  it('answers 429 over bytesPerSecond, counting what the request would write', async () => {
    const call = (userId: string) => JSON.stringify({ userId, traits: { note: 'x'.repeat(1_400) } });
    const before = await written();
    expect((await post('/v1/identify', call(randomName('u')), BYTES_KEY)).status).toBe(200);
    const refused = await post('/v1/identify', call(randomName('u')), BYTES_KEY);
    expect(refused.status).toBe(429);
    expect(refused.json.message).toMatch(/is over its bytesPerSecond/);
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(await written()).toBe(before + 1);
    expect(await throttled('bytes')).toBe(1);
  });

  it('lets a batch larger than the burst pass on full buckets, then refuses before reading the next body', async () => {
    current = configWith(prefix, { callsPerSecond: 0.1, burst: 20 });
    // New limits: full buckets of 2 calls; a batch of 5 passes and leaves a debt of 3.
    const before = await written();
    const batch = JSON.stringify({ batch: Array.from({ length: 5 }, () => ({ type: 'track', userId: randomName('u'), event: 'E' })) });
    expect((await post('/v1/batch', batch, TIGHT_KEY)).status).toBe(200);
    const refused = await post('/v1/identify', identify(), TIGHT_KEY);
    expect(refused.status).toBe(429);
    // The debt of 3 and one more call, at 0.1 a second.
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(39);
    // Headers that announce a body that never comes: answered at once, the body not awaited.
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.write(`POST /v1/identify HTTP/1.1\r\nhost: x\r\nauthorization: Basic ${Buffer.from(`${TIGHT_KEY}:`).toString('base64')}\r\ncontent-length: 100\r\n\r\n`);
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    expect(answer).toMatch(/^HTTP\/1\.1 429 /);
    expect(await written()).toBe(before + 5);
  });

  it('applies limits changed by a reload to the next request', async () => {
    current = configWith(prefix, { callsPerSecond: 1_000, burst: 1 });
    expect((await post('/v1/identify', identify(), TIGHT_KEY)).status).toBe(200);
  });
});
