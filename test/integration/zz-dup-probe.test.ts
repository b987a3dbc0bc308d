import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRole } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { writeDelivererConfig } from '../support/deliverer-config.js';
import { createTestKafka, randomName, randomPrefix } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
const daemons: Daemon[] = [];
beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});
afterAll(async () => {
  for (const d of daemons) d.kill('SIGKILL');
  await receiver?.close();
  await kafka?.close();
});
const body = (id: string) => `{"version":1,"type":"track","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{}}`;

describe('probe', () => {
  it('slow receivers, backlog', async () => {
    const prefix = randomPrefix();
    const dests: Record<string, string> = {};
    for (let d = 0; d < 10; d++) dests[`d${d}`] = receiver.url();
    const file = writeDelivererConfig({ clientId: randomName('probe'), topicPrefix: prefix, partitions: 1, delivery: { timeout: '5s', concurrencyPerDestination: 2 }, destinations: dests });
    const counts = new Map<string, number>();
    receiver.replyWith((request) => {
      const id = (JSON.parse(request.text) as { messageId: string }).messageId;
      counts.set(id, (counts.get(id) ?? 0) + 1);
      return { status: 200, delayMs: 2000 };
    });
    const admin = kafka;
    for (let d = 0; d < 10; d++) {
      await admin.produce(`${prefix}deliveries.d${d}`, Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: body(`d${d}-${i}`), headers: { 'message-id': `d${d}-${i}`, 'source-id': 's', 'content-type': 'application/json', attempt: '0' } })));
    }
    const daemon = await startRole('deliverer', file, { LOG_LEVEL: 'debug' });
    daemons.push(daemon);
    await waitFor(() => counts.size === 100, { timeoutMs: 90_000, what: 'all' });
    await new Promise((r) => setTimeout(r, 5000));
    const dups = [...counts].filter(([, n]) => n > 1);
    console.log('dups', dups.length, JSON.stringify(dups.slice(0, 10)));
    console.log(daemon.output?.().split('\n').filter((l: string) => /join|assign|revok|resubscri|generation|seek|release|rejoin/i.test(l)).slice(0, 60).join('\n'));
    expect(dups.length).toBe(0);
  }, 120_000);
});
