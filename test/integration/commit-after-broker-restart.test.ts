// Regression (found by the chaos harness): a destination whose batch finished while the
// broker was down kept its consumer lag above zero for good — kafkajs's commit after the
// batch failed, nothing new arrived on the partition, and nothing ever committed again
// (so the lag alert fired, and every one of those events would be delivered again after
// the next restart). Now the batch commits once the broker is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivererService, delivererGroupId } from '../../src/delivery/deliverer-service.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestAdmin, createTestProducer, randomName, randomPrefix } from '../support/kafka.js';
import type { TestAdmin } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';
import { topicNames } from '../../src/runtime/topics.js';

const EVENTS = 5;
/** How long the receiver holds each request: long enough to stop the broker meanwhile. */
const HOLD_MS = 8_000;

describe('deliverer commit across a broker restart', () => {
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  let broker: DedicatedBroker;
  let receiver: Receiver;
  let admin: TestAdmin;
  let deliverer: Service;
  let groupId: string;
  const metrics = createMetrics({ defaultMetrics: false });

  beforeAll(async () => {
    broker = await startDedicatedBroker();
    receiver = await startReceiver();
    receiver.reply({ status: 200, delayMs: HOLD_MS });
    const config = testConfig(
      {
        kafka: { brokers: [broker.brokers], clientId: randomName('commit'), topicPrefix: prefix, partitions: 1 },
        delivery: { timeout: '30s', retryTiers: ['1s'], maxRetryWindow: '5m', concurrencyPerDestination: 16 },
        sources: [{ id: 'web' }], // a config needs a source; this test only delivers
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
      },
      'commit.yaml',
    );
    groupId = delivererGroupId(config);
    deliverer = createDelivererService(testRoleDeps(config, { metrics }));
    await deliverer.start();
    admin = createTestAdmin([broker.brokers]);
  });

  afterAll(async () => {
    await deliverer?.stop();
    await admin?.close();
    await receiver?.close();
    await broker?.stop();
  });

  const lag = async (): Promise<number> => {
    const topic = names.deliveries('hooks');
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return topicLag(await admin.fetchTopicOffsets(topic), committed?.partitions ?? []);
  };
  const delivered = async (): Promise<number> =>
    (await metrics.deliveries.get()).values.find((v) => v.labels.destination === 'hooks' && v.labels.result === 'delivered')?.value ?? 0;

  it('commits the finished batch once the broker is back, with no new records to carry the commit', async () => {
    const producer = createTestProducer([broker.brokers]);
    const ids = Array.from({ length: EVENTS }, (_, i) => `c-${i}`);
    await producer.send({
      topic: names.deliveries('hooks'),
      messages: ids.map((id) => ({
        key: id,
        value: `{"version":1,"type":"track","userId":"${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"E"}`,
        headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' },
      })),
    });
    await producer.close();
    await waitFor(() => receiver.requests.length === EVENTS, { timeoutMs: 30_000, what: `${EVENTS} requests held by the receiver` });

    // The broker goes away while the receiver holds the requests: the batch finishes (all
    // delivered) with no broker to commit to.
    await broker.stopProcess();
    await waitFor(async () => (await delivered()) === EVENTS, { timeoutMs: HOLD_MS + 10_000, what: 'every event delivered while the broker is down' });
    await broker.startProcess();

    await waitFor(async () => (await lag()) === 0, { timeoutMs: 45_000, intervalMs: 500, what: `group ${groupId} to commit the delivered batch` });
    // Committed, not delivered a second time.
    expect(receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId).sort()).toEqual(ids);
  }, 120_000);
});
