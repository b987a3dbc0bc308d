// The circuit gauge across config reloads (docs/metrics.md switchyard_circuit_state): a URL
// that leaves the config leaves the gauge at once, not at the destination's next event,
// so that the "circuit open for 15 minutes" alert never fires for a URL that is gone.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { mutableStore, testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;


let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let healthy: Receiver;
let failing: Receiver;
let metrics: Metrics;
let service: Service | undefined;

beforeAll(async () => {
  kafka = await createTestKafka();
  healthy = await startReceiver();
  failing = await startReceiver();
  failing.replyWith(() => ({ status: 500 }));
});

afterAll(async () => {
  await service?.stop();
  await Promise.all([healthy?.close(), failing?.close()]);
  await kafka?.close();
});

async function circuitSeries(): Promise<Record<string, number>> {
  const { values } = await metrics.circuitState.get();
  return Object.fromEntries(values.map((v) => [`${v.labels.destination}/${v.labels.url_index}`, v.value]));
}

describe('switchyard_circuit_state across reloads', () => {
  it('drops the series of a URL removed by a reload without waiting for an event, and every series of a removed destination', async () => {
    const prefix = randomPrefix();
    const shape = (urls: string[]) => ({
      kafka: { brokers: testBrokers(), clientId: randomName('circuit-reload'), topicPrefix: prefix, partitions: 1 },
      delivery: { timeout: '2s', retryTiers: ['200ms'], maxRetryWindow: '60s', circuitBreaker: { minAttempts: 5 } },
      sources: [{ id: 'web' }],
      destinations: urls.length === 0 ? [] : [{ id: 'pair', type: 'webhooks', settings: { webhooks: urls.map((url) => ({ url })) } }],
    });
    const store = mutableStore(testConfig(shape([healthy.url(), failing.url()]), 'deliver-circuit-reload.test.yaml'));
    metrics = createMetrics({ defaultMetrics: false });
    service = createDelivererService({ config: store, kafka: createKafka(store.current().kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
    await service.start();
    await waitFor(() => service!.health().ready, { timeoutMs: 60_000, what: 'the destination consumer to join' });

    // Five failures of URL #1 (the configured minimum of attempts), one event at a time (the watched request of each counts).
    for (let i = 1; i <= 5; i++) {
      const id = `r-${i}`;
      await kafka.produce(`${prefix}deliveries.pair`, [
        { key: id, value: trackBody(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) } },
      ]);
      await waitFor(() => failing.requests.length === i, { what: `request ${i} at the failing URL` });
    }
    await waitFor(async () => (await circuitSeries())['pair/1'] === 1, { what: 'the circuit of URL #1 to open' });

    // The failing URL leaves the config; no event follows.
    store.set(testConfig(shape([healthy.url()]), 'deliver-circuit-reload.test.yaml'));
    await waitFor(async () => !('pair/1' in (await circuitSeries())), { timeoutMs: 10_000, what: 'the series of the removed URL to go' });
    expect(await circuitSeries()).toEqual({ 'pair/0': 0 });

    // The destination leaves the config: its worker stops and takes its series along.
    store.set(testConfig(shape([]), 'deliver-circuit-reload.test.yaml'));
    await waitFor(async () => Object.keys(await circuitSeries()).length === 0, { timeoutMs: 30_000, what: 'the destination series to go' });
  });
});
