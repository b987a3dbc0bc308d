// When a drain cannot finish (a receiver that never answers holds deliveries in
// flight), `switchyard all` is made to exit anyway: promptly on a second SIGTERM, or
// when shutdownTimeout runs out. Either way with a non-zero code, and with the
// unfinished deliveries left uncommitted, to be delivered by the next process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-forced-0001';
const CALLS = 3;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
const receivers: Receiver[] = [];
const daemons: Daemon[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
});

afterAll(async () => {
  for (const daemon of daemons) daemon.kill('SIGKILL');
  await Promise.all(receivers.map((r) => r.close()));
  await kafka?.close();
});

/**
 * `switchyard all` with a receiver that never answers, and CALLS calls accepted and
 * in flight to it. The delivery timeout (30 s) is longer than any wait here.
 */
async function startStuckDaemon(shutdownTimeout: string): Promise<{ daemon: Daemon; clientId: string; prefix: string }> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  receiver.reply('hang');
  const clientId = randomName('forced');
  const prefix = randomPrefix();
  const file = writeConfigFile({
    kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: 1 },
    gateway: { port: 0, host: '127.0.0.1' },
    admin: { port: 0, host: '127.0.0.1' },
    shutdownTimeout,
    delivery: { timeout: '30s', retryTiers: ['1s'], maxRetryWindow: '5m', concurrencyPerDestination: 8 },
    sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
  });
  const daemon = await startRole('all', file);
  daemons.push(daemon);
  const listening = await daemon.waitForLog((line) => line.msg === 'gateway listening', 'the gateway port');
  const batch = Array.from({ length: CALLS }, (_, i) => ({ type: 'track', userId: `u-${i}`, event: 'Stuck', messageId: `stuck-${i}` }));
  const response = await fetch(`http://127.0.0.1:${listening.port as number}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}` },
    body: JSON.stringify({ batch }),
  });
  expect(response.status).toBe(200);
  await waitFor(() => receiver.requests.length === CALLS, { what: `${CALLS} deliveries hanging at the receiver` });
  return { daemon, clientId, prefix };
}

/** Deliveries the deliverer's group has committed (the hanging ones must not be). */
async function committedDeliveries(prefix: string): Promise<number> {
  const [topic] = await kafka.admin.fetchOffsets({ groupId: `${prefix}deliverer`, topics: [`${prefix}deliveries.hooks`] });
  return topic!.partitions.reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

describe('forced exit', () => {
  it('a second SIGTERM during a slow drain exits non-zero at once', async () => {
    const { daemon, prefix } = await startStuckDaemon('25s');
    daemon.kill('SIGTERM');
    // Intake and routing have stopped; the deliverer waits on the hanging requests.
    await daemon.waitForLog((line) => line.msg === 'router stopped', 'the drain to reach the deliverer', 10_000);
    const secondAt = Date.now();
    daemon.kill('SIGTERM');
    expect(await daemon.exited).toBe(2);
    expect(Date.now() - secondAt).toBeLessThan(3_000);
    expect(daemon.logs.some((line) => line.msg === 'second signal: exiting now')).toBe(true);
    expect(daemon.logs.some((line) => line.msg === 'stopped cleanly')).toBe(false);
    expect(await committedDeliveries(prefix)).toBe(0);
  });

  it('a drain longer than shutdownTimeout is cut off with a non-zero exit', async () => {
    const { daemon, prefix } = await startStuckDaemon('2s');
    const signalAt = Date.now();
    daemon.kill('SIGTERM');
    expect(await daemon.exited).toBe(2);
    const tookMs = Date.now() - signalAt;
    expect(tookMs).toBeGreaterThanOrEqual(2_000);
    expect(tookMs).toBeLessThan(10_000);
    const timedOut = daemon.logs.find((line) => line.msg === 'shutdown timed out; exiting with work possibly uncommitted (it will be redelivered)');
    expect(timedOut).toMatchObject({ level: 50, timeoutMs: 2_000 });
    expect(await committedDeliveries(prefix)).toBe(0);
  });
});
