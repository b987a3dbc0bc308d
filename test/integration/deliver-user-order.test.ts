// Per-user order (`ordering: user`, docs/webhooks.md#per-user-order) through the real
// `switchyard deliverer`: users A and B interleaved, A's first event answered 503 twice.
// A's events arrive 0..9, none of A's later events is sent before A's first is taken,
// and all of B's are delivered meanwhile; the same across a SIGKILL while A is held.
import { describe, expect, it } from 'vitest';
import { startRole } from '../support/daemon.js';
import { useDelivererBed } from '../support/deliverer-bed.js';
import { writeDelivererConfig } from '../support/deliverer-config.js';
import { randomName, randomPrefix } from '../support/kafka.js';
import type { ReceivedRequest, Reply } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const PER_USER = 10;
const body = (user: string, i: number) =>
  `{"version":1,"type":"track","userId":"${user}","messageId":"${user}-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Step ${i}","properties":{}}`;

const bed = useDelivererBed();
const daemons = bed.daemons;

/** What the receiver saw: each request's message id and answer, in arrival order. */
interface Seen {
  id: string;
  status: number;
}

/** A's first event gets 503 `failures` times; everything else 200 after 20 ms. */
async function orderedReceiver(failures: number) {
  const receiver = await bed.receiver();
  const seen: Seen[] = [];
  let aFirstTries = 0;
  receiver.replyWith((request: ReceivedRequest): Reply => {
    const { messageId } = JSON.parse(request.text) as { messageId: string };
    const fail = messageId === 'A-0' && aFirstTries++ < failures;
    const status = fail ? 503 : 200;
    seen.push({ id: messageId, status });
    return { status, delayMs: fail ? 0 : 20 };
  });
  return { receiver, seen };
}

async function produceInterleaved(prefix: string, destination: string): Promise<void> {
  const events = Array.from({ length: PER_USER }, (_, i) => ['A', 'B'].map((user) => ({ key: user, value: body(user, i), messageId: `${user}-${i}` }))).flat();
  await bed.produceDeliveries(prefix, destination, events);
}

/** The order rules, checked on what the receiver saw (first 2xx of each event). */
function expectUserOrder(seen: readonly Seen[]): void {
  const delivered = (id: string) => seen.findIndex((s) => s.id === id && s.status === 200);
  const firstDeliveries = (user: string) => {
    const order: string[] = [];
    for (const s of seen) if (s.status === 200 && s.id.startsWith(`${user}-`) && !order.includes(s.id)) order.push(s.id);
    return order;
  };
  const inOrder = (user: string) => Array.from({ length: PER_USER }, (_, i) => `${user}-${i}`);
  expect(firstDeliveries('A')).toEqual(inOrder('A'));
  expect(firstDeliveries('B')).toEqual(inOrder('B'));
  const aTaken = delivered('A-0');
  expect(aTaken).toBeGreaterThan(-1);
  // None of A's later events was sent before A's first was taken.
  const firstLaterA = seen.findIndex((s) => s.id.startsWith('A-') && s.id !== 'A-0');
  expect(firstLaterA).toBeGreaterThan(aTaken);
  // A's hold held back no one else: every B event was delivered before A's first was.
  for (const id of inOrder('B')) expect(delivered(id)).toBeLessThan(aTaken);
  expect(seen.filter((s) => s.id === 'A-0' && s.status === 503)).toHaveLength(2);
}

function config(prefix: string, url: string): string {
  return writeDelivererConfig({
    clientId: randomName('order'),
    topicPrefix: prefix,
    partitions: 2,
    delivery: { timeout: '2s', retryTiers: ['2s'], maxRetryWindow: '10m', concurrencyPerDestination: 8 },
    destinations: { ordered: { url, ordering: 'user' } },
  });
}

describe('per-user order', () => {
  it("holds back only the failing user's later events until its first is taken", { timeout: 90_000 }, async () => {
    const prefix = randomPrefix();
    const { receiver, seen } = await orderedReceiver(2);
    const file = config(prefix, receiver.url());
    await produceInterleaved(prefix, 'ordered');
    const daemon = await startRole('deliverer', file);
    daemons.push(daemon);
    await waitFor(() => new Set(seen.filter((s) => s.status === 200).map((s) => s.id)).size === 2 * PER_USER, { timeoutMs: 60_000, what: 'every event of A and B delivered' });
    expectUserOrder(seen);
    daemon.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
  });

  it('keeps the order across a SIGKILL while A is held', { timeout: 120_000 }, async () => {
    const prefix = randomPrefix();
    const { receiver, seen } = await orderedReceiver(2);
    const file = config(prefix, receiver.url());
    await produceInterleaved(prefix, 'ordered');
    const first = await startRole('deliverer', file);
    daemons.push(first);
    // A's first answered 503 once (its retry waits in the lane), B's all delivered: kill.
    await waitFor(() => seen.some((s) => s.id === 'A-0') && seen.filter((s) => s.id.startsWith('B-') && s.status === 200).length >= PER_USER, {
      timeoutMs: 60_000,
      what: "A's first event refused and B's delivered",
    });
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(seen.some((s) => s.id.startsWith('A-') && s.id !== 'A-0')).toBe(false);

    const second = await startRole('deliverer', file);
    daemons.push(second);
    await waitFor(() => new Set(seen.filter((s) => s.status === 200).map((s) => s.id)).size === 2 * PER_USER, { timeoutMs: 60_000, what: 'every event of A and B delivered after the restart' });
    expectUserOrder(seen);
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
