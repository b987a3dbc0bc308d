// Segment's own Node client library, unchanged, pointed at the gateway: every call
// type arrives in the calls topic with its source, fields and corrected timestamps.
import { Analytics } from '@segment/analytics-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const WRITE_KEY = 'wk-segment-node-0001';
const RECEIVED = Date.UTC(2026, 4, 1, 12, 0, 0);

describe('gateway with @segment/analytics-node', () => {
  const prefix = randomPrefix();
  let gateway: GatewayService;
  let testKafka: Awaited<ReturnType<typeof createTestKafka>>;

  beforeAll(async () => {
    const config = testConfig(
      {
        kafka: { brokers: testBrokers(), topicPrefix: prefix, partitions: 3 },
        gateway: { port: 0, host: '127.0.0.1' },
        sources: [
          { id: 'node-backend', writeKey: WRITE_KEY, destinations: ['hooks'] },
          { id: 'other', writeKey: 'wk-other-0001', destinations: ['hooks'] },
        ],
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
      },
      'segment-client.yaml',
    );
    gateway = createGatewayService(testRoleDeps(config), { now: () => RECEIVED });
    await gateway.start();
    testKafka = await createTestKafka();
  });

  afterAll(async () => {
    await testKafka?.close();
    await gateway?.stop();
  });

  it('receives all six call types, attributed to the write key’s source', async () => {
    const user = randomName('u');
    const analytics = new Analytics({ writeKey: WRITE_KEY, host: `http://127.0.0.1:${gateway.port()}`, flushAt: 6, maxRetries: 0 });
    const failures: unknown[] = [];
    analytics.on('error', (error) => failures.push(error));
    const at = new Date('2026-04-30T08:00:00.000Z');
    analytics.identify({ userId: user, traits: { plan: 'pro', employees: 12 }, timestamp: at });
    analytics.track({ userId: user, event: 'Order Completed', properties: { total: 99.5 }, integrations: { All: false, Webhooks: true } });
    analytics.page({ userId: user, category: 'Docs', name: 'Pricing', properties: { path: '/pricing', url: 'https://example.com/pricing' } });
    analytics.screen({ anonymousId: `${user}-anon`, name: 'Home', context: { device: { model: 'Pixel', type: 'android' } } });
    analytics.group({ userId: user, groupId: 'g-7', traits: { name: 'Initech', 'Company Size': 50 } });
    analytics.alias({ userId: user, previousId: `${user}-anon` });
    await analytics.closeAndFlush({ timeout: 20_000 });
    expect(failures).toEqual([]);

    const stored = (await testKafka.readAll(`${prefix}calls`, { atLeast: 6, timeoutMs: 20_000 })).filter((m) => m.text.includes(user));
    expect(stored).toHaveLength(6);
    expect(stored.every((m) => m.headers['source-id'] === 'node-backend')).toBe(true);
    const byType = new Map(stored.map((m) => [JSON.parse(m.text).type as string, { key: m.key, call: JSON.parse(m.text) as Record<string, unknown> }]));
    expect([...byType.keys()].sort()).toEqual(['alias', 'group', 'identify', 'page', 'screen', 'track']);

    for (const { call } of byType.values()) {
      // The library's messageId and library context survive; the write key does not.
      expect(call.messageId).toEqual(expect.any(String));
      expect(call.context).toMatchObject({ library: { name: '@segment/analytics-node' } });
      expect(call).not.toHaveProperty('writeKey');
      expect(call.receivedAt).toBe('2026-05-01T12:00:00.000Z');
      // sentAt is the request's, as the library sent it.
      expect(call.sentAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const identify = byType.get('identify')!;
    expect(identify.key).toBe(user);
    expect(identify.call.traits).toEqual({ plan: 'pro', employees: 12 });
    // Skew correction: the library's sentAt is the real clock; the gateway's is pinned,
    // so the stored time is RECEIVED − (sentAt − timestamp), exactly.
    const sentAt = Date.parse(identify.call.sentAt as string);
    expect(identify.call.timestamp).toBe(new Date(RECEIVED - (sentAt - at.getTime())).toISOString());

    expect(byType.get('track')!.call).toMatchObject({ event: 'Order Completed', properties: { total: 99.5 }, integrations: { All: false, Webhooks: true } });
    expect(byType.get('page')!.call).toMatchObject({ name: 'Pricing', category: 'Docs', properties: { path: '/pricing', url: 'https://example.com/pricing' } });
    expect(byType.get('screen')!.key).toBe(`${user}-anon`);
    expect(byType.get('screen')!.call).toMatchObject({ name: 'Home', context: { device: { model: 'Pixel', type: 'android' } } });
    expect(byType.get('group')!.call).toMatchObject({ groupId: 'g-7', traits: { name: 'Initech', 'Company Size': 50 } });
    expect(byType.get('alias')!.call).toMatchObject({ userId: user, previousId: `${user}-anon` });
  });
});
