// Segment's own Node library, unchanged, through every role: gateway → calls →
// router (with audiences) → deliveries → deliverer → a real receiver, which gets the
// exact docs/webhooks.md bodies of all six call types, signed.
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Analytics } from '@segment/analytics-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-e2e-node-0001';
const SHARED_SECRET = 'e2e-shared-secret-5f1c';

// What @segment/analytics-node adds to every call's context. The literals below name
// its version: a new version of the library changes them, on purpose.
const LIBRARY_VERSION = '3.1.0';
const EXPECTED: Record<string, string> = {
  identify:
    '{"version":1,"type":"identify","userId":"u-e2e","messageId":"e2e-identify","timestamp":"2026-04-30T08:00:00.000Z","traits":{"plan":"pro","employees":12},"context":{"ip":"203.0.113.9","library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
  track:
    '{"version":1,"type":"track","userId":"u-e2e","messageId":"e2e-track","timestamp":"2026-04-30T08:00:01.000Z","event":"Order Completed","properties":{"total":99.5,"currency":"EUR"},"context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
  page:
    '{"version":1,"type":"page","userId":"u-e2e","messageId":"e2e-page","timestamp":"2026-04-30T08:00:02.000Z","name":"Pricing","category":"Docs","properties":{"path":"/pricing","referrer":"https://example.com/","title":"Pricing","url":"https://example.com/pricing","category":"Docs"},"context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
  screen:
    '{"version":1,"type":"screen","anonymousId":"anon-e2e","messageId":"e2e-screen","timestamp":"2026-04-30T08:00:03.000Z","name":"Home","properties":{"variant":"b"},"context":{"device":{"model":"Pixel 8","type":"android"},"os":{"name":"Android","version":"15"},"app":{"build":"412","name":"Shop","version":"4.1.2"},"library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
  group:
    '{"version":1,"type":"group","userId":"u-e2e","messageId":"e2e-group","timestamp":"2026-04-30T08:00:04.000Z","groupId":"g-7","traits":{"name":"Initech","industry":"Software","employees":50,"Company Size":"mid"},"context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
  alias:
    '{"version":1,"type":"alias","messageId":"e2e-alias","timestamp":"2026-04-30T08:00:05.000Z","Previous ID":"anon-e2e","User ID":"u-e2e","context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"}}}',
};

let receiver: Receiver;
let gateway: GatewayService;
let services: Service[] = [];
/**
 * The `sentAt` of the library's request. NOTE: the gateway's clock is pinned to it
 * (clocks in perfect agreement, no transit time), so the skew correction leaves each
 * call's own timestamp as it is and the bodies are fixed bytes. The correction itself
 * is tested in gateway-segment-client.test.ts.
 */
let sentAtMs: number | undefined;

beforeAll(async () => {
  receiver = await startReceiver();
  const config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('e2e'), topicPrefix: randomPrefix(), partitions: 2 },
      gateway: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'node-backend', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [
        {
          id: 'hooks',
          type: 'webhooks',
          settings: { webhooks: [{ url: receiver.url('/segment'), headers: { 'X-Team': 'growth' } }], sharedSecret: SHARED_SECRET },
        },
      ],
    },
    'end-to-end.test.yaml',
  );
  const deps = testRoleDeps(config);
  gateway = createGatewayService(deps, { now: () => sentAtMs ?? Date.now() });
  // The roles as `switchyard all` composes them, with the gateway's clock pinned.
  services = [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps), gateway];
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'every role to be ready' });
});

afterAll(async () => {
  for (const service of [...services].reverse()) await service.stop();
  await receiver?.close();
});

describe('@segment/analytics-node through every role', () => {
  it('delivers the six call types as the exact docs/webhooks.md bodies, signed', async () => {
    const installed = JSON.parse(readFileSync(new URL('../../node_modules/@segment/analytics-node/package.json', import.meta.url), 'utf8')) as { version: string };
    expect(installed.version, 'the expected bodies name the library version; update them with it').toBe(LIBRARY_VERSION);

    const analytics = new Analytics({ writeKey: WRITE_KEY, host: `http://127.0.0.1:${gateway.port()}`, flushAt: 6, flushInterval: 60_000, maxRetries: 0 });
    const failures: unknown[] = [];
    analytics.on('error', (error) => failures.push(error));
    analytics.on('http_request', (request) => {
      sentAtMs = Date.parse((JSON.parse(request.body as string) as { sentAt: string }).sentAt);
    });
    const at = (second: number) => new Date(Date.UTC(2026, 3, 30, 8, 0, second));
    analytics.identify({ userId: 'u-e2e', messageId: 'e2e-identify', timestamp: at(0), traits: { plan: 'pro', employees: 12 }, context: { ip: '203.0.113.9' } });
    analytics.track({
      userId: 'u-e2e',
      messageId: 'e2e-track',
      timestamp: at(1),
      event: 'Order Completed',
      properties: { total: 99.5, currency: 'EUR' },
      integrations: { All: false, Webhooks: true },
    });
    analytics.page({
      userId: 'u-e2e',
      messageId: 'e2e-page',
      timestamp: at(2),
      category: 'Docs',
      name: 'Pricing',
      properties: { path: '/pricing', referrer: 'https://example.com/', title: 'Pricing', url: 'https://example.com/pricing' },
    });
    analytics.screen({
      anonymousId: 'anon-e2e',
      messageId: 'e2e-screen',
      timestamp: at(3),
      name: 'Home',
      properties: { variant: 'b' },
      context: { device: { model: 'Pixel 8', type: 'android' }, os: { name: 'Android', version: '15' }, app: { build: '412', name: 'Shop', version: '4.1.2' } },
    });
    analytics.group({ userId: 'u-e2e', messageId: 'e2e-group', timestamp: at(4), groupId: 'g-7', traits: { name: 'Initech', industry: 'Software', employees: 50, 'Company Size': 'mid' } });
    analytics.alias({ userId: 'u-e2e', previousId: 'anon-e2e', messageId: 'e2e-alias', timestamp: at(5) });
    await analytics.closeAndFlush({ timeout: 20_000 });
    expect(failures).toEqual([]);

    await waitFor(() => receiver.requests.length >= 6, { what: 'six webhook requests' });
    const byType = new Map(receiver.requests.map((r) => [(JSON.parse(r.text) as { type: string }).type, r]));
    expect([...byType.keys()].sort()).toEqual(['alias', 'group', 'identify', 'page', 'screen', 'track']);
    for (const [type, request] of byType) {
      expect(request.text, type).toBe(EXPECTED[type]);
      expect(request.method).toBe('POST');
      expect(request.path).toBe('/segment');
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['user-agent']).toMatch(/^switchyard\/\d+\.\d+\.\d+/);
      expect(request.headers['x-team']).toBe('growth');
      // As a receiver verifies it: HMAC-SHA1 over the parsed and re-serialized body.
      const expected = createHmac('sha1', SHARED_SECRET).update(JSON.stringify(JSON.parse(request.text)), 'utf8').digest('hex');
      expect(request.headers['x-signature'], type).toBe(expected);
    }
    expect(receiver.requests).toHaveLength(6);
  });
});
