// A config change on disk reaches a running router: a destination added to a source
// gets its topics and the calls that follow, without a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { watchedConfigStore } from '../../src/config/store.js';
import type { ConfigStore } from '../../src/config/store.js';
import { createKafka } from '../../src/kafka/index.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createRouterService } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const T0 = '2026-05-01T12:00:00.000Z';
const hook = (name: string) => ({ type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${name}` }] } });
const call = (id: string) => `{"type":"track","userId":"u-1","messageId":"${id}","timestamp":"${T0}","event":"Order Completed"}`;
const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"${T0}","event":"Order Completed"}`;

describe('router hot reload', () => {
  let tk: Awaited<ReturnType<typeof createTestKafka>>;
  let store: ConfigStore;
  let router: Service;
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  const shape = (sourceDestinations: string[]) => ({
    kafka: { brokers: testBrokers(), clientId: randomName('reload'), topicPrefix: prefix, partitions: 2 },
    sources: [{ id: 'web', destinations: sourceDestinations }],
    destinations: [
      { id: 'first', ...hook('first') },
      ...(sourceDestinations.includes('second') ? [{ id: 'second', ...hook('second') }] : []),
    ],
  });
  let file: string;

  beforeAll(async () => {
    tk = await createTestKafka();
    const base = shape(['first']);
    file = writeConfigFile(base);
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    store = watchedConfigStore({ file, initial: loaded.config, env: {}, logger: silentLogger(), intervalMs: 100 });
    router = createRouterService({ config: store, kafka: createKafka(loaded.config.kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger() });
    await router.start();
  });

  afterAll(async () => {
    await router?.stop();
    store?.close();
    await tk?.close();
  });

  it('routes calls to a destination added to the file while running', async () => {
    await tk.produce(names.calls, [{ key: 'u-1', value: call('m-before'), headers: { 'source-id': 'web' } }]);
    const before = await tk.readAll(names.deliveries('first'), { atLeast: 1 });
    expect(before.map((m) => m.text)).toEqual([body('m-before')]);
    expect(await tk.admin.listTopics()).not.toContain(names.deliveries('second'));

    writeConfigFile(shape(['first', 'second']), file);
    await waitFor(() => store.current().destinations.some((d) => d.id === 'second'), { timeoutMs: 10_000, what: 'the store to reload the file' });

    await tk.produce(names.calls, [{ key: 'u-1', value: call('m-after'), headers: { 'source-id': 'web' } }]);
    const second = await tk.readAll(names.deliveries('second'), { atLeast: 1 });
    expect(second.map((m) => m.text)).toEqual([body('m-after')]);
    expect(second[0]?.headers['source-id']).toBe('web');
    const first = await tk.readAll(names.deliveries('first'), { atLeast: 2 });
    expect(first.map((m) => m.text).sort()).toEqual([body('m-after'), body('m-before')].sort());
    // The new destination's retry and dead-letter topics came with it.
    const topics = await tk.admin.listTopics();
    for (const tier of ['10s', '1m', '10m', '1h']) expect(topics).toContain(names.retry('second', tier));
    expect(topics).toContain(names.dlq('second'));
  });
});
