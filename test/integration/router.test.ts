// The router in-process against the real broker: what it writes to the delivery
// topics and to calls.invalid, byte for byte, for every routing rule and every kind
// of bad input, plus deletion requests, metrics and its service life cycle.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createKafka } from '../../src/kafka/index.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createRouterService, routerGroupId } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

const T0 = '2026-05-01T12:00:00.000Z';
const RECORD_TIME = Date.UTC(2026, 4, 2, 9, 30, 0, 250);
const TOO_LARGE = `{"type":"track","userId":"u","event":"e","properties":{"blob":"${'x'.repeat(33_000)}"}}`;

/** Waits until the group has committed everything in `topic`. */
async function waitForDrained(tk: TestKafka, groupId: string, topic: string, timeoutMs = 45_000): Promise<void> {
  await waitFor(
    async () => {
      const ends = await tk.admin.fetchTopicOffsets(topic);
      const [committed] = await tk.admin.fetchOffsets({ groupId, topics: [topic] });
      return topicLag(ends, committed?.partitions ?? []) === 0;
    },
    { timeoutMs, intervalMs: 200, what: `group ${groupId} to commit all of ${topic}` },
  );
}

function loadConfig(shape: unknown): Config {
  return testConfig(shape, 'router-test.yaml');
}

const byMessageId = (messages: ReadMessage[]) => new Map(messages.map((m) => [m.headers['message-id'], m]));

describe('router (in-process, real broker)', () => {
  let tk: TestKafka;
  let router: Service;
  let config: Config;
  let names: ReturnType<typeof topicNames>;
  const metrics = createMetrics({ defaultMetrics: false });
  const deletions: [string, readonly string[]][] = [];
  let main: ReadMessage[];
  let off: ReadMessage[];
  let invalid: ReadMessage[];

  /** Every call of the test, produced before the router reads any: [messageId or key, value, headers]. */
  const track = (messageId: string, extra: string) =>
    `{"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"${T0}","event":"Order Completed"${extra}}`;
  const routedCalls: { key: string; value: string; headers: Record<string, string> }[] = [
    // integrations, source "web" by header
    { key: 'u-1', value: track('m-all-false', ',"integrations":{"All":false}'), headers: { 'source-id': 'web' } },
    { key: 'u-1', value: track('m-all-false-webhooks-true', ',"integrations":{"All":false,"Webhooks":true}'), headers: { 'source-id': 'web' } },
    { key: 'u-1', value: track('m-webhooks-false', ',"integrations":{"Webhooks":false}'), headers: { 'source-id': 'web' } },
    { key: 'u-1', value: track('m-lowercase-webhooks-false', ',"integrations":{"webhooks":false}'), headers: { 'source-id': 'web' } },
    { key: 'u-1', value: track('m-all-false-webhooks-object', ',"integrations":{"All":false,"Webhooks":{"note":"on"}}'), headers: { 'source-id': 'web' } },
    // track filters
    {
      key: 'u-1',
      value: `{"type":"track","userId":"u-1","messageId":"m-blocked","timestamp":"${T0}","event":"Debug Ping"}`,
      headers: { 'source-id': 'web' },
    },
    {
      key: 'u-1',
      value: `{"type":"identify","userId":"u-1","messageId":"m-identify-web","timestamp":"${T0}","traits":{"plan":"pro"}}`,
      headers: { 'source-id': 'web', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    },
    // source "app" by writeKey only (no header): allows only "Order Completed"
    {
      key: 'anon-7',
      value: `{"type":"track","anonymousId":"anon-7","messageId":"m-app-allowed","event":"Order Completed","properties":{"total":99.5},"writeKey":"wk-app-5678"}`,
      headers: {},
    },
    {
      key: 'anon-7',
      value: `{"type":"track","anonymousId":"anon-7","messageId":"m-app-not-allowed","timestamp":"${T0}","event":"Signed Up","writeKey":"wk-app-5678"}`,
      headers: {},
    },
  ];

  /** Bad input: [name, key, value, expected reason, expected error header]. */
  const invalidCalls: [string, string | null, string | null, string, string][] = [
    ['malformed', 'k-malformed', '{"type":"track","userId":', 'malformed_json', 'call is not valid JSON ('],
    ['not-object', 'k-not-object', '"just a string"', 'not_object', 'call is a string ("just a string"), not a JSON object: send each call as an object such as {"type":"track",...}'],
    ['unknown-type', 'k-unknown-type', '{"type":"purchase","userId":"u"}', 'unknown_type', 'unknown call type "purchase": expected one of identify, track, page, screen, group, alias'],
    ['missing-identity', 'k-missing-identity', '{"type":"identify","traits":{"a":1}}', 'missing_identity', 'identify call has neither userId nor anonymousId: set one of them'],
    ['missing-event', 'k-missing-event', '{"type":"track","userId":"u"}', 'missing_event', 'track call without "event": set event to the event name'],
    [
      'bad-timestamp',
      'k-bad-timestamp',
      '{"type":"track","userId":"u","event":"e","timestamp":"01/05/2026"}',
      'bad_timestamp',
      'track call field "timestamp" is not an ISO 8601 date-time: got "01/05/2026"; send it like "2026-05-01T12:00:00.000Z" or leave it out',
    ],
    [
      'unknown-source',
      'k-unknown-source',
      '{"type":"track","userId":"u","event":"e"}',
      'unknown_source',
      'unknown source "x": no source has this id (from the Kafka header "source-id"); fix the producer\'s header or add the source to the config (known source ids: "web", "app")',
    ],
    ['too-large', 'k-too-large', TOO_LARGE, 'too_large', `call is ${Buffer.byteLength(TOO_LARGE)} bytes, over the 32768-byte limit: send less data in properties, traits or context`],
    ['null-value', 'k-null-value', null, 'malformed_json', 'call is empty: send the call as one JSON object'],
    ['no-key-malformed', null, 'nope', 'malformed_json', 'call is not valid JSON ('],
  ];

  beforeAll(async () => {
    tk = await createTestKafka();
    const prefix = randomPrefix();
    config = loadConfig({
      kafka: { brokers: testBrokers(), clientId: randomName('router'), topicPrefix: prefix, partitions: 3 },
      delivery: { retryTiers: ['10s', '1m'] },
      sources: [
        { id: 'web', writeKey: 'wk-web-1234', destinations: ['main', 'off'], trackFilter: { blockEvents: ['Debug Ping'] } },
        { id: 'app', writeKey: 'wk-app-5678', destinations: ['main'], trackFilter: { allowEvents: ['Order Completed'] } },
      ],
      destinations: [
        { id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/main' }] } },
        { id: 'off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: 'https://hooks.example.com/off' }] } },
      ],
    });
    names = topicNames(prefix);
    router = createRouterService({
      config: staticConfigStore(config),
      kafka: createKafka(config.kafka, silentLogger()),
      metrics,
      logger: silentLogger(),
      tuning: { lagIntervalMs: 200 },
      onDeletion: (userId, sourceIds) => {
        deletions.push([userId, sourceIds]);
      },
    });
    await router.start();

    await tk.producer.send({
      topic: names.calls,
      messages: [
        ...routedCalls.map((c) => ({ ...c, timestamp: String(RECORD_TIME) })),
        ...invalidCalls.map(([name, key, value]) => ({
          key,
          value,
          headers: { 'x-test-case': name, ...(name === 'unknown-source' ? { 'source-id': 'x' } : { 'source-id': 'web' }) },
          timestamp: String(RECORD_TIME),
        })),
      ],
    });
    await tk.producer.send({
      topic: names.deletions,
      messages: [
        { key: 'u-del', value: `{"userId":"u-del","requestedAt":"${T0}"}`, timestamp: String(RECORD_TIME) },
        { key: 'bad', value: '{"sourceIds":["web"]}', headers: { 'x-test-case': 'bad-deletion' } },
      ],
    });
    await waitForDrained(tk, routerGroupId(config), names.calls);
    await waitForDrained(tk, routerGroupId(config), names.deletions);
    [main, off, invalid] = await Promise.all([
      tk.readAll(names.deliveries('main')),
      tk.readAll(names.deliveries('off')),
      tk.readAll(names.callsInvalid),
    ]);
  });

  afterAll(async () => {
    await router?.stop();
    await tk?.close();
  });

  it('is ready once it joined its group, and created every topic it needs', async () => {
    expect(router.health()).toEqual({ live: true, ready: true });
    const topics = await tk.admin.listTopics();
    for (const topic of [
      names.calls,
      names.callsInvalid,
      names.deletions,
      names.deliveries('main'),
      names.retry('main', '10s'),
      names.retry('main', '1m'),
      names.dlq('main'),
      names.deliveries('off'),
      names.retry('off', '10s'),
      names.retry('off', '1m'),
      names.dlq('off'),
    ]) {
      expect(topics).toContain(topic);
    }
    const [metadata] = (await tk.admin.fetchTopicMetadata({ topics: [names.deliveries('main')] })).topics;
    expect(metadata?.partitions).toHaveLength(3);
  });

  it('routes exactly the calls the rules let through, with the literal bodies, keys and headers', () => {
    const calls = main.filter((m) => JSON.parse(m.text).type !== 'delete');
    const got = byMessageId(calls);
    expect([...got.keys()].sort()).toEqual(
      ['m-all-false-webhooks-object', 'm-all-false-webhooks-true', 'm-app-allowed', 'm-identify-web', 'm-lowercase-webhooks-false'].sort(),
    );
    const orderCompleted = (id: string) =>
      `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"${T0}","event":"Order Completed"}`;
    expect(got.get('m-all-false-webhooks-true')?.text).toBe(orderCompleted('m-all-false-webhooks-true'));
    expect(got.get('m-all-false-webhooks-object')?.text).toBe(orderCompleted('m-all-false-webhooks-object'));
    expect(got.get('m-lowercase-webhooks-false')?.text).toBe(orderCompleted('m-lowercase-webhooks-false'));
    expect(got.get('m-identify-web')?.text).toBe(
      `{"version":1,"type":"identify","userId":"u-1","messageId":"m-identify-web","timestamp":"${T0}","traits":{"plan":"pro"}}`,
    );
    // No timestamp in the call: the Kafka record's timestamp is when it was received.
    expect(got.get('m-app-allowed')?.text).toBe(
      '{"version":1,"type":"track","anonymousId":"anon-7","messageId":"m-app-allowed","timestamp":"2026-05-02T09:30:00.250Z","event":"Order Completed","properties":{"total":99.5}}',
    );

    expect(got.get('m-identify-web')?.key).toBe('u-1');
    expect(got.get('m-identify-web')?.headers).toEqual({
      'source-id': 'web',
      'message-id': 'm-identify-web',
      attempt: '0',
      'first-attempt-at': '',
      'received-at': String(RECORD_TIME),
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    // Attributed by writeKey alone: the delivery names the source.
    expect(got.get('m-app-allowed')?.key).toBe('anon-7');
    expect(got.get('m-app-allowed')?.headers).toEqual({
      'source-id': 'app',
      'message-id': 'm-app-allowed',
      attempt: '0',
      'first-attempt-at': '',
      'received-at': String(RECORD_TIME),
    });
  });

  it('writes nothing to a disabled destination', () => {
    expect(off).toEqual([]);
  });

  it('keeps every bad call in calls.invalid: original bytes, key and headers, plus an error header', () => {
    const got = new Map(invalid.map((m) => [m.headers['x-test-case'], m]));
    for (const [name, key, value, , error] of invalidCalls) {
      const kept = got.get(name);
      expect(kept, name).toBeDefined();
      expect(kept!.key, name).toBe(key);
      if (value === null) expect(kept!.value, name).toBeNull();
      else expect(kept!.value?.equals(Buffer.from(value)), name).toBe(true);
      expect(kept!.headers['source-id'], name).toBe(name === 'unknown-source' ? 'x' : 'web');
      expect(kept!.headers.error?.startsWith(error), `${name}: ${kept!.headers.error}`).toBe(true);
      expect(kept!.timestamp, name).toBe(String(RECORD_TIME));
    }
  });

  it('counts calls per source and type, routed and filtered events per reason, and invalid calls per reason', async () => {
    const values = async (metric: { get(): Promise<{ values: { labels: object; value: number }[] }> }) =>
      (await metric.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]).sort();
    expect(await values(metrics.callsReceived)).toEqual([
      ['app/track', 2],
      ['web/identify', 1],
      ['web/track', 6],
    ]);
    expect(await values(metrics.eventsRouted)).toEqual([
      ['app/main', 1],
      ['web/main', 5], // four calls, and the one delete (main is shared with app; web comes first)
    ]);
    expect(await values(metrics.eventsFiltered)).toEqual([
      ['app/main/track_filter', 1],
      ['web/main/integrations', 2],
      ['web/main/track_filter', 1],
      ['web/off/disabled', 7],
    ]);
    expect(await values(metrics.callsInvalid)).toEqual([
      ['bad_deletion_request', 1],
      ['bad_timestamp', 1],
      ['malformed_json', 3],
      ['missing_event', 1],
      ['missing_identity', 1],
      ['not_object', 1],
      ['too_large', 1],
      ['unknown_source', 1],
      ['unknown_type', 1],
    ]);
    // Everything is committed, so the sampled lag of both topics comes down to 0.
    const lag = async () => (await metrics.consumerLag.get()).values.map((v) => [v.labels.group, v.labels.topic, v.value]).sort();
    await waitFor(async () => (await lag()).length === 2 && (await lag()).every(([, , value]) => value === 0), {
      timeoutMs: 10_000,
      what: 'the lag gauge to show 0 for both topics',
    });
    expect(await lag()).toEqual(
      [
        [routerGroupId(config), names.calls, 0],
        [routerGroupId(config), names.deletions, 0],
      ].sort(),
    );
  });

  it('sends one delete per enabled destination for a deletion request, and calls the deletion hook', () => {
    const deletes = main.filter((m) => JSON.parse(m.text).type === 'delete');
    expect(deletes).toHaveLength(1);
    expect(deletes[0]!.text).toBe(`{"type":"delete","userId":"u-del","timestamp":"${T0}"}`);
    expect(deletes[0]!.key).toBe('u-del');
    expect(deletes[0]!.headers['source-id']).toBe('web');
    expect(deletes[0]!.headers.attempt).toBe('0');
    expect(deletions).toEqual([['u-del', ['web', 'app']]]);
  });

  it('keeps a bad deletion request in calls.invalid with an error saying so', () => {
    const kept = invalid.find((m) => m.headers['x-test-case'] === 'bad-deletion');
    expect(kept?.text).toBe('{"sourceIds":["web"]}');
    expect(kept?.key).toBe('bad');
    expect(kept?.headers.error).toBe(
      'bad deletion request: "userId" must be a non-empty string; send {"userId":"…","sourceIds":["…"],"requestedAt":"2026-05-01T12:00:00.000Z"} (sourceIds and requestedAt optional)',
    );
  });

  it('stops once, and reports not ready afterwards', async () => {
    const first = router.stop();
    const second = router.stop();
    expect(second).toBe(first);
    await first;
    expect(router.health().ready).toBe(false);
  });
});
