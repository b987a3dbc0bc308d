// Stopping while a rate-limited destination waits for its next token (docs/webhooks.md#delivery-and-retries with
// `settings.rateLimit`): the stop does not wait for the token, the waiting event gets
// no request, and nothing is lost: the next deliverer picks up where this one stopped.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver, staysQuiet } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
const services: Service[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});

afterAll(async () => {
  for (const service of services) await service.stop();
  await receiver?.close();
  await kafka?.close();
});

describe('stop during a rate-limit wait', () => {
  it('returns without waiting for the token, sends nothing more, and loses nothing', async () => {
    const prefix = randomPrefix();
    const clientId = randomName('rate-stop');
    const shape = (rateLimit: object | undefined) => ({
      kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 1 },
      delivery: { timeout: '2s', retryTiers: ['1s'], maxRetryWindow: '60s' },
      sources: [{ id: 'web' }],
      destinations: [{ id: 'slow', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }], ...(rateLimit === undefined ? {} : { rateLimit }) } }],
    });
    const start = async (rateLimit: object | undefined) => {
      const config = testConfig(shape(rateLimit), 'deliver-rate-stop.test.yaml');
      const service = createDelivererService(
        { config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger() },
        { sampleIntervalMs: 60_000 },
      );
      services.push(service);
      await service.start();
      await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the destination consumer to join' });
      return service;
    };

    // One request per 1000 s: the first event takes the burst, the second waits.
    const limited = await start({ requestsPerSecond: 0.001, burst: 1 });
    const ids = ['s-1', 's-2', 's-3'];
    await kafka.produce(
      `${prefix}deliveries.slow`,
      ids.map((id) => ({ key: id, value: trackBody(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) } })),
    );
    await waitFor(() => receiver.requests.length === 1, { what: 'the first event, within the burst' });
    expect(await staysQuiet(receiver, 500)).toBe(true);

    // The next token is 1000 s away: a stop that waited for it would time the test out.
    await limited.stop();
    expect(receiver.requests).toHaveLength(1);

    // Nothing lost: without the limit, the next deliverer of the group sends the rest.
    await start(undefined);
    await waitFor(() => new Set(receiver.requests.map((r) => r.text)).size === ids.length, { what: 'every event delivered' });
    expect(new Set(receiver.requests.map((r) => r.text))).toEqual(new Set(ids.map(trackBody)));
  }, 90_000);
});
