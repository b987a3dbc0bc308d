// Copies of a call dropped by messageId (docs/kafka.md#copies-of-a-call), on a real broker:
// a call written three times is delivered once; a copy written after the router stopped
// and another started (the memory read back from `calls`) is dropped too; the count is in
// switchyard_calls_deduplicated_total; with `dedupeWindow: 0` every copy is routed; a
// call without a messageId of its own is never taken for a copy.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { createKafka } from '../../src/kafka/index.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createRouterService } from '../../src/router/router-service.js';
import { traceUser } from '../../src/trace/trace.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const call = (userId: string, id: string | undefined, n = 1) =>
  `{"type":"track","userId":"${userId}",${id === undefined ? '' : `"messageId":"${id}",`}"timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"n":${n}}}`;

let tk: Awaited<ReturnType<typeof createTestKafka>>;
const running: Service[] = [];

function configOf(prefix: string, dedupeWindow?: string): Config {
  return testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('dedupe'), topicPrefix: prefix, partitions: 2 },
      ...(dedupeWindow === undefined ? {} : { router: { dedupeWindow } }),
      sources: [{ id: 'web', destinations: ['hooks'] }, { id: 'ios', destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
    },
    'router-dedupe.test.yaml',
  );
}

async function startRouter(config: Config, metrics: Metrics): Promise<Service> {
  const router = createRouterService(testRoleDeps(config, { kafka: createKafka(config.kafka, silentLogger()), metrics }));
  await router.start();
  running.push(router);
  return router;
}

async function deduplicated(metrics: Metrics): Promise<Record<string, number>> {
  const { values } = await metrics.callsDeduplicated.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.source), v.value]));
}

beforeAll(async () => {
  tk = await createTestKafka();
});

afterAll(async () => {
  for (const service of running.reverse()) await service.stop();
  await tk?.close();
});

describe('router.dedupeWindow (default 1h)', () => {
  it('delivers a call written three times once, and drops a copy written after a new router took over', async () => {
    const prefix = randomPrefix();
    const names = topicNames(prefix);
    const config = configOf(prefix);
    expect(config.router.dedupeWindowMs).toBe(3_600_000);
    const firstMetrics = createMetrics({ defaultMetrics: false });
    const first = await startRouter(config, firstMetrics);
    const record = (userId: string, id: string | undefined, source = 'web', n = 1) => ({ key: userId, value: call(userId, id, n), headers: { 'source-id': source } });
    // Three copies (a client retrying its POST), one of another source with the same id, one without an id of its own (twice).
    await tk.produce(names.calls, [record('u-1', 'm-1'), record('u-1', 'm-1', 'web', 2), record('u-2', 'm-2'), record('u-1', 'm-1', 'ios'), record('u-2', undefined), record('u-2', undefined)]);
    await tk.produce(names.calls, [record('u-1', 'm-1', 'web', 3)]);
    const deliveries = await tk.readAll(names.deliveries('hooks'), { atLeast: 5 });
    await waitFor(async () => (await deduplicated(firstMetrics)).web === 2, { what: 'two copies counted' });
    const ids = deliveries.map((m) => `${String(m.headers['source-id'])}/${String(JSON.parse(m.text).messageId).startsWith('m-') ? String(JSON.parse(m.text).messageId) : 'derived'}`).sort();
    expect(ids).toEqual(['ios/m-1', 'web/derived', 'web/derived', 'web/m-1', 'web/m-2']);
    // The first copy is the one delivered.
    expect(JSON.parse(deliveries.find((m) => JSON.parse(m.text).messageId === 'm-1' && m.headers['source-id'] === 'web')!.text).properties).toEqual({ n: 1 });
    await first.stop();

    // A new router (a restart, another pod) reads the ids back from `calls`: the copies that come now are dropped too.
    const secondMetrics = createMetrics({ defaultMetrics: false });
    await startRouter(config, secondMetrics);
    await tk.produce(names.calls, [record('u-1', 'm-1', 'web', 4), record('u-2', 'm-2', 'web', 4), record('u-3', 'm-3')]);
    await waitFor(async () => (await deduplicated(secondMetrics)).web === 2, { what: 'the two copies counted by the second router' });
    const after = await tk.readAll(names.deliveries('hooks'), { atLeast: 6 });
    expect(after.map((m) => JSON.parse(m.text).messageId as string).filter((id) => id.startsWith('m-')).sort()).toEqual(['m-1', 'm-1', 'm-2', 'm-3']);

    // `trace` shows each copy as `duplicate` for every destination, the first copy as routed.
    const { document } = await traceUser(testRoleDeps(config), { who: { kind: 'userId', id: 'u-1' }, sinceMs: Date.now() - 600_000 });
    const web = document.messages.filter((m) => m.messageId === 'm-1' && m.source === 'web');
    expect(web.map((m) => m.destinations.map((d) => (d.state === 'filtered' ? `filtered:${d.reason}` : 'routed')))).toEqual([['routed'], ['filtered:duplicate'], ['filtered:duplicate'], ['filtered:duplicate']]);
  });

  it('routes every copy with dedupeWindow: 0', async () => {
    const prefix = randomPrefix();
    const names = topicNames(prefix);
    const config = configOf(prefix, '0');
    expect(config.router.dedupeWindowMs).toBe(0);
    const metrics = createMetrics({ defaultMetrics: false });
    await startRouter(config, metrics);
    await tk.produce(names.calls, [1, 2, 3].map((n) => ({ key: 'u-1', value: call('u-1', 'm-1', n), headers: { 'source-id': 'web' } })));
    const deliveries = await tk.readAll(names.deliveries('hooks'), { atLeast: 3 });
    expect(deliveries.map((m) => JSON.parse(m.text).properties.n as number)).toEqual([1, 2, 3]);
    expect(await deduplicated(metrics)).toEqual({});
  });
});
