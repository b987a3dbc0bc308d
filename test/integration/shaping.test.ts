// Destination shaping end to end (docs/webhooks.md#shaping): calls on the real broker,
// the router and the deliverer in this process, a real receiver. A transformed
// destination gets exactly its JSON, signed over those bytes; a filtered one only the
// matching events; a sampled one the messageIds the documented hash keeps; a throwing
// expression costs only its own destination; deletions are never sampled or shaped.
import { createHash, createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import type { Config } from '../../src/config/schema.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { createRouterService, routerGroupId } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const SECRET = 'shaping-secret-7d1e';
const N = 200;
const T0 = '2026-05-01T12:00:00.000Z';

/** The i-th call: "u0" first with total 42, then totals spread over 0–249. */
const total = (i: number) => (i === 0 ? 42 : (i * 37) % 250);
const callOf = (i: number) =>
  JSON.stringify({
    type: 'track',
    userId: `u${i % 10}`,
    messageId: `m-${i}`,
    timestamp: T0,
    event: 'Order Completed',
    properties: { total: total(i), currency: 'EUR', email: `user${i % 10}@example.com` },
    context: { ip: '203.0.113.9' },
  });

/** The documented sample rule, computed here independently: first 48 bits of SHA-256(messageId) / 2^48 < fraction. */
const keptBySample = (messageId: string, fraction: number) => parseInt(createHash('sha256').update(messageId, 'utf8').digest('hex').slice(0, 12), 16) / 2 ** 48 < fraction;

const ids = Array.from({ length: N }, (_, i) => `m-${i}`);
const EXPECTED = {
  shaped: N,
  filtered: ids.filter((_, i) => total(i) > 100),
  sampled: ids.filter((id) => keptBySample(id, 0.3)),
};

let tk: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let config: Config;
let metrics: Metrics;
let services: Service[] = [];
let names: ReturnType<typeof topicNames>;

const at = (id: string) => receiver.requests.filter((r) => r.path === `/${id}`);
const isDelete = (r: ReceivedRequest) => r.text.startsWith('{"type":"delete"');
/**
 * The distinct messageIds a destination received (its bodies carry them). NOTE: distinct,
 * because delivery is at least once: a deliverer that waited on a stalled commit (a busy
 * shared broker) may send an event again, and receivers deduplicate on messageId.
 */
const messageIds = (id: string) => [...new Set(at(id).filter((r) => !isDelete(r)).map((r) => (JSON.parse(r.text) as { messageId: string }).messageId))].sort();
const distinctTexts = (requests: ReceivedRequest[]) => [...new Set(requests.map((r) => r.text))];

beforeAll(async () => {
  tk = await createTestKafka();
  receiver = await startReceiver();
  const prefix = randomPrefix();
  names = topicNames(prefix);
  const hook = (id: string, settings: Record<string, unknown>) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: receiver.url(`/${id}`) }], ...settings } });
  config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('shaping'), topicPrefix: prefix, partitions: 2 },
      sources: [{ id: 'web', destinations: ['plain', 'shaped', 'filtered', 'sampled', 'muted', 'broken'] }],
      destinations: [
        hook('plain', {}),
        hook('shaped', { transform: '{"user": userId, "name": event, "total": properties.total}', sharedSecret: SECRET }),
        hook('filtered', { filter: 'type = "track" and properties.total > 100', dropProperties: ['context.ip', 'properties.email'] }),
        hook('sampled', { sample: 0.3 }),
        hook('muted', { sample: 0 }),
        hook('broken', { transform: '{"doubled": properties.currency * 2}' }),
      ],
    },
    'shaping.test.yaml',
  );
  const deps = testRoleDeps(config);
  metrics = deps.metrics;
  services = [...ROLE_FACTORIES.deliverer(deps), createRouterService(deps)];
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'the router and the deliverer to be ready' });

  await tk.produce(
    names.calls,
    ids.map((id, i) => ({ key: `u${i % 10}`, value: callOf(i), headers: { 'source-id': 'web' } })),
  );
  await tk.produce(names.deletions, [{ key: 'u0', value: `{"userId":"u0","sourceIds":["web"],"requestedAt":"${T0}"}` }]);
  await waitFor(
    () =>
      messageIds('plain').length === N &&
      at('shaped').filter((r) => !isDelete(r)).length >= N &&
      messageIds('filtered').length === EXPECTED.filtered.length &&
      messageIds('sampled').length === EXPECTED.sampled.length &&
      ['plain', 'shaped', 'filtered', 'sampled', 'muted', 'broken'].every((id) => at(id).some(isDelete)),
    { timeoutMs: 90_000, intervalMs: 200, what: 'every destination to receive what its shaping lets through' },
  );
  // The router has committed every call: its deliveries are all written.
  await waitFor(
    async () => {
      const ends = await tk.admin.fetchTopicOffsets(names.calls);
      const [committed] = await tk.admin.fetchOffsets({ groupId: routerGroupId(config), topics: [names.calls] });
      return topicLag(ends, committed?.partitions ?? []) === 0;
    },
    { timeoutMs: 30_000, what: 'the router to commit every call' },
  );
}, 180_000);

afterAll(async () => {
  for (const service of [...services].reverse()) await service.stop();
  await receiver?.close();
  await tk?.close();
});

describe('destination shaping through the router and the deliverer', () => {
  it('a transformed destination receives exactly the transform\'s compact JSON, signed over those bytes', () => {
    const first = at('shaped').find((r) => r.text.includes('"total":42') && r.text.includes('"user":"u0"'));
    expect(first?.text).toBe('{"user":"u0","name":"Order Completed","total":42}');
    expect(first?.headers['x-signature']).toBe(createHmac('sha1', SECRET).update(first!.body).digest('hex'));
    expect(first?.headers['content-type']).toBe('application/json');
    for (const request of at('shaped').filter((r) => !isDelete(r))) {
      expect(request.text).toMatch(/^\{"user":"u\d","name":"Order Completed","total":\d+\}$/);
      expect(request.headers['x-signature']).toBe(createHmac('sha1', SECRET).update(request.body).digest('hex'));
    }
  });

  it('the delivery topic holds exactly the bytes sent, one record per call', async () => {
    const records = await tk.readAll(names.deliveries('shaped'), { atLeast: N + 1 });
    expect(records).toHaveLength(N + 1);
    expect(records.find((r) => r.headers['message-id'] === 'm-0')?.text).toBe('{"user":"u0","name":"Order Completed","total":42}');
    // Each call's transform, as the receiver got it (in some order, perhaps more than once).
    const sent = new Set(at('shaped').map((r) => r.text));
    for (const record of records) expect(sent.has(record.text)).toBe(true);
  });

  it('a filtered destination receives only the matching events, with the dropped properties gone', () => {
    const calls = at('filtered').filter((r) => !isDelete(r));
    expect(messageIds('filtered')).toEqual([...EXPECTED.filtered].sort());
    const i = ids.indexOf(EXPECTED.filtered[0]!);
    expect(calls.find((r) => r.text.includes(`"messageId":"m-${i}"`))?.text).toBe(
      `{"version":1,"type":"track","userId":"u${i % 10}","messageId":"m-${i}","timestamp":"${T0}","event":"Order Completed","properties":{"total":${total(i)},"currency":"EUR"},"context":{}}`,
    );
  });

  it('a sampled destination receives exactly the messageIds the documented hash keeps, about its fraction', () => {
    const got = messageIds('sampled');
    expect(got).toEqual([...EXPECTED.sampled].sort());
    expect(got.length / N).toBeGreaterThan(0.2);
    expect(got.length / N).toBeLessThan(0.4);
  });

  it('a throwing expression affects only its destination: nothing written for it, the others complete', async () => {
    // Only the deletion's delete body (never shaped) was written for it.
    expect((await tk.readAll(names.deliveries('broken'))).map((r) => r.text)).toEqual([`{"type":"delete","userId":"u0","timestamp":"${T0}"}`]);
    expect(at('broken').filter((r) => !isDelete(r))).toHaveLength(0);
    expect(messageIds('plain')).toHaveLength(N);
    expect((await tk.readAll(names.deliveries('shaped'))).filter((r) => !r.text.startsWith('{"type":"delete"'))).toHaveLength(N);
  });

  it('deletions are neither sampled nor shaped: every destination gets the standard delete body', () => {
    const deleteBody = `{"type":"delete","userId":"u0","timestamp":"${T0}"}`;
    for (const id of ['plain', 'shaped', 'filtered', 'sampled', 'muted', 'broken']) {
      expect(distinctTexts(at(id).filter(isDelete)), id).toEqual([deleteBody]);
    }
    expect(distinctTexts(at('muted'))).toEqual([deleteBody]);
  });

  it('counts each reason in switchyard_events_filtered_total, and the routed events', async () => {
    const values = async (metric: Metrics['eventsFiltered'] | Metrics['eventsRouted']) =>
      Object.fromEntries((await metric.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]));
    expect(await values(metrics.eventsFiltered)).toEqual({
      'web/filtered/destination_filter': N - EXPECTED.filtered.length,
      'web/sampled/sample': N - EXPECTED.sampled.length,
      'web/muted/sample': N,
      'web/broken/transform_error': N,
    });
    expect(await values(metrics.eventsRouted)).toEqual({
      // The calls, and the delete body each destination got.
      'web/plain': N + 1,
      'web/shaped': N + 1,
      'web/filtered': EXPECTED.filtered.length + 1,
      'web/sampled': EXPECTED.sampled.length + 1,
      'web/muted': 1,
      'web/broken': 1,
    });
  });
});
