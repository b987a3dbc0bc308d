// switchyard-client over HTTP into the real gateway: the calls land in the calls
// topic attributed to the write key's source, and the gateway's limits and answers
// match what the client expects of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Analytics, AnalyticsDeliveryError } from 'switchyard-client';
import { GATEWAY_ADDED_BYTES } from '../../packages/client/src/http-transport.js';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const WRITE_KEY = 'wk-switchyard-client-0001';
const RECEIVED = Date.UTC(2026, 4, 1, 12, 0, 0);

const prefix = randomPrefix();
let gateway: GatewayService;
let testKafka: Awaited<ReturnType<typeof createTestKafka>>;
let endpoint: string;

beforeAll(async () => {
  const config = testConfig(
    {
      kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 3 },
      gateway: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
    },
    'client-gateway.yaml',
  );
  gateway = createGatewayService(testRoleDeps(config), { now: () => RECEIVED });
  await gateway.start();
  endpoint = `http://127.0.0.1:${gateway.port()}`;
  testKafka = await createTestKafka();
});

afterAll(async () => {
  await testKafka?.close();
  await gateway?.stop();
});

/**
 * The stored calls of one test, told apart by their user id. NOTE: on the suite's busy
 * shared broker a partition just created can stay without a leader for up to about 30 s
 * (seen while other files create and delete hundreds of topics): its offsets cannot be
 * read until then, hence the long wait.
 */
async function storedFor(user: string, atLeast: number) {
  const all = await testKafka.readAll(`${prefix}calls`, { atLeast, timeoutMs: 60_000 });
  return all.filter((m) => m.text.includes(user));
}

describe('switchyard-client → gateway → calls topic', { timeout: 120_000 }, () => {
  it('all six call types arrive, keyed and attributed, with the client messageIds and skew-corrected timestamps', async () => {
    const user = randomName('u');
    const errors: unknown[] = [];
    const analytics = new Analytics(WRITE_KEY, { endpoint, flushAt: 6, maxRetries: 0, onError: (e) => errors.push(e) });
    const at = new Date('2026-04-30T08:00:00.000Z');
    const ids = {
      identify: analytics.identify({ userId: user, traits: { plan: 'pro' }, timestamp: at }),
      track: analytics.track({ userId: user, event: 'Order Completed', properties: { total: 99.5 }, integrations: { All: false, Webhooks: true } }),
      page: analytics.page({ userId: user, name: 'Pricing', properties: { path: '/pricing' } }),
      screen: analytics.screen({ anonymousId: `${user}-anon`, name: 'Home' }),
      group: analytics.group({ userId: user, groupId: 'g-7', traits: { name: 'Initech' } }),
      alias: analytics.alias({ userId: user, previousId: `${user}-anon` }),
    };
    await analytics.close();
    expect(errors).toEqual([]);

    const stored = await storedFor(user, 6);
    expect(stored).toHaveLength(6);
    const byType = new Map(stored.map((m) => [JSON.parse(m.text).type as string, { message: m, call: JSON.parse(m.text) as Record<string, unknown> }]));
    for (const [type, id] of Object.entries(ids)) {
      const entry = byType.get(type);
      expect(entry?.call.messageId, type).toBe(id);
      expect(entry?.message.headers['source-id']).toBe('web');
      expect(entry?.message.key).toBe(type === 'screen' ? `${user}-anon` : user);
      expect(entry?.call).not.toHaveProperty('writeKey');
      expect(entry?.call.context).toMatchObject({ library: { name: 'switchyard-client' } });
      expect(entry?.call.receivedAt).toBe('2026-05-01T12:00:00.000Z');
      expect(entry?.message.value?.length).toBeLessThanOrEqual(32 * 1024);
    }
    // The gateway corrects the client's clock by its sentAt: RECEIVED − (sentAt − timestamp).
    const identify = byType.get('identify')!.call;
    const sentAt = Date.parse(identify.sentAt as string);
    expect(identify.timestamp).toBe(new Date(RECEIVED - (sentAt - at.getTime())).toISOString());
    expect(byType.get('track')!.call).toMatchObject({ event: 'Order Completed', properties: { total: 99.5 }, integrations: { All: false, Webhooks: true } });
    expect(byType.get('alias')!.call).toMatchObject({ userId: user, previousId: `${user}-anon` });
  });

  it('the largest call the client lets through over HTTP is accepted by the gateway, not kept aside as too large', async () => {
    const user = randomName('u');
    const analytics = new Analytics(WRITE_KEY, { endpoint, maxRetries: 0 });
    const probe = analytics.track({ userId: user, event: 'Big', properties: { pad: '' } });
    await analytics.flush();
    const [stored] = await storedFor(user, 1);
    const probeBytes = Buffer.byteLength(JSON.stringify({ ...JSON.parse(stored!.text), receivedAt: undefined, sentAt: undefined }));
    expect(JSON.parse(stored!.text).messageId).toBe(probe);
    const limit = 32 * 1024 - GATEWAY_ADDED_BYTES;

    const pad = 'x'.repeat(limit - probeBytes);
    const id = analytics.track({ userId: user, event: 'Big', properties: { pad } });
    await analytics.close();
    const both = await storedFor(user, 2);
    const big = both.find((m) => JSON.parse(m.text).messageId === id);
    expect(big?.value?.length).toBe(32 * 1024);
    expect(() => new Analytics(WRITE_KEY, { endpoint }).track({ userId: user, event: 'Big', properties: { pad: `${pad}x` } })).toThrow(
      /over the \d+-byte limit per call/,
    );
  });

  it('batches of up to 500 KB are accepted whole', async () => {
    const user = randomName('u');
    const analytics = new Analytics(WRITE_KEY, { endpoint, flushAt: 1_000, maxRetries: 0 });
    for (let i = 0; i < 40; i++) analytics.track({ userId: user, event: 'Bulk', properties: { i, pad: 'b'.repeat(30_000) } });
    await analytics.close();
    const stored = await storedFor(user, 40);
    expect(stored).toHaveLength(40);
  });

  it('an unknown write key: refused with the gateway message, not retried, key not echoed', async () => {
    const analytics = new Analytics('wk-not-configured-77', { endpoint, maxRetries: 5, onError: () => undefined });
    analytics.identify({ userId: randomName('u') });
    const error = (await analytics.close().catch((err: unknown) => err)) as AnalyticsDeliveryError;
    expect(error).toBeInstanceOf(AnalyticsDeliveryError);
    expect(error).toMatchObject({ code: 'rejected', status: 401, attempts: 1 });
    expect(error.message).toContain('HTTP 401: unauthorized: unknown write key');
    expect(error.message).not.toContain('wk-not-configured-77');
  });
});
