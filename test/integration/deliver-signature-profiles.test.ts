// `signing: custom` and `signing: [standard, custom]` against a real broker and
// receivers that verify as docs/webhooks.md#custom-signatures tells them to (the
// verification below is the docs' code, not Switchyard's), and with the official
// `standardwebhooks` package for the Standard Webhooks half.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
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
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const CUSTOM_SECRET = 'custom-secret-2b8f41';
const LEGACY_SECRET = 'legacy-secret-c09e7d';
const WHSEC = 'whsec_bmV3LXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';

/** docs/webhooks.md#custom-signatures, as a receiver copies it. */
function verifiedCustom(rawBody: Buffer, headers: IncomingHttpHeaders, secret: string): boolean {
  const timestamp = headers['x-webhook-timestamp'];
  const header = headers['x-webhook-signature'];
  if (typeof timestamp !== 'string' || typeof header !== 'string') return false;
  const hmac = createHmac('sha512', secret).update(`${timestamp}.`).update(rawBody);
  const expected = Buffer.from(`v1=${hmac.digest('base64')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A receiver that knew the old sender's GitHub-style signature: prefix `sha256=`, hex HMAC-SHA256 of the body. */
function verifiedLegacy(rawBody: Buffer, headers: IncomingHttpHeaders): boolean {
  const header = headers['x-hub-signature-256'];
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', LEGACY_SECRET).update(rawBody).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function verifiedStandard(rawBody: Buffer, headers: IncomingHttpHeaders): boolean {
  try {
    new Webhook(WHSEC).verify(rawBody.toString('utf8'), headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
let customReceiver: Receiver;
let dualReceiver: Receiver;
const verdicts: { custom: boolean[]; standard: boolean[]; legacy: boolean[] } = { custom: [], standard: [], legacy: [] };

async function delivered(destination: string): Promise<number> {
  const { values } = await metrics.deliveries.get();
  return values.filter((v) => v.labels.destination === destination && v.labels.result === 'delivered').reduce((sum, v) => sum + v.value, 0);
}

function produce(destination: string, ids: readonly string[]) {
  return kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({ key: 'u-1', value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

beforeAll(async () => {
  kafka = await createTestKafka();
  customReceiver = await startReceiver();
  dualReceiver = await startReceiver();
  customReceiver.reply((req, res, raw) => {
    const ok = verifiedCustom(raw, req.headers, CUSTOM_SECRET);
    verdicts.custom.push(ok);
    res.writeHead(ok ? 200 : 401).end();
  });
  dualReceiver.reply((req, res, raw) => {
    const standard = verifiedStandard(raw, req.headers);
    const legacy = verifiedLegacy(raw, req.headers);
    verdicts.standard.push(standard);
    verdicts.legacy.push(legacy);
    res.writeHead(standard && legacy ? 200 : 401).end();
  });
  prefix = randomPrefix();
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('signature'), topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '2s', retryTiers: ['30s'], maxRetryWindow: '5m', concurrencyPerDestination: 8 },
    sources: [{ id: 'web' }],
    destinations: [
      {
        id: 'custom',
        type: 'webhooks',
        settings: {
          webhooks: [{ url: customReceiver.url() }],
          sharedSecret: CUSTOM_SECRET,
          signing: 'custom',
          signature: { header: 'X-Webhook-Signature', algorithm: 'sha512', encoding: 'base64', prefix: 'v1=', content: '{timestamp}.{body}', timestampHeader: 'X-Webhook-Timestamp' },
        },
      },
      {
        id: 'dual',
        type: 'webhooks',
        settings: {
          webhooks: [{ url: dualReceiver.url() }],
          sharedSecret: WHSEC,
          signing: ['standard', 'custom'],
          signature: { header: 'X-Hub-Signature-256', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=', content: '{body}', secret: LEGACY_SECRET },
        },
      },
    ],
  };
  const config: Config = testConfig(doc, 'deliver-signature-profiles.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
});

afterAll(async () => {
  await service?.stop();
  await customReceiver?.close();
  await dualReceiver?.close();
  await kafka?.close();
});

describe('signature profiles', () => {
  it('signing: custom: a receiver written from the docs verifies every request, and the body arrives as produced', async () => {
    const ids = ['c-1', 'c-2', 'c-3'];
    const started = Math.floor(Date.now() / 1000);
    await produce('custom', ids);
    await waitFor(async () => (await delivered('custom')) === ids.length, { what: 'every event delivered' });
    expect(verdicts.custom).toEqual([true, true, true]);
    for (const request of customReceiver.requests) {
      expect(Number(request.headers['x-webhook-timestamp'])).toBeGreaterThanOrEqual(started);
      expect(request.headers).not.toHaveProperty('x-signature');
      expect(ids.map(body)).toContain(request.text);
    }
  });

  it('signing: [standard, custom]: each signature verifies alone on the same request', async () => {
    await produce('dual', ['d-1', 'd-2']);
    await waitFor(async () => (await delivered('dual')) === 2, { what: 'both events delivered' });
    expect(verdicts.standard).toEqual([true, true]);
    expect(verdicts.legacy).toEqual([true, true]);
    for (const request of dualReceiver.requests) {
      expect(request.headers['webhook-id']).toMatch(/^d-[12]$/);
      expect(request.headers['x-hub-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/);
    }
  });
});
