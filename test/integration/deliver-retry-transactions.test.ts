// The deliverer's moves to a retry tier or the dead-letter topic with
// `kafka.transactions: true` (docs/kafka.md#transactions): each move is written with the
// offset of the record it moves in one Kafka transaction, so a read_committed reader of
// the retry topics and the dead letters sees each move once: every attempt number of an
// event once in its retry tiers, and the event once in the dead letters. Shown with a
// receiver that answers 503 to everything, running, and across SIGKILLs of
// `switchyard deliverer` (whose open transactions the broker aborts: their records are
// in the log, never read).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, readCommitted, readUncommitted, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const TIERS = ['300ms', '600ms'];
const body = (i: number) => `{"version":1,"type":"track","userId":"u${i % 40}","messageId":"m-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Step","properties":{"i":${i}}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
const daemons: Daemon[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
  receiver.reply({ status: 503 });
});

afterAll(async () => {
  await killAll(daemons);
  await receiver?.close();
  await kafka?.close();
});

/** A deliverer config with transactions on, one webhook destination `hooks` that always gets 503. */
function configFile(prefix: string, window: string): string {
  return writeConfigFile({
    kafka: { brokers: testBrokers(), clientId: randomName('rtx'), topicPrefix: prefix, partitions: 3, transactions: true },
    admin: { port: 0, host: '127.0.0.1' },
    // NOTE: the circuit breaker kept out of the way: every event is attempted at each due time, so it moves through every tier.
    delivery: { timeout: '2s', retryTiers: TIERS, maxRetryWindow: window, concurrencyPerDestination: 16, circuitBreaker: { minAttempts: 1_000_000, unanswered: 1_000_000 } },
    sources: [{ id: 'web' }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
  });
}

async function feed(prefix: string, from: number, to: number): Promise<void> {
  const events = Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return { key: `u${i % 40}`, value: body(i), headers: { 'source-id': 'web', 'message-id': `m-${i}`, attempt: '0', 'first-attempt-at': '' } };
  });
  for (let start = 0; start < events.length; start += 500) await kafka.produce(`${prefix}deliveries.hooks`, events.slice(start, start + 500));
}

/** Offsets taken in `topic` (records, and transaction markers): a cheap sign of progress. */
async function offsetsTaken(topic: string): Promise<number> {
  if (!(await kafka.admin.listTopics()).includes(topic)) return 0;
  return (await kafka.admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
}

/** `message-id#attempt` of each record. */
const moves = (records: readonly ReadMessage[]): string[] => records.map((r) => `${r.headers['message-id']}#${r.headers.attempt}`);

/** The moves that appear more than once. */
function twice(all: readonly string[]): string[] {
  const seen = new Set<string>();
  return [...new Set(all.filter((m) => seen.has(m) || !seen.add(m)))];
}

/**
 * Checks each event's moves, read committed: the dead letters hold every event once, and
 * its retry tiers hold attempts 1 … n−1 once each, n being the dead letter's attempts.
 */
function expectEachMovedOnce(events: number, retried: readonly ReadMessage[], dead: readonly ReadMessage[]): void {
  const expected = Array.from({ length: events }, (_, i) => `m-${i}`).sort();
  expect(twice(moves(retried)), 'retry records written twice').toEqual([]);
  expect(twice(dead.map((r) => r.headers['message-id']!)), 'dead letters written twice').toEqual([]);
  expect(dead.map((r) => r.headers['message-id']!).sort()).toEqual(expected);
  const attemptsOf = new Map<string, number[]>();
  for (const r of retried) {
    const id = r.headers['message-id']!;
    attemptsOf.set(id, [...(attemptsOf.get(id) ?? []), Number(r.headers.attempt)]);
  }
  for (const letter of dead) {
    const id = letter.headers['message-id']!;
    const n = Number(letter.headers.attempt);
    expect(n, `${id}: attempts before its dead letter`).toBeGreaterThanOrEqual(2);
    expect([...(attemptsOf.get(id) ?? [])].sort((a, b) => a - b), `${id}: attempts in the retry tiers`).toEqual(Array.from({ length: n - 1 }, (_, k) => k + 1));
  }
}

async function readMoves(prefix: string, events: number): Promise<{ retried: ReadMessage[]; dead: ReadMessage[] }> {
  const dead = await readCommitted(`${prefix}deliveries.hooks.dlq`, { atLeast: events, settleMs: 1_500, timeoutMs: 90_000 });
  const retried = (await Promise.all(TIERS.map((tier) => readCommitted(`${prefix}deliveries.hooks.retry.${tier}`, { atLeast: 0, settleMs: 200 })))).flat();
  return { retried, dead };
}

describe('retries and dead letters in transactions (kafka.transactions: true)', () => {
  it('moves each failing event once through its retry tiers and once to the dead letters', { timeout: 120_000 }, async () => {
    const EVENTS = 300;
    const prefix = randomPrefix();
    const file = configFile(prefix, '2s');
    await feed(prefix, 0, EVENTS);
    const daemon = await startRole('deliverer', file);
    daemons.push(daemon);
    const { retried, dead } = await readMoves(prefix, EVENTS);
    expectEachMovedOnce(EVENTS, retried, dead);
    expect(retried.length).toBeGreaterThanOrEqual(EVENTS * 2);
    // Written in transactions: each tier's and the dead letters' logs hold commit markers beside the records.
    for (const tier of TIERS) {
      const topic = `${prefix}deliveries.hooks.retry.${tier}`;
      const records = retried.filter((r) => r.topic === topic).length;
      expect(await offsetsTaken(topic), topic).toBeGreaterThan(records);
    }
    expect(await offsetsTaken(`${prefix}deliveries.hooks.dlq`)).toBeGreaterThan(EVENTS);
    daemon.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
  });

  it('moves each event once across SIGKILLs of the deliverer; aborted moves are never read', { timeout: 240_000 }, async () => {
    const EVENTS = 600;
    const KILLS = 3;
    const prefix = randomPrefix();
    const file = configFile(prefix, '6s');
    const moved = async () => (await offsetsTaken(`${prefix}deliveries.hooks.dlq`)) + (await Promise.all(TIERS.map((t) => offsetsTaken(`${prefix}deliveries.hooks.retry.${t}`)))).reduce((a, b) => a + b, 0);
    await feed(prefix, 0, EVENTS / 2);
    for (let kill = 0; kill < KILLS; kill++) {
      const daemon = await startRole('deliverer', file);
      daemons.push(daemon);
      const before = await moved();
      // Killed mid-stream, once it moved some more events.
      await waitFor(async () => (await moved()) > before + 100, { timeoutMs: 60_000, what: `moves before kill ${kill + 1}` });
      if (kill === 0) await feed(prefix, EVENTS / 2, EVENTS);
      daemon.kill('SIGKILL');
      expect(await daemon.exited).toBe('SIGKILL');
    }
    const last = await startRole('deliverer', file);
    daemons.push(last);
    const { retried, dead } = await readMoves(prefix, EVENTS);
    expectEachMovedOnce(EVENTS, retried, dead);
    // What the killed deliverers' open transactions had written is in the logs, aborted: never read above.
    const at = (r: ReadMessage) => `${r.topic}/${r.partition}@${r.offset}`;
    const read = new Set([...retried, ...dead].map(at));
    const everything = (await Promise.all([`${prefix}deliveries.hooks.dlq`, ...TIERS.map((t) => `${prefix}deliveries.hooks.retry.${t}`)].map((topic) => readUncommitted(topic)))).flat();
    const aborted = everything.filter((r) => !read.has(at(r)));
    process.stderr.write(`retries in transactions over ${KILLS} SIGKILLs: ${retried.length} retry records and ${dead.length} dead letters read committed, ${aborted.length} aborted record(s) in the logs\n`);
    // Each aborted move was made again by the partition's next owner (to where its attempt then led: a retry tier, or the dead letters once its window ended), read once above.
    const lastAttempt = new Map(dead.map((r) => [r.headers['message-id']!, Number(r.headers.attempt)]));
    for (const r of aborted) expect(Number(r.headers.attempt), `aborted ${at(r)} made again`).toBeLessThanOrEqual(lastAttempt.get(r.headers['message-id']!) ?? 0);
    last.kill('SIGTERM');
    expect(await last.exited).toBe(0);
  });
});
