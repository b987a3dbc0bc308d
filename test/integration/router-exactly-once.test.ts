// Exactly once between Switchyard's own topics (docs/kafka.md#transactions), on real
// processes and a real broker: the router SIGKILLed 10 times under a steady load, with
// a deliverer and a receiver that never fail, delivers every call exactly once (the
// dedupe window is off, so only the transactions can make it so); records of an
// aborted transaction never reach a receiver.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createKafka } from '../../src/kafka/client.js';
import { createTransactionalProducer } from '../../src/kafka/index.js';
import { killAll, startDaemon, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { staysQuiet, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const PARTITIONS = 3;
const KILLS = 10;

let tk: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
const daemons: Daemon[] = [];

beforeAll(async () => {
  tk = await createTestKafka();
  receiver = await startReceiver();
});

afterAll(async () => {
  await killAll(daemons);
  await receiver?.close();
  await tk?.close();
});

/** Deliveries per messageId the receiver got. */
function receivedCounts(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of receiver.requests) {
    const id = (JSON.parse(r.text) as { messageId: string }).messageId;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

describe('exactly once between Switchyard\'s own topics (Kafka transactions)', () => {
  it(`${KILLS} router SIGKILLs under a steady load: every call reaches the receiver exactly once`, { timeout: 600_000 }, async () => {
    const prefix = randomPrefix();
    const names = topicNames(prefix);
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('eos'), topicPrefix: prefix, partitions: PARTITIONS, transactions: true },
      admin: { port: 0, host: '127.0.0.1' },
      router: { dedupeWindow: '0' },
      sources: [{ id: 'web', destinations: ['main'] }],
      destinations: [{ id: 'main', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/main') }] } }],
    });
    await tk.createTopic(names.calls, PARTITIONS);
    const deliverer = await startRole('deliverer', file);
    daemons.push(deliverer);

    // The steady load: 20 calls every 100 ms until the kills are over.
    const sent: string[] = [];
    let producing = true;
    const load = (async () => {
      while (producing) {
        const batch = Array.from({ length: 20 }, (_, i) => `m-${sent.length + i}`);
        sent.push(...batch);
        await tk.produce(
          names.calls,
          batch.map((id) => ({ key: `u-${id}`, value: `{"type":"track","userId":"u-${id}","messageId":"${id}","event":"Order Completed","properties":{}}`, headers: { 'source-id': 'web' } })),
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    const deliveredNow = () => receiver.requests.length;
    for (let kill = 1; kill <= KILLS; kill++) {
      const router = startDaemon(['router', '--config', file]);
      daemons.push(router);
      const before = deliveredNow();
      // Killed once it made progress (its deliveries reach the receiver), at a random moment after.
      await waitFor(() => deliveredNow() > before, { timeoutMs: 90_000, intervalMs: 20, what: `router ${kill} to make progress; its output:\n${router.output().slice(-2000)}` });
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 700)));
      router.kill('SIGKILL');
      expect(await router.exited).toBe('SIGKILL');
    }
    producing = false;
    await load;

    const last = await startRole('router', file);
    daemons.push(last);
    await waitFor(() => receivedCounts().size === sent.length, { timeoutMs: 180_000, intervalMs: 200, what: `all ${sent.length} calls at the receiver (got ${receivedCounts().size})` });
    expect(await staysQuiet(receiver, 3_000)).toBe(true);
    const counts = receivedCounts();
    const twice = [...counts].filter(([, n]) => n > 1);
    const missing = sent.filter((id) => !counts.has(id));
    process.stderr.write(`router exactly-once test: ${sent.length} calls, ${KILLS} kills, ${receiver.requests.length} deliveries, ${twice.length} delivered more than once\n`);
    expect(missing).toEqual([]);
    expect(twice).toEqual([]);
    expect(receiver.requests.length).toBe(sent.length);
    // The delivery topic, read committed, holds each call once too.
    const records = await tk.readAll(names.deliveries('main'), { atLeast: sent.length, timeoutMs: 60_000 });
    expect(new Set(records.map((r) => r.headers['message-id'])).size).toBe(records.length);
    expect(records.length).toBe(sent.length);

    last.kill('SIGTERM');
    expect(await last.exited).toBe(0);
  });

  it('an aborted transaction\'s records never reach a receiver; a committed one\'s do', async () => {
    const prefix = randomPrefix();
    const names = topicNames(prefix);
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('eos-abort'), topicPrefix: prefix, partitions: 1, transactions: true },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/abort') }] } }],
    });
    const deliverer = await startRole('deliverer', file);
    daemons.push(deliverer);
    await waitFor(async () => (await tk.admin.listTopics()).includes(names.deliveries('hooks')), { timeoutMs: 30_000, what: 'the delivery topic' });
    const body = (id: string) => `{"version":1,"type":"track","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{}}`;
    const record = (id: string) => ({ key: `u-${id}`, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } });
    const client = createKafka({ brokers: testBrokers(), clientId: randomName('eos-writer'), topicPrefix: prefix, partitions: 1, replicationFactor: 1 }, pino({ level: 'silent' }));
    const producer = createTransactionalProducer(client, { transactionalId: randomName('eos-writer') });
    try {
      const aborted = await producer.begin();
      await aborted.send([{ topic: names.deliveries('hooks'), messages: [record('aborted-1'), record('aborted-2')] }]);
      await aborted.abort();
      const committed = await producer.begin();
      await committed.send([{ topic: names.deliveries('hooks'), messages: [record('committed-1')] }]);
      await committed.commit();
    } finally {
      await producer.close();
    }
    const at = (id: string) => receiver.requests.filter((r) => r.path === '/abort' && r.text === body(id));
    await waitFor(() => at('committed-1').length === 1, { timeoutMs: 30_000, what: 'the committed record at the receiver' });
    expect(await staysQuiet(receiver, 2_000)).toBe(true);
    expect(at('aborted-1')).toEqual([]);
    expect(at('aborted-2')).toEqual([]);
  });
});
