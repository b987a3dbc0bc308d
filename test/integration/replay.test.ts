// `switchyard replay`: dead letters go back for delivery once the receiver recovers,
// each one once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createKafka } from '../../src/kafka/client.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { Service } from '../../src/runtime/service.js';
import { startDaemon, writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { printedUrl, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const body = (id: string) => `{"version":1,"type":"track","userId":"u-1","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Trial Started","properties":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let service: Service;

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});

afterAll(async () => {
  await service?.stop();
  await receiver?.close();
  await kafka?.close();
});

async function replay(file: string, args: string[] = []): Promise<{ code: number | string; output: string }> {
  const daemon = startDaemon(['replay', '--destination', 'hooks', '--config', file, ...args]);
  const code = await daemon.exited;
  return { code, output: daemon.output() };
}

describe('replay', () => {
  it('moves dead letters back with fresh attempt headers, once each, up to --limit', async () => {
    const prefix = randomPrefix();
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('replay'), topicPrefix: prefix, partitions: 2 },
      delivery: { retryTiers: ['200ms'], maxRetryWindow: '10s' },
      sources: [{ id: 'web' }], // a config needs a source; this test only delivers
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
    });
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const config = loaded.config;
    service = createDelivererService({ config: staticConfigStore(config), kafka: createKafka(config.kafka, silentLogger()), metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger() });
    await service.start();
    await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to be ready' });

    // 501: permanent (docs/webhooks.md#delivery-and-retries), so each event is dead-lettered after one request, and
    // the URL's circuit breaker, which counts only retryable failures, stays closed.
    receiver.reply({ status: 501 });
    const ids = ['r-1', 'r-2', 'r-3'];
    await kafka.produce(
      `${prefix}deliveries.hooks`,
      ids.map((id) => ({ key: 'u-1', value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
    );
    const dead = await kafka.readAll(`${prefix}deliveries.hooks.dlq`, { atLeast: 3 });
    expect(dead.map((m) => m.headers.error)).toEqual(ids.map(() => `${printedUrl(receiver.url())}: 501 Not Implemented`));

    // The receiver recovers; the operator replays two, then the rest, then finds none left.
    receiver.reply({ status: 200 });
    const delivered = () => receiver.requests.filter((r, i) => i >= 3).map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);

    const firstRun = await replay(file, ['--limit', '2']);
    expect(firstRun.code).toBe(0);
    expect(firstRun.output).toContain('replayed 2 dead letter(s) of "hooks" back to delivery');
    await waitFor(() => delivered().length === 2, { what: 'two replayed events delivered' });

    const secondRun = await replay(file);
    expect(secondRun.code).toBe(0);
    expect(secondRun.output).toContain('replayed 1 dead letter(s) of "hooks" back to delivery');
    await waitFor(() => delivered().length === 3, { what: 'the third replayed event delivered' });
    expect(delivered().sort()).toEqual(ids);
    expect(receiver.requests.slice(3).map((r) => r.text).sort()).toEqual(ids.map(body));

    const thirdRun = await replay(file);
    expect(thirdRun.code).toBe(0);
    expect(thirdRun.output).toContain('replayed 0 dead letter(s) of "hooks" back to delivery');

    // What replay wrote beside the three originals: the same bytes, key and headers,
    // with attempt counting from 0 again and no trace of the dead-letter stage. The
    // originals had their receipt time only as the record timestamp (as the router
    // writes recent calls); the dead letters, and so the replays, carry it as `received-at`.
    const main = await kafka.readAll(`${prefix}deliveries.hooks`, { atLeast: 6 });
    expect(main).toHaveLength(6);
    expect(main.map((m) => m.text).sort()).toEqual([...ids, ...ids].map(body).sort());
    const messageId = (m: (typeof main)[number]) => (JSON.parse(m.text) as { messageId: string }).messageId;
    // One key, so one partition: the three originals come first.
    const originals = [...main].sort((a, b) => Number(a.offset) - Number(b.offset)).slice(0, 3);
    const receivedAt = new Map(originals.map((m) => [messageId(m), m.timestamp]));
    for (const m of main) {
      expect(m.key).toBe('u-1');
      const replayed = !originals.includes(m);
      expect(m.headers).toEqual({
        'source-id': 'web',
        'message-id': messageId(m),
        attempt: '0',
        'first-attempt-at': '',
        ...(replayed ? { 'received-at': receivedAt.get(messageId(m)) } : {}),
      });
    }
  });
});
