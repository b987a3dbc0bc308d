// A router batch whose send fails part-way is consumed again: every `seen` pair it
// had claimed must then be written, or the source is never recorded for the user and
// a deletion misses it. Real broker: the failure is the broker refusing a record
// larger than the delivery topic's max.message.bytes, lifted once the batch failed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAudienceHook } from '../../src/audiences/router-hook.js';
import { audienceTopicNames } from '../../src/audiences/records.js';
import { SeenPairCache } from '../../src/audiences/seen-cache.js';
import { createRouterService, routerGroupId } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

describe('seen pairs of a batch whose send failed', () => {
  const prefix = randomPrefix();
  const config = testConfig({
    kafka: { brokers: testBrokers(), clientId: randomName('seen-fail'), topicPrefix: prefix, partitions: 1 },
    sources: [{ id: 'web', destinations: ['w'] }],
    destinations: [{ id: 'w', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/w' }] } }],
  });
  const names = topicNames(prefix);
  const events = audienceTopicNames(prefix).events;
  let tk: TestKafka;
  let router: Service | undefined;
  let failures = 0;

  beforeAll(async () => {
    tk = await createTestKafka();
    await tk.createTopic(events);
    // Refuses the first call's delivery (~3 KB) until the test lifts the limit.
    await tk.admin.createTopics({ topics: [{ topic: names.deliveries('w'), numPartitions: 1, configs: [{ name: 'max.message.bytes', value: '1000' }] }] });
  });

  afterAll(async () => {
    await router?.stop();
    await tk?.close();
  });

  it('writes the pair claimed by the call that found the batch full when the flush failed', async () => {
    const hook = createAudienceHook(prefix, () => config, new SeenPairCache(1_000));
    const counting: typeof hook = {
      ...hook,
      abandoned: (pairs) => {
        failures += 1;
        hook.abandoned(pairs);
      },
    };
    // A small cap on a send: the second call does not fit beside the first, so it
    // claims its pair and then flushes the first, which the broker refuses.
    router = createRouterService({ ...testRoleDeps(config), audiences: counting, tuning: { maxTopicBytesPerSend: 2_000, lagIntervalMs: 60_000 } });
    await router.start();
    await tk.produce(names.calls, [
      { key: 'u-big', value: JSON.stringify({ type: 'track', userId: 'u-big', event: 'Big', properties: { blob: 'x'.repeat(3_000) } }), headers: { 'source-id': 'web' } },
      { key: 'u-2', value: JSON.stringify({ type: 'page', userId: 'u-2', name: 'Home' }), headers: { 'source-id': 'web' } },
    ]);
    await waitFor(() => failures > 0, { timeoutMs: 30_000, what: 'the router batch to fail on the refused record' });
    // A refused record is not retriable, so this consumer stops; one that fails on a
    // retriable error (a broker away too long) is restarted by the consumer runtime in the same
    // process, with the same cache: a second router on the same hook stands for that.
    await router.stop();
    await tk.admin.alterTopicConfig(names.deliveries('w'), 'max.message.bytes', '1048588');
    router = createRouterService({ ...testRoleDeps(config), audiences: counting, tuning: { maxTopicBytesPerSend: 2_000, lagIntervalMs: 60_000 } });
    await router.start();
    const groupId = routerGroupId(config);
    await waitFor(
      async () => {
        const ends = await tk.admin.fetchTopicOffsets(names.calls);
        const [committed] = await tk.admin.fetchOffsets({ groupId, topics: [names.calls] });
        return topicLag(ends, committed?.partitions ?? []) === 0;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'the router to commit both calls' },
    );
    const seen = (await tk.readAll(events)).map((m) => JSON.parse(m.text) as { kind: string; userId: string; sourceId: string });
    expect(new Set(seen.map((r) => `${r.kind} ${r.userId} ${r.sourceId}`))).toEqual(new Set(['seen u-big web', 'seen u-2 web']));
  }, 120_000);
});
