// Shaping bounded in time (docs/webhooks.md#time-and-size-bounds), the review's probes
// through the real router on the real broker: a `$match` with a backtracking pattern
// and a `$sort` of 4,000 strings against 30 KB calls, and a long loop. The regex runs in
// linear time, the sort in n·log n, the loop is cut at the time budget (or the step
// bound) as that destination's `transform_error`; the router's /healthz, served by the
// same process, keeps answering, and the other destinations get every call.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import type { Config } from '../../src/config/schema.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { createRouterService, routerGroupId } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const CALLS = 8;
/** 4,000 words of 4 letters, out of order: with the rest, a call of about 28 KB (under the 32 KB a call may take). */
const WORDS = Array.from({ length: 4_000 }, (_, i) => `w${((i * 7_919) % 46_656).toString(36).padStart(3, '0')}`);
const BLOB = `${'a'.repeat(26)}b`;

let tk: Awaited<ReturnType<typeof createTestKafka>>;
let config: Config;
let metrics: Metrics;
let router: Service;
let admin: AdminServer;
const healthMs: number[] = [];
const baselineMs: number[] = [];

beforeAll(async () => {
  tk = await createTestKafka();
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  const hook = (id: string, settings: Record<string, unknown>) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: `http://127.0.0.1:9/${id}` }], ...settings } });
  config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('runaway'), topicPrefix: prefix, partitions: 1 },
      sources: [
        { id: 'plain-only', destinations: ['plain'] },
        { id: 'web', destinations: ['plain', 'regex', 'sorted', 'loop'] },
      ],
      destinations: [
        hook('plain', {}),
        // The review's pattern: 11.9 s on 26 characters with a backtracking engine.
        hook('regex', { transform: '{"m": $count($match(properties.blob, /(a+)+$/)), "n": $count(properties.words)}' }),
        hook('sorted', { transform: '{"first": $sort(properties.words)[0], "last": $sort(properties.words)[-1]}' }),
        hook('loop', { transform: '{"n": $count($map([1..50000], function($x) { $x * 2 }))}' }),
      ],
    },
    'shaping-runaway.test.yaml',
  );
  const deps = testRoleDeps(config);
  metrics = deps.metrics;
  router = createRouterService(deps);
  admin = createAdminServer({ host: '127.0.0.1', port: 0, token: () => undefined, metrics, logger: deps.logger, health: () => [{ name: 'router', ...router.health() }] });
  await admin.start();
  await router.start();
  await waitFor(() => router.health().ready, { timeoutMs: 60_000, what: 'the router to be ready' });

  // /healthz, asked one after the other while the router works (after one to warm up).
  await (await fetch(`http://127.0.0.1:${admin.port()}/healthz`)).arrayBuffer();
  const call = (i: number) =>
    JSON.stringify({ type: 'track', userId: `u${i}`, messageId: `m-${i}`, timestamp: '2026-05-01T12:00:00.000Z', event: 'Runaway', properties: { blob: BLOB, words: WORDS } });
  expect(Buffer.byteLength(call(0))).toBeGreaterThan(27 * 1024);
  expect(Buffer.byteLength(call(0))).toBeLessThan(31 * 1024);
  let produced = 0;
  const phase = async (source: string, into: number[]) => {
    let polling = true;
    const poll = (async () => {
      while (polling) {
        const started = performance.now();
        await (await fetch(`http://127.0.0.1:${admin.port()}/healthz`)).arrayBuffer();
        into.push(performance.now() - started);
      }
    })();
    try {
      await tk.produce(
        names.calls,
        Array.from({ length: CALLS }, (_, i) => ({ key: `u${i}`, value: call(produced + i), headers: { 'source-id': source } })),
      );
      produced += CALLS;
      await waitFor(
        async () => {
          const ends = await tk.admin.fetchTopicOffsets(names.calls);
          const [committed] = await tk.admin.fetchOffsets({ groupId: routerGroupId(config), topics: [names.calls] });
          return topicLag(ends, committed?.partitions ?? []) === 0;
        },
        { timeoutMs: 60_000, what: 'the router to commit every call' },
      );
    } finally {
      polling = false;
      await poll;
    }
  };
  // The same calls to an unshaped destination first: what this host's load costs /healthz anyway.
  await phase('plain-only', baselineMs);
  await phase('web', healthMs);
}, 120_000);

afterAll(async () => {
  await router?.stop();
  await admin?.stop();
  await tk?.close();
});

describe('shaping bounded in time', () => {
  it('routes the regex and the sort (linear, n·log n) and fails the loop alone, counted as transform_error', async () => {
    const values = async (metric: Metrics['eventsFiltered'] | Metrics['eventsRouted']) =>
      Object.fromEntries((await metric.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]));
    expect(await values(metrics.eventsRouted)).toEqual({ 'plain-only/plain': CALLS, 'web/plain': CALLS, 'web/regex': CALLS, 'web/sorted': CALLS });
    expect(await values(metrics.eventsFiltered)).toEqual({ 'web/loop/transform_error': CALLS });
  });

  it('keeps /healthz of the same process answering meanwhile (half its answers within 100 ms)', () => {
    // NOTE: the slowest answer is printed, not asserted: on this project's busy 2-core host
    // (load average 15) the router's own work on the same calls without any shaping made
    // /healthz wait from 93 ms to 1.3 s in the same test. That evaluations give the thread
    // back is asserted without a clock in test/unit/shaping/shape.test.ts.
    const sorted = [...healthMs].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const baseline = Math.max(...baselineMs);
    process.stderr.write(
      `/healthz during ${CALLS} runaway calls: ${healthMs.length} answers, median ${median.toFixed(1)} ms, slowest ${sorted.at(-1)!.toFixed(1)} ms; during ${CALLS} unshaped ones: ${baselineMs.length}, slowest ${baseline.toFixed(1)} ms\n`,
    );
    expect(healthMs.length).toBeGreaterThan(3);
    expect(median).toBeLessThan(100);
  });
});
