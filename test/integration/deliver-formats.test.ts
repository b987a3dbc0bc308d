// Request formats against a real broker and receivers made here on 127.0.0.1
// (docs/webhooks.md#batches, #compression): ndjson batches, gzip bodies signed over the
// bytes sent, parsed by the receiver back to exactly the bodies produced.
import { createHmac } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
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

const SECRET = 'format-secret-71ad';
const IDS = ['f-1', 'f-2', 'f-3', 'f-4', 'f-5'] as const;
const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Ünïcode ✓","properties":{"n":"${id}"}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
const receivers: Record<string, Receiver> = {};
const DESTINATIONS = ['ndjson-gzip', 'json-gzip', 'ndjson'] as const;

async function delivered(destination: string): Promise<number> {
  const { values } = await metrics.deliveries.get();
  return values.filter((v) => v.labels.destination === destination && v.labels.result === 'delivered').reduce((sum, v) => sum + v.value, 0);
}

beforeAll(async () => {
  kafka = await createTestKafka();
  for (const id of DESTINATIONS) receivers[id] = await startReceiver();
  prefix = randomPrefix();
  const batch = { maxEvents: 5, maxWait: '300ms', format: 'ndjson' };
  const settings: Record<(typeof DESTINATIONS)[number], Record<string, unknown>> = {
    'ndjson-gzip': { batch, compression: 'gzip' },
    'json-gzip': { compression: 'gzip' },
    ndjson: { batch },
  };
  const doc = {
    kafka: { brokers: testBrokers(), clientId: randomName('formats'), topicPrefix: prefix, partitions: 1 },
    delivery: { timeout: '2s', retryTiers: ['30s'], maxRetryWindow: '5m', concurrencyPerDestination: 8 },
    sources: [{ id: 'web' }],
    destinations: DESTINATIONS.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: receivers[id]!.url() }], sharedSecret: SECRET, ...settings[id] } })),
  };
  const config: Config = testConfig(doc, 'deliver-formats.test.yaml');
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
  for (const id of DESTINATIONS) {
    await kafka.produce(
      `${prefix}deliveries.${id}`,
      IDS.map((m) => ({ key: 'u-1', value: body(m), headers: { 'source-id': 'web', 'message-id': m, attempt: '0', 'first-attempt-at': '' } })),
    );
  }
  for (const id of DESTINATIONS) await waitFor(async () => (await delivered(id)) === IDS.length, { what: `the events of ${id} delivered` });
});

afterAll(async () => {
  await service?.stop();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await kafka?.close();
});

/** X-Signature as docs/webhooks.md#signatures says: hex HMAC-SHA1 of the bytes received. */
const signatureOf = (raw: Buffer) => createHmac('sha1', SECRET).update(raw).digest('hex');

describe('request formats', () => {
  it('ndjson + gzip: Content-Encoding gzip, signed over the compressed bytes, one body per line exactly as produced', () => {
    const requests = receivers['ndjson-gzip']!.requests;
    const lines: string[] = [];
    for (const request of requests) {
      expect(request.headers['content-type']).toBe('application/x-ndjson');
      expect(request.headers['content-encoding']).toBe('gzip');
      expect(request.headers['x-signature']).toBe(signatureOf(request.body));
      const text = gunzipSync(request.body).toString('utf8');
      expect(text.endsWith('\n')).toBe(true);
      lines.push(...text.slice(0, -1).split('\n'));
    }
    expect(lines).toEqual(IDS.map(body));
  });

  it('json + gzip: each body, gunzipped, is exactly the one produced', () => {
    const requests = receivers['json-gzip']!.requests;
    expect(requests).toHaveLength(IDS.length);
    for (const request of requests) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['content-encoding']).toBe('gzip');
      expect(request.headers['x-signature']).toBe(signatureOf(request.body));
    }
    expect(requests.map((r) => gunzipSync(r.body).toString('utf8')).sort()).toEqual(IDS.map(body));
  });

  it('ndjson without compression: the lines parse back to exactly the bodies', () => {
    const requests = receivers.ndjson!.requests;
    const lines = requests.flatMap((r) => {
      expect(r.headers['content-encoding']).toBeUndefined();
      expect(r.headers['x-signature']).toBe(signatureOf(r.body));
      return r.text.split('\n').filter((line) => line !== '');
    });
    expect(lines.map((line) => JSON.stringify(JSON.parse(line)))).toEqual(IDS.map(body));
  });
});
