// SIGKILL of the real `switchyard deliverer` process with requests in flight and
// retries pending: after a restart every event reaches its receiver at least once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRole } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { writeDelivererConfig } from '../support/deliverer-config.js';
import { createTestKafka, randomName, randomPrefix } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const EVENTS = 30;
const RETRIED = new Set(['e-1', 'e-3', 'e-5', 'e-7']);
const body = (id: string) => `{"version":1,"type":"track","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{}}`;

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

describe('deliverer crash', () => {
  it('loses nothing when killed with requests in flight and retries pending', async () => {
    const prefix = randomPrefix();
    const file = writeDelivererConfig({
      clientId: randomName('crash'),
      topicPrefix: prefix,
      partitions: 3,
      delivery: { timeout: '20s', retryTiers: ['1s', '2s'], maxRetryWindow: '5m', concurrencyPerDestination: 16 },
      destinations: { hooks: receiver.url() },
    });

    // First request: held unanswered for even-numbered events (in flight at the kill);
    // 503 for four odd-numbered ones (a retry gets scheduled), 200 on their retry; 200
    // for the rest. NOTE: four, a few of the first attempts: a failure rate of half the
    // window's attempts (20 at least) would open the URL's circuit
    // (docs/webhooks.md#circuit-breaker) and the events after them would wait.
    const seen = new Map<string, number>();
    const acknowledged = new Set<string>();
    let holding = 0;
    let killed = false;
    receiver.replyWith((request) => {
      const id = (JSON.parse(request.text) as { messageId: string }).messageId;
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      if (killed) {
        acknowledged.add(id);
        return { status: 200 };
      }
      if (Number(id.split('-')[1]) % 2 === 0) {
        holding += 1;
        return 'hang';
      }
      if (n === 1 && RETRIED.has(id)) return { status: 503 };
      acknowledged.add(id);
      return { status: 200 };
    });

    const first = await startRole('deliverer', file);
    daemons.push(first);
    const ids = Array.from({ length: EVENTS }, (_, i) => `e-${i}`);
    await kafka.produce(
      `${prefix}deliveries.hooks`,
      ids.map((id) => ({ key: `u-${id}`, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } })),
    );
    await waitFor(() => seen.size === EVENTS && holding >= 3, { timeoutMs: 45_000, what: 'every event tried once and some retries in flight' });
    const pendingRetries = ids.filter((id) => seen.get(id) === 1).length;
    const inFlight = holding;

    first.kill('SIGKILL');
    killed = true;
    expect(await first.exited).toBe('SIGKILL');
    // Something was at stake when it died: requests unanswered, or retries not yet tried.
    expect(inFlight + pendingRetries).toBeGreaterThan(0);
    expect(acknowledged.size).toBeLessThan(EVENTS);

    const second = await startRole('deliverer', file);
    daemons.push(second);
    await waitFor(() => acknowledged.size === EVENTS, { timeoutMs: 60_000, what: `all ${EVENTS} events acknowledged by the receiver` });
    expect([...acknowledged].sort()).toEqual([...ids].sort());
    for (const id of ids) expect(receiver.requests.some((r) => r.text === body(id))).toBe(true);

    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.logs.some((line) => line.msg === 'stopped cleanly')).toBe(true);
  });
});
