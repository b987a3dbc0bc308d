// SIGTERM of the real `switchyard all` process in the middle of a steady stream of
// calls: it stops taking calls (503 or connection refused), finishes what it
// accepted, exits 0 within shutdownTimeout, and after a restart every call the
// gateway answered 200 for reaches the receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-sigterm-0001';
const AUTHORIZATION = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
const SHUTDOWN_TIMEOUT_MS = 20_000;
/** SIGTERM once this many calls were accepted. */
const ACCEPTED_BEFORE_SIGNAL = 150;
const SENDERS = 4;
/** Bounds the stream whatever happens: requests per sender. */
const MAX_REQUESTS_PER_SENDER = 2_000;

let receiver: Receiver;
const daemons: Daemon[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  // A little latency, so deliveries are in flight when the signal comes.
  receiver.reply({ status: 200, delayMs: 20 });
});

afterAll(async () => {
  for (const daemon of daemons) daemon.kill('SIGKILL');
  await receiver?.close();
});

interface Stream {
  accepted: Set<string>;
  /** After the signal: what each refused request got (status and code, or the connection error). */
  refusedAfterSignal: string[];
  done: Promise<void>;
}

/** SENDERS loops of single track calls, until `stop()` says so. */
function streamCalls(port: number, signalled: () => boolean, stop: () => boolean): Stream {
  const accepted = new Set<string>();
  const refusedAfterSignal: string[] = [];
  const sender = async (n: number) => {
    for (let i = 0; i < MAX_REQUESTS_PER_SENDER && !stop(); i++) {
      const messageId = `s${n}-${i}`;
      try {
        const response = await fetch(`http://127.0.0.1:${port}/v1/track`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: AUTHORIZATION },
          body: JSON.stringify({ userId: `u-${n}`, event: 'Stream Tick', messageId, properties: { i } }),
        });
        const text = await response.text();
        if (response.status === 200) {
          accepted.add(messageId);
          continue;
        }
        if (signalled()) refusedAfterSignal.push(`${response.status} ${(JSON.parse(text) as { code: string }).code}`);
        else throw new Error(`call ${messageId} refused before the signal: ${response.status} ${text}`);
      } catch (error) {
        if (!signalled()) throw error;
        const cause = (error as { cause?: { code?: string } }).cause;
        refusedAfterSignal.push(cause?.code ?? (error as Error).message);
        // The gateway is gone: pace the retries instead of spinning on ECONNREFUSED.
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  };
  const done = Promise.all(Array.from({ length: SENDERS }, (_, n) => sender(n))).then(() => undefined);
  return { accepted, refusedAfterSignal, done };
}

const messageIdOf = (text: string) => (JSON.parse(text) as { messageId: string }).messageId;

describe('switchyard all under load', () => {
  it('SIGTERM mid-stream: exits 0 in time, and every accepted call is delivered after a restart', async () => {
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('sigterm'), topicPrefix: randomPrefix(), partitions: 2 },
      gateway: { port: 0, host: '127.0.0.1' },
      admin: { port: 0, host: '127.0.0.1' },
      shutdownTimeout: `${SHUTDOWN_TIMEOUT_MS / 1000}s`,
      delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '5m', concurrencyPerDestination: 16 },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
    });
    const first = await startRole('all', file);
    daemons.push(first);
    const listening = await first.waitForLog((line) => line.msg === 'gateway listening', 'the gateway port');

    const at: { signal?: number; exit?: number } = {};
    const stream = streamCalls(listening.port as number, () => at.signal !== undefined, () => at.exit !== undefined);
    const failed = stream.done.then(
      () => undefined,
      (error: unknown) => error,
    );
    await waitFor(() => stream.accepted.size >= ACCEPTED_BEFORE_SIGNAL, { timeoutMs: 30_000, what: `${ACCEPTED_BEFORE_SIGNAL} accepted calls` });
    at.signal = Date.now();
    first.kill('SIGTERM');
    const code = await first.exited;
    at.exit = Date.now();
    const stoppedInMs = at.exit - at.signal;
    expect(await failed).toBeUndefined();
    expect(code, first.output().slice(-3000)).toBe(0);
    expect(stoppedInMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    expect(first.logs.some((line) => line.msg === 'stopped cleanly')).toBe(true);
    // The stream went on through the drain and was turned away, never left hanging.
    expect(stream.refusedAfterSignal.length).toBeGreaterThan(0);
    for (const refusal of stream.refusedAfterSignal) expect(refusal).toMatch(/^(503 shutting_down|ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|other side closed)$/);

    const accepted = [...stream.accepted];
    const second = await startRole('all', file);
    daemons.push(second);
    const delivered = () => new Set(receiver.requests.map((r) => messageIdOf(r.text)));
    const missing = () => accepted.filter((id) => !delivered().has(id));
    await waitFor(() => missing().length === 0, { timeoutMs: 30_000, what: `all ${accepted.length} accepted calls at the receiver` }).catch((error: Error) => {
      throw new Error(`${error.message}; missing: ${missing().slice(0, 20).join(', ')}`);
    });
    // A clean stop committed what it finished: nothing was delivered twice.
    const counts = new Map<string, number>();
    for (const r of receiver.requests) counts.set(messageIdOf(r.text), (counts.get(messageIdOf(r.text)) ?? 0) + 1);
    expect([...counts].filter(([, n]) => n > 1)).toEqual([]);

    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
