// No call is lost when the router process dies at an arbitrary instant: a real
// `switchyard router` child process is SIGKILLed while it routes 10,000 calls, a new
// one finishes the job, and every call's messageId is in the delivery topic.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { topicLag } from '../../src/observability/consumer-lag.js';
import { killAll, startDaemon, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const CALLS = 10_000;
const PARTITIONS = 3;

describe('router crash (SIGKILL mid-stream)', () => {
  let tk: Awaited<ReturnType<typeof createTestKafka>>;
  const daemons: Daemon[] = [];
  const prefix = randomPrefix();
  const names = topicNames(prefix);
  const clientId = randomName('crash');
  const groupId = `${prefix}router`;
  let file: string;

  const total = async (topic: string) =>
    (await tk.admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
  const lag = async () => {
    const ends = await tk.admin.fetchTopicOffsets(names.calls);
    const [committed] = await tk.admin.fetchOffsets({ groupId, topics: [names.calls] });
    return topicLag(ends, committed?.partitions ?? []);
  };

  beforeAll(async () => {
    tk = await createTestKafka();
    file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId, topicPrefix: prefix, partitions: PARTITIONS },
      admin: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', destinations: ['main'] }],
      destinations: [{ id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/main' }] } }],
    });
    await tk.createTopic(names.calls, PARTITIONS);
    const properties = JSON.stringify({ sku: 'A-100', note: 'n'.repeat(300) });
    for (let start = 0; start < CALLS; start += 1_000) {
      await tk.produce(
        names.calls,
        Array.from({ length: 1_000 }, (_, i) => {
          const n = start + i;
          return {
            key: `u-${n % 97}`,
            value: `{"type":"track","userId":"u-${n % 97}","messageId":"m-${n}","event":"Order Completed","properties":${properties}}`,
            headers: { 'source-id': 'web' },
          };
        }),
      );
    }
  });

  afterAll(async () => {
    await killAll(daemons);
    await tk?.close();
  });

  it('loses nothing when killed with SIGKILL while routing, and a restarted router completes', async () => {
    // The first router, killed once about a quarter of the deliveries are in Kafka.
    const first = startDaemon(['router', '--config', file]);
    daemons.push(first);
    await waitFor(
      async () => (await tk.admin.listTopics()).includes(names.deliveries('main')) && (await total(names.deliveries('main'))) >= CALLS / 4,
      { timeoutMs: 60_000, intervalMs: 20, what: `a quarter of the deliveries; router output:\n${first.output().slice(-2000)}` },
    );
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const lagAtKill = await lag();
    // The kill landed before the work was done (else this test would prove nothing).
    expect(lagAtKill).toBeGreaterThan(0);

    // A second router picks up from the last commit and finishes.
    const second = await startRole('router', file);
    daemons.push(second);
    await waitFor(async () => (await lag()) === 0, { timeoutMs: 45_000, intervalMs: 200, what: `group ${groupId} to commit every call` });

    const delivered = await tk.readAll(names.deliveries('main'), { atLeast: CALLS, timeoutMs: 30_000 });
    const ids = new Set(delivered.map((m) => m.headers['message-id']));
    const missing = Array.from({ length: CALLS }, (_, n) => `m-${n}`).filter((id) => !ids.has(id));
    expect(missing).toEqual([]);
    expect(ids.size).toBe(CALLS);
    // Each delivery is the call's body (duplicates from the replayed batch are allowed).
    const one = delivered.find((m) => m.headers['message-id'] === 'm-0');
    expect(one?.text).toMatch(/^\{"version":1,"type":"track","userId":"u-0","messageId":"m-0","timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","event":"Order Completed","properties":\{"sku":"A-100","note":"n+"\}\}$/);
    process.stderr.write(
      `router crash test: lag at kill ${lagAtKill} of ${CALLS}; ${delivered.length} deliveries for ${CALLS} calls (${delivered.length - CALLS} duplicates)\n`,
    );

    // SIGTERM: the second router drains, commits and exits 0.
    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    expect(second.logs.some((line) => line.msg === 'router stopped')).toBe(true);
  });
});
