// "The 200 comes after the Kafka ack": a gateway on its own broker, whose process is
// stopped under it. While Kafka cannot acknowledge, the answer is 503 with Retry-After,
// never 200; once the broker is back, the gateway accepts again without a restart.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestAdmin, randomName, randomPrefix, readTopic } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';

const WRITE_KEY = 'wk-kafka-down-0001';

async function postBatch(base: string, userId: string): Promise<{ status: number; headers: Record<string, unknown>; json: Record<string, unknown> }> {
  const res = await request(`${base}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}` },
    body: JSON.stringify({ batch: [{ type: 'track', userId, event: 'Kafka Test' }] }),
  });
  return { status: res.statusCode, headers: res.headers, json: (await res.body.json()) as Record<string, unknown> };
}

describe('gateway when Kafka is unavailable', () => {
  const prefix = randomPrefix();
  let broker: DedicatedBroker;
  let gateway: GatewayService;
  let base: string;

  beforeAll(async () => {
    broker = await startDedicatedBroker();
    const config = testConfig(
      {
        kafka: { brokers: [broker.brokers], topicPrefix: prefix, partitions: 1 },
        gateway: { port: 0, host: '127.0.0.1' },
        sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/hook' }] } }],
      },
      'kafka-down.yaml',
    );
    gateway = createGatewayService(
      testRoleDeps(config),
      // A shorter bound than production's 10 s keeps the test quick; the behaviour is the same.
      { sendTimeoutMs: 3_000 },
    );
    await gateway.start();
    base = `http://127.0.0.1:${gateway.port()}`;
  });

  afterAll(async () => {
    await gateway?.stop();
    await broker?.stop();
  });

  it('answers 200 while the broker acknowledges, 503 with Retry-After while it cannot, and 200 again once it is back', async () => {
    const before = randomName('u');
    expect((await postBatch(base, before)).status).toBe(200);

    await broker.stopProcess();
    const during = randomName('u');
    const refused = await postBatch(base, during);
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.headers['content-type']).toBe('application/json');
    expect(refused.json).toMatchObject({ success: false, code: 'kafka_unavailable' });
    // A generic message: Kafka's own error text (broker addresses, topics) stays in the log.
    expect(refused.json.message).toBe('the calls could not be written to Kafka; nothing of this request was accepted: send it again after the Retry-After delay');
    // Still ready (every replica shares the brokers), but the health detail says which dependency fails, not its error.
    expect(gateway.health()).toMatchObject({ live: true, ready: true });
    expect(gateway.health().detail).toBe('Kafka: the last send failed');

    await broker.startProcess();
    const after = randomName('u');
    await waitFor(async () => (await postBatch(base, after)).status === 200, { timeoutMs: 60_000, what: 'the gateway to accept again' });
    expect(gateway.health().detail).toBeUndefined();

    const admin = createTestAdmin([broker.brokers]);
    try {
      const stored = await readTopic(admin, `${prefix}calls`, { atLeast: 2 }, [broker.brokers]);
      const keys = stored.map((m) => m.key);
      expect(keys).toContain(before);
      expect(keys).toContain(after);
      expect(stored.every((m) => m.headers['source-id'] === 'web')).toBe(true);
    } finally {
      await admin.close();
    }
  });
});
