// Topics at any scale: the deliverer creates its destinations' topics in requests a
// KRaft controller accepts (at most 10,000 partitions each), and a destination whose
// topics cannot be created is reported while the others deliver.
import { Admin } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';
import { createTestKafka, createTestProducer, randomName, randomPrefix, testBrokers, testClientOptions } from '../support/kafka.js';
import { errorTypes } from '../../src/kafka/commit.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const body = (id: string) => `{"version":1,"type":"track","userId":"u","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"E"}`;
const deliveryHeaders = (id: string) => ({ 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' });

function delivererConfig(brokers: string[], prefix: string, partitions: number, ids: readonly string[], url: string): Config {
  return testConfig({
    kafka: { brokers, clientId: randomName('scale'), topicPrefix: prefix, partitions },
    delivery: { retryTiers: ['10s'], maxRetryWindow: '1m', concurrencyPerDestination: 4 },
    sources: [{ id: 'web', destinations: [...ids] }],
    destinations: ids.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url }] } })),
  });
}

const messageIds = (receiver: Receiver) => new Set(receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId));

describe('a deliverer whose destinations need more than 10,000 partitions', () => {
  // NOTE: few topics with many partitions, on a broker of its own: 30 destinations of 3
  // topics (deliveries, one retry tier, dead letters) at 120 partitions make 10,800.
  const DESTINATIONS = 30;
  const PARTITIONS = 120;
  let broker: DedicatedBroker;
  let admin: Admin;
  let receiver: Receiver;
  let deliverer: Service | undefined;

  beforeAll(async () => {
    broker = await startDedicatedBroker({ heapMb: 1_024 });
    admin = new Admin(testClientOptions('scale-test', [broker.brokers]));
    receiver = await startReceiver();
  }, 180_000);

  afterAll(async () => {
    await deliverer?.stop();
    await receiver?.close();
    await admin?.close();
    await broker?.stop();
  }, 120_000);

  it('becomes ready and delivers to each destination', async () => {
    const prefix = randomPrefix();
    const ids = Array.from({ length: DESTINATIONS }, (_, i) => `d${i}`);
    const config = delivererConfig([broker.brokers], prefix, PARTITIONS, ids, receiver.url('/hook'));
    const topics = ids.flatMap((id) => [`${prefix}deliveries.${id}`, `${prefix}deliveries.${id}.retry.10s`, `${prefix}deliveries.${id}.dlq`]);
    expect(topics.length * PARTITIONS).toBeGreaterThan(10_000);
    // What the deliverer used to send, one request for all of them, this broker refuses
    // (as a whole: none of them is made).
    const refused = await admin.createTopics({ topics, partitions: PARTITIONS, replicas: 1 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(errorTypes(refused)).toContain('POLICY_VIOLATION');
    expect((await admin.listTopics()).filter((topic) => topic.startsWith(prefix))).toEqual([]);

    deliverer = createDelivererService(testRoleDeps(config), { sampleIntervalMs: 60_000 });
    await deliverer.start();
    await waitFor(() => deliverer!.health().ready, { timeoutMs: 120_000, what: 'the deliverer to join its group on 7,200 partitions' });
    const made = new Set(await admin.listTopics());
    expect(topics.filter((topic) => !made.has(topic))).toEqual([]);

    const producer = createTestProducer([broker.brokers]);
    try {
      await producer.sendBatch({
        topicMessages: ids.map((id, i) => ({ topic: `${prefix}deliveries.${id}`, messages: [{ key: `u-${i}`, value: body(`to-${id}`), headers: deliveryHeaders(`to-${id}`) }] })),
      });
    } finally {
      await producer.close();
    }
    await waitFor(() => messageIds(receiver).size === DESTINATIONS, { timeoutMs: 60_000, what: `one event delivered to each of the ${DESTINATIONS} destinations` });
    expect([...messageIds(receiver)].sort()).toEqual(ids.map((id) => `to-${id}`).sort());
  }, 300_000);
});

describe('a destination whose topics cannot be created', () => {
  let kafka: Awaited<ReturnType<typeof createTestKafka>>;
  let receiver: Receiver;

  beforeAll(async () => {
    kafka = await createTestKafka();
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await receiver?.close();
    await kafka?.close();
  });

  it('is reported (log, gauge, /readyz detail) while the others deliver, and delivers once its topics can be made', async () => {
    const prefix = randomPrefix();
    // Someone else's topic whose name differs from `deliveries.blocked` only by "." and
    // "_": Kafka refuses to create the latter (their metric names would collide).
    const squatter = `${prefix}deliveries_blocked`;
    await kafka.createTopic(squatter, 1);
    const config = delivererConfig(testBrokers(), prefix, 2, ['open', 'blocked'], receiver.url('/hook'));
    const metrics = createMetrics({ defaultMetrics: false });
    const deliverer = createDelivererService(testRoleDeps(config, { metrics }), { sampleIntervalMs: 60_000, reconcileRetryMs: 500 });
    try {
      await deliverer.start();
      await waitFor(() => deliverer.health().ready, { timeoutMs: 60_000, what: 'the deliverer to be ready for the other destination' });
      const health = deliverer.health();
      expect(health.detail).toMatch(/^delivering for the other destinations; the topics of blocked \(INVALID_TOPIC_EXCEPTION: .*\) could not be created, trying again every 500 ms$/);
      const gauge = (await metrics.registry.getSingleMetric('switchyard_destination_topics_unavailable')!.get()).values;
      expect(gauge).toEqual([{ labels: { destination: 'blocked' }, value: 1 }]);

      await kafka.produce(`${prefix}deliveries.open`, [{ key: 'u', value: body('to-open'), headers: deliveryHeaders('to-open') }]);
      await waitFor(() => messageIds(receiver).has('to-open'), { what: 'the other destination to deliver' });

      // The obstacle goes: the next try makes the topics, and the destination delivers.
      await kafka.admin.deleteTopics({ topics: [squatter] });
      await waitFor(() => deliverer.health().detail === undefined, { timeoutMs: 60_000, what: 'the blocked destination\'s topics to be made' });
      expect((await metrics.registry.getSingleMetric('switchyard_destination_topics_unavailable')!.get()).values).toEqual([]);
      await kafka.produce(`${prefix}deliveries.blocked`, [{ key: 'u', value: body('to-blocked'), headers: deliveryHeaders('to-blocked') }]);
      await waitFor(() => messageIds(receiver).has('to-blocked'), { timeoutMs: 60_000, what: 'the once blocked destination to deliver' });
    } finally {
      await deliverer.stop();
    }
  }, 180_000);
});
