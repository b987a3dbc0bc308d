// Copies of an event its destination already took (docs/webhooks.md#duplicates), through
// a real deliverer and broker: records written again with the same messageId (as the
// router does after a crash between its write and its commit) are finished without a
// request and counted in switchyard_duplicates_skipped_total; an event whose first copy
// was not delivered is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

const body = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let metrics: Metrics;
let service: Service;
let receiver: Receiver;

function produce(ids: string[]) {
  return kafka.produce(
    `${prefix}deliveries.hook`,
    ids.map((id) => ({ key: 'u-1', value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

const arrivals = (id: string) => receiver.requests.filter((r) => (JSON.parse(r.text) as { messageId: string }).messageId === id).length;

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
  prefix = randomPrefix();
  const config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('dups'), topicPrefix: prefix, partitions: 1 },
      delivery: { timeout: '2s', retryTiers: ['500ms'], maxRetryWindow: '60s', concurrencyPerDestination: 4 },
      sources: [{ id: 'web' }],
      destinations: [{ id: 'hook', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
    },
    'deliver-duplicates.test.yaml',
  );
  metrics = createMetrics({ defaultMetrics: false });
  service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
  await service.start();
  await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the delivery consumer to join' });
}, 90_000);

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await kafka?.close();
});

describe('copies of delivered events', () => {
  it('skips copies of what the destination took, and sends a copy of what it did not take', { timeout: 60_000 }, async () => {
    // e-3's first request gets a 500: it was not taken when its copy comes.
    receiver.replyWith((request) => ((JSON.parse(request.text) as { messageId: string }).messageId === 'e-3' && arrivals('e-3') === 1 ? { status: 500 } : { status: 200 }));
    await produce(['e-1', 'e-2', 'e-3']);
    await waitFor(() => arrivals('e-1') === 1 && arrivals('e-2') === 1 && arrivals('e-3') === 1, { timeoutMs: 30_000, what: 'the first requests' });

    await produce(['e-1', 'e-2', 'e-3', 'e-4']);
    await waitFor(() => arrivals('e-4') === 1, { timeoutMs: 30_000, what: 'e-4, written after the copies' });
    expect([arrivals('e-1'), arrivals('e-2')]).toEqual([1, 1]);
    // e-3 is sent again: by its copy, or by its retry; whichever comes second is then skipped.
    await waitFor(() => arrivals('e-3') === 2, { timeoutMs: 30_000, what: 'e-3 sent again' });
    // Skipped: the copies of e-1 and e-2, and e-3's retry record or its copy, whichever came second.
    const skipped = async () => (await metrics.duplicatesSkipped.get()).values.find((v) => v.labels.destination === 'hook')?.value ?? 0;
    await waitFor(async () => (await skipped()) === 3, { timeoutMs: 30_000, what: 'three copies skipped' });
    expect(arrivals('e-3')).toBe(2);
  });
});
