// The deliverer over time: config reloads add and pause destinations without a
// restart, a hanging destination does not hold up another, and stop() drains.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore, watchedConfigStore } from '../../src/config/store.js';
import type { ConfigStore } from '../../src/config/store.js';
import { createDelivererService, delivererGroupId } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver, staysQuiet } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const body = (id: string) => `{"version":1,"type":"identify","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","traits":{"plan":"pro"}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;

function configDoc(prefix: string, clientId: string, destinations: { id: string; url: string; enabled?: boolean }[], timeout = '20s') {
  return {
    kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 2 },
    delivery: { timeout, retryTiers: ['200ms'], maxRetryWindow: '30s', concurrencyPerDestination: 4 },
    sources: [{ id: 'web' }], // a config needs a source; this test only delivers
    destinations: destinations.map((d) => ({ id: d.id, type: 'webhooks', enabled: d.enabled ?? true, settings: { webhooks: [{ url: d.url }] } })),
  };
}

function load(doc: unknown, file = 'lifecycle.test.yaml'): Config {
  return testConfig(doc, file);
}

function startService(store: ConfigStore, metrics: Metrics): Service {
  const config = store.current();
  return createDelivererService({ config: store, kafka: createKafka(config.kafka, silentLogger()), metrics, logger: silentLogger() }, { sampleIntervalMs: 60_000 });
}

async function produce(prefix: string, destination: string, ids: string[]) {
  await kafka.produce(
    `${prefix}deliveries.${destination}`,
    ids.map((id) => ({ key: `u-${id}`, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
  );
}

const messageIds = (receiver: Receiver) => new Set(receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId));

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  await kafka?.close();
});

describe('config reloads and isolation', () => {
  const prefix = randomPrefix();
  const clientId = randomName('lifecycle');
  const file = join(mkdtempSync(join(tmpdir(), 'switchyard-lifecycle-')), 'switchyard.yaml');
  let a: Receiver;
  let b: Receiver;
  let stuck: Receiver;
  let store: ConfigStore;
  let service: Service;

  beforeAll(async () => {
    [a, b, stuck] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
    stuck.reply('hang');
    const doc = configDoc(prefix, clientId, [
      { id: 'a', url: a.url() },
      { id: 'stuck', url: stuck.url() },
    ]);
    writeConfigFile(doc, file);
    store = watchedConfigStore({ file, initial: load(doc, file), env: {}, logger: silentLogger(), intervalMs: 100 });
    service = startService(store, createMetrics({ defaultMetrics: false }));
    await service.start();
    await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to be ready' });
  });

  afterAll(async () => {
    // The hanging receiver first: its connections drop, so stop() has nothing to wait for.
    await stuck?.close();
    await service?.stop();
    store?.close();
    await Promise.all([a?.close(), b?.close()]);
  });

  it('a destination that hangs does not hold up another', async () => {
    await produce(prefix, 'stuck', Array.from({ length: 10 }, (_, i) => `stuck-${i}`));
    await waitFor(() => stuck.requests.length >= 4, { what: 'the stuck destination to fill its permits' });
    const ids = Array.from({ length: 40 }, (_, i) => `a-${i}`);
    await produce(prefix, 'a', ids);
    await waitFor(() => messageIds(a).size === ids.length, { what: 'every event of the healthy destination' });
    // All the while the stuck receiver answered nothing, and holds only its own permits.
    expect(stuck.requests).toHaveLength(4);
  });

  it('starts delivering for a destination added to the config, without a restart', async () => {
    writeConfigFile(
      configDoc(prefix, clientId, [
        { id: 'a', url: a.url() },
        { id: 'stuck', url: stuck.url() },
        { id: 'b', url: b.url() },
      ]),
      file,
    );
    await waitFor(async () => (await kafka.admin.listTopics()).includes(`${prefix}deliveries.b`), { what: 'the new destination topic' });
    await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the new consumer to join' });
    await produce(prefix, 'b', ['b-1', 'b-2']);
    await waitFor(() => messageIds(b).size === 2, { what: 'the new destination to get its events' });
    expect(b.requests.map((r) => r.text).sort()).toEqual([body('b-1'), body('b-2')]);
  });

  it('a disabled destination keeps its events until it is enabled again', async () => {
    const current = (enabledB: boolean) =>
      configDoc(prefix, clientId, [
        { id: 'a', url: a.url() },
        { id: 'stuck', url: stuck.url() },
        { id: 'b', url: b.url(), enabled: enabledB },
      ]);
    writeConfigFile(current(false), file);
    await waitFor(() => store.current().destinations.find((d) => d.id === 'b')?.enabled === false, { what: 'the reload' });
    // One group for every destination: b's topics leave its members' assignment.
    const topicOfB = `${prefix}deliveries.b`;
    await waitFor(
      async () => {
        const [group] = (await kafka.admin.describeGroups([delivererGroupId(store.current())])).groups;
        return group?.state === 'Stable' && group.members.length > 0 && group.members.every((m) => !m.assignedTopics.includes(topicOfB));
      },
      { what: 'the consumer to drop b from its subscription' },
    );
    const before = b.requests.length;
    await produce(prefix, 'b', ['b-3']);
    expect(await staysQuiet(b, 1_000)).toBe(true);
    writeConfigFile(current(true), file);
    await waitFor(() => messageIds(b).has('b-3'), { timeoutMs: 60_000, what: 'the held event once b is enabled again' });
    expect(b.requests.length).toBe(before + 1);
  });
});

describe('stop()', () => {
  it('lets requests in flight finish, commits them, and leaves nothing to redeliver', async () => {
    const prefix = randomPrefix();
    const clientId = randomName('drain');
    const receiver = await startReceiver();
    receiver.reply({ status: 200, delayMs: 700 });
    const config = load(configDoc(prefix, clientId, [{ id: 'drain', url: receiver.url() }], '5s'));
    const metrics = createMetrics({ defaultMetrics: false });
    const first = startService(staticConfigStore(config), metrics);
    await first.start();
    await waitFor(() => first.health().ready, { timeoutMs: 60_000, what: 'the deliverer to be ready' });
    const ids = ['d-1', 'd-2', 'd-3'];
    await produce(prefix, 'drain', ids);
    await waitFor(() => receiver.requests.length === 3, { what: 'three requests in flight' });

    await first.stop();
    const { values } = await metrics.deliveries.get();
    expect(values.find((v) => v.labels.result === 'delivered')?.value).toBe(3);
    const [committed] = await kafka.admin.fetchOffsets({ groupId: delivererGroupId(config), topics: [`${prefix}deliveries.drain`] });
    expect(committed!.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0)).toBe(3);

    // A new deliverer in the same group finds nothing left to send.
    receiver.reply({ status: 200 });
    const second = startService(staticConfigStore(config), createMetrics({ defaultMetrics: false }));
    await second.start();
    await waitFor(() => second.health().ready, { timeoutMs: 60_000, what: 'the second deliverer to be ready' });
    await produce(prefix, 'drain', ['d-4']);
    await waitFor(() => messageIds(receiver).has('d-4'), { what: 'a new event through the second deliverer' });
    await second.stop();
    expect(receiver.requests.map((r) => (JSON.parse(r.text) as { messageId: string }).messageId).sort()).toEqual(['d-1', 'd-2', 'd-3', 'd-4']);
    await receiver.close();
  });
});
