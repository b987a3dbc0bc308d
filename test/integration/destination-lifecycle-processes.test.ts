// A destination's transitions written once by two `switchyard deliverer` processes
// (docs/operations.md#operational-events): real child processes, as two pods run, each
// counting its own attempts of a receiver that answers 503. The operations topic gets
// `destination.failing` at half of `after` and at 90 %, then `destination.disabled`,
// each once, and the operations webhook one request per event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver, staysQuiet } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const SECRET = `whsec_${Buffer.from('operations-webhook-test-key-0002').toString('base64')}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let down: Receiver;
let operations: Receiver;
let prefix: string;
let file: string;
const daemons: Daemon[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  down = await startReceiver();
  down.reply({ status: 503 });
  operations = await startReceiver();
  prefix = randomPrefix();
  file = writeConfigFile({
    kafka: { brokers: testBrokers(), clientId: randomName('lifecycle-processes'), topicPrefix: prefix, partitions: 2 },
    admin: { port: 0, host: '127.0.0.1' },
    delivery: { timeout: '1s', retryTiers: ['200ms'], maxRetryWindow: '120s', circuitBreaker: { minAttempts: 1000, unanswered: 1000 } },
    sources: [{ id: 'web' }],
    operations: { webhooks: [{ url: operations.url('/ops'), secret: SECRET }] },
    destinations: [{ id: 'down', type: 'webhooks', settings: { webhooks: [{ url: down.url() }], autoDisable: { after: '4s', minAttempts: 3 } } }],
  });
  daemons.push(...(await Promise.all([startRole('deliverer', file), startRole('deliverer', file)])));
}, 180_000);

afterAll(async () => {
  await killAll(daemons);
  for (const receiver of [down, operations]) await receiver?.close();
  await kafka?.close();
});

describe('two deliverer processes', () => {
  it('write each transition of a failing destination once, to the topic and to the webhook', async () => {
    // Two users, so both processes (two partitions) attempt and report.
    await kafka.produce(
      `${prefix}deliveries.down`,
      ['u-1', 'u-2', 'u-3', 'u-4'].map((userId, i) => ({
        key: userId,
        value: `{"version":1,"type":"track","userId":"${userId}","messageId":"m-${i}","event":"Order Completed"}`,
        headers: { 'source-id': 'web', 'message-id': `m-${i}`, attempt: '0', 'first-attempt-at': '' },
      })),
    );
    const read = async () => (await kafka.readAll(`${prefix}operations`, { timeoutMs: 30_000 })).map((m) => JSON.parse(m.text) as Record<string, unknown>);
    await waitFor(async () => (await read()).some((e) => e.type === 'destination.disabled'), { timeoutMs: 90_000, what: 'destination.disabled on the operations topic' });
    await waitFor(() => operations.requests.length >= 3, { what: 'three requests at the operations webhook' });
    // Both processes keep deciding every tick: nothing more may come.
    expect(await staysQuiet(operations, 2_000)).toBe(true);
    const events = await read();
    expect(events.map((e) => [e.type, e.share ?? null])).toEqual([
      ['destination.failing', 0.5],
      ['destination.failing', 0.9],
      ['destination.disabled', null],
    ]);
    expect(operations.requests.map((r) => r.headers['webhook-id'])).toEqual(events.map((e) => e.id));
    // Both processes attempted (each holds a partition), so both reported and both decided.
    for (const daemon of daemons) {
      const port = Number(daemon.logs.find((l) => l.msg === 'admin server listening')?.port);
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const attempts = [...metrics.matchAll(/^switchyard_delivery_attempts_total\{[^}]*destination="down"[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
      expect(attempts).toBeGreaterThan(0);
    }
  }, 150_000);
});
