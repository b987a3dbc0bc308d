// The deliverer's readiness follows its lanes (docs/admin-api.md, `GET /readyz`):
// a destination the config enables has a lane before the deliverer says ready, as at a
// start under the lifecycle, where every destination is held back until the destination
// states are read (src/lifecycle/effective-config.ts heldConfig) and then released at once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { heldConfig } from '../../src/lifecycle/effective-config.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service, ServiceHealth } from '../../src/runtime/service.js';
import { captureLogs } from '../support/captured-logs.js';
import { mutableStore, testConfig } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const trackBody = (messageId: string) =>
  `{"version":1,"type":"track","userId":"u-1","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let service: Service | undefined;

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});

afterEach(async () => {
  await service?.stop();
  service = undefined;
});

afterAll(async () => {
  await receiver?.close();
  await kafka?.close();
});

describe('deliverer readiness', () => {
  it('is not ready from the moment a config enables a destination until its lane has joined, then delivers', async () => {
    const prefix = randomPrefix();
    const config = testConfig(
      {
        kafka: { brokers: testBrokers(), clientId: randomName('readiness'), topicPrefix: prefix, partitions: 1 },
        sources: [{ id: 'web' }],
        destinations: [
          { id: 'first', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/first') }] } },
          { id: 'second', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/second') }] } },
        ],
      },
      'deliver-readiness.test.yaml',
    );
    const store = mutableStore(heldConfig(config));
    service = createDelivererService({ config: store, kafka: createKafka(config.kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger() }, { sampleIntervalMs: 60_000 });
    await service.start();
    // Held back: nothing to deliver, so nothing to wait for.
    expect(service.health()).toEqual({ live: true, ready: true });

    // Released: the listener has run, the lanes are not made yet (their topics first).
    store.set(config);
    expect(service.health()).toEqual({
      live: true,
      ready: false,
      detail: 'applying the config: no lane yet for first, second (their topics are being made, or the deliverer is starting)',
    });
    const seen: boolean[] = [];
    await waitFor(
      () => {
        const { ready } = service!.health();
        seen.push(ready);
        return ready;
      },
      { timeoutMs: 60_000, intervalMs: 5, what: 'the lanes to join' },
    );
    // Never ready in between: not while the topics were made, nor while the group joined.
    expect(seen.slice(0, -1).every((ready) => !ready)).toBe(true);

    const headers = { 'source-id': 'web', 'message-id': 'r-1', attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) };
    await kafka.produce(`${prefix}deliveries.second`, [{ key: 'u-1', value: trackBody('r-1'), headers }]);
    await waitFor(() => receiver.requests.some((r) => r.path === '/second'), { what: 'the released destination to deliver' });
  });

  it('is not ready from the moment a reload that changes its topics is applied until the group has joined on them', async () => {
    const prefix = randomPrefix();
    const shape = (ids: string[]) =>
      testConfig(
        {
          kafka: { brokers: testBrokers(), clientId: randomName('readiness-reload'), topicPrefix: prefix, partitions: 1 },
          sources: [{ id: 'web' }],
          destinations: ids.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: receiver.url(`/${id}`) }] } })),
        },
        'deliver-readiness.test.yaml',
      );
    // NOTE: the health read in the log line's own write (pino writes synchronously): the
    // moment the new subscription is in place, before the old generation's revoke has run.
    const atApplied: ServiceHealth[] = [];
    const logs = captureLogs('info', (line) => {
      if (line.msg === 'delivering for the configured destinations') atApplied.push(service!.health());
    });
    const store = mutableStore(shape(['first']));
    service = createDelivererService(
      { config: store, kafka: createKafka(store.current().kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger: logs.logger },
      { sampleIntervalMs: 60_000 },
    );
    await service.start();
    await waitFor(() => service!.health().ready, { timeoutMs: 60_000, what: 'the deliverer to join' });
    const appliedBefore = atApplied.length;

    store.set(shape(['first', 'second']));
    await waitFor(() => atApplied.length > appliedBefore, { timeoutMs: 60_000, what: 'the reload to be applied' });
    expect(atApplied.at(-1)).toMatchObject({ ready: false, detail: expect.stringMatching(/^waiting for the consumer group .* to join$/) });
    await waitFor(() => service!.health().ready, { timeoutMs: 60_000, what: 'the group to join on the new topics' });
    // Ready again means joined on the new topics: the new destination's partition is fetched.
    const headers = { 'source-id': 'web', 'message-id': 'r-2', attempt: '0', 'first-attempt-at': '', 'received-at': String(Date.now()) };
    await kafka.produce(`${prefix}deliveries.second`, [{ key: 'u-1', value: trackBody('r-2'), headers }]);
    await waitFor(() => receiver.requests.some((r) => r.path === '/second' && r.text.includes('"r-2"')), { what: 'the added destination to deliver' });
  });
});
