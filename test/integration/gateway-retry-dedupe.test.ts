// A client retrying its POST after a gateway SIGKILL gets one delivery per call
// (docs/kafka.md#copies-of-a-call). Real `switchyard gateway` and `switchyard router`
// processes on a real broker: the client POSTs batches while the gateway is SIGKILLed
// mid-stream, then, as a client that cannot know what was written, POSTs every batch
// again to a new gateway, whatever its first answer was. Each call's delivery record is
// written once; the copies are counted by the router.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const WRITE_KEY = 'wk-retry-0001';
const BATCHES = 200;
const PER_BATCH = 10;
const CALLS = BATCHES * PER_BATCH;

describe('a client retrying its POSTs after a gateway SIGKILL', () => {
  let tk: Awaited<ReturnType<typeof createTestKafka>>;
  const daemons: Daemon[] = [];
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  let file: string;

  beforeAll(async () => {
    tk = await createTestKafka();
    file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('gw-retry'), topicPrefix: prefix, partitions: 3 },
      gateway: { port: 0, host: '127.0.0.1' },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
    });
  });

  afterAll(async () => {
    await killAll(daemons);
    await tk?.close();
  });

  async function startGateway(): Promise<{ daemon: Daemon; url: string }> {
    const daemon = await startRole('gateway', file);
    daemons.push(daemon);
    const listening = await daemon.waitForLog((line) => line.msg === 'gateway listening', 'the gateway port');
    return { daemon, url: `http://127.0.0.1:${listening.port as number}/v1/batch` };
  }

  const batchBody = (b: number) =>
    JSON.stringify({
      batch: Array.from({ length: PER_BATCH }, (_, i) => ({ type: 'track', userId: `u-${(b * PER_BATCH + i) % 53}`, event: 'Order Completed', messageId: `m-${b}-${i}`, properties: { b, i } })),
    });
  const post = (url: string, b: number) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}` },
      body: batchBody(b),
    }).then(
      (response) => response.status,
      () => 0,
    );

  it('delivers each call once when every batch is POSTed again after the kill', async () => {
    const router = await startRole('router', file);
    daemons.push(router);
    const first = await startGateway();

    // Eight clients POST the batches; the gateway dies after about a third were answered.
    const answers: number[] = new Array<number>(BATCHES).fill(-1);
    let next = 0;
    const clients = Array.from({ length: 8 }, async () => {
      while (next < BATCHES) {
        const b = next++;
        answers[b] = await post(first.url, b);
      }
    });
    await waitFor(() => answers.filter((status) => status === 200).length >= BATCHES / 3, { what: 'a third of the batches accepted', intervalMs: 5 });
    first.daemon.kill('SIGKILL');
    expect(await first.daemon.exited).toBe('SIGKILL');
    await Promise.all(clients);
    const acceptedBeforeKill = answers.filter((status) => status === 200).length;
    // The kill landed mid-stream: some batches were refused or cut off (else this proves little).
    expect(acceptedBeforeKill).toBeLessThan(BATCHES);

    // The client cannot know what the dead gateway wrote: it sends every batch again.
    const second = await startGateway();
    for (let b = 0; b < BATCHES; b += 20) {
      const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => post(second.url, b + i)));
      expect(statuses.every((status) => status === 200)).toBe(true);
    }

    const delivered = await tk.readAll(names.deliveries('hooks'), { atLeast: CALLS, timeoutMs: 60_000 });
    // Wait past the last copies: the router has routed everything the gateways wrote.
    const written = async () => (await tk.admin.fetchTopicOffsets(names.calls)).reduce((sum, p) => sum + Number(p.high), 0);
    const callsWritten = await written();
    await waitFor(
      async () => {
        const [group] = await tk.admin.fetchOffsets({ groupId: `${prefix}router`, topics: [names.calls] });
        return (group?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0) === callsWritten;
      },
      { timeoutMs: 60_000, what: 'the router to commit every written call' },
    );
    const all = await tk.readAll(names.deliveries('hooks'), { atLeast: delivered.length, timeoutMs: 10_000 });
    const ids = all.map((m) => String(m.headers['message-id']));
    const counts = new Map<string, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id);
    const expected = Array.from({ length: BATCHES }, (_, b) => Array.from({ length: PER_BATCH }, (__, i) => `m-${b}-${i}`)).flat();
    expect(expected.filter((id) => !counts.has(id))).toEqual([]);
    expect(twice).toEqual([]);
    expect(all.length).toBe(CALLS);
    // The copies reached `calls` and were dropped by the router, counted there.
    expect(callsWritten).toBeGreaterThan(CALLS);
    const metrics = await fetch(`http://127.0.0.1:${(await router.waitForLog((line) => line.msg === 'admin server listening', 'the admin port')).port as number}/metrics`).then((r) => r.text());
    const copies = Number(/switchyard_calls_deduplicated_total\{source="web"\} (\d+)/.exec(metrics)?.[1] ?? '0');
    expect(copies).toBe(callsWritten - CALLS);
    process.stderr.write(`gateway retry test: ${acceptedBeforeKill} of ${BATCHES} batches accepted before the kill; ${callsWritten} calls written, ${copies} dropped as copies\n`);
  });
});
