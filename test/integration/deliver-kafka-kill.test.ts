// Kafka destinations across 10 SIGKILLs of `switchyard deliverer` under load
// (docs/kafka.md#what-is-guaranteed): a read_committed consumer of the topic of the same
// cluster sees every event exactly once (records and offsets in one transaction); the
// topic of another cluster (a second broker of the test's own) gets every event, at least
// once (its duplicates are counted and printed).
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';
import { createTestKafka, randomName, randomPrefix, readCommitted, readTopic, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const EVENTS = 4_000;
const KILLS = 10;

const daemons: Daemon[] = [];
let other: DedicatedBroker | undefined;
afterAll(async () => {
  await killAll(daemons);
  await other?.stop();
});

const body = (i: number) => `{"version":1,"type":"track","userId":"u${i % 50}","messageId":"m-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Step","properties":{"i":${i}}}`;

/** Records written to `topic` so far (all partitions). */
async function written(kafka: Awaited<ReturnType<typeof createTestKafka>>, topic: string): Promise<number> {
  const offsets = await kafka.admin.fetchTopicOffsets(topic);
  return offsets.reduce((sum, p) => sum + Number(p.high), 0);
}

describe('kafka destinations across deliverer SIGKILLs', () => {
  it(`write each event exactly once into the same cluster, and lose none in another, over ${KILLS} SIGKILLs`, { timeout: 600_000 }, async () => {
    other = await startDedicatedBroker();
    const kafka = await createTestKafka();
    const otherKafka = await createTestKafka([other.brokers]);
    try {
      const prefix = randomPrefix();
      const local = randomName('local');
      // NOTE: progress below is counted in offsets (commit markers included): enough to tell the deliverer is writing.
      const remote = randomName('remote');
      await kafka.admin.createTopics({ topics: [{ topic: local, numPartitions: 3 }] });
      await otherKafka.admin.createTopics({ topics: [{ topic: remote, numPartitions: 3 }] });
      const file = writeConfigFile({
        kafka: { brokers: testBrokers(), clientId: randomName('kkill'), topicPrefix: prefix, partitions: 3 },
        admin: { port: 0, host: '127.0.0.1' },
        delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '10m', concurrencyPerDestination: 16 },
        sources: [{ id: 'web' }],
        destinations: [
          { id: 'local', type: 'kafka', settings: { topic: local } },
          { id: 'remote', type: 'kafka', settings: { topic: remote, cluster: { brokers: [other.brokers] } } },
        ],
      });
      const events = Array.from({ length: EVENTS }, (_, i) => ({
        key: `u${i % 50}`,
        value: body(i),
        headers: { 'source-id': 'web', 'message-id': `m-${i}`, attempt: '0', 'first-attempt-at': '' },
      }));
      // Under load: half written before the first start, the rest while the kills go on.
      const half = EVENTS / 2;
      for (const id of ['local', 'remote']) await kafka.produce(`${prefix}deliveries.${id}`, events.slice(0, half));
      let fed = false;
      for (let kill = 0; kill < KILLS; kill++) {
        const daemon = await startRole('deliverer', file);
        daemons.push(daemon);
        const before = (await written(kafka, local)) + (await written(otherKafka, remote));
        // Killed once it wrote something more, mid-stream.
        await waitFor(async () => (await written(kafka, local)) + (await written(otherKafka, remote)) > before + 50, { timeoutMs: 60_000, what: `progress before kill ${kill + 1}` });
        if (!fed && kill >= KILLS / 2) {
          for (const id of ['local', 'remote']) await kafka.produce(`${prefix}deliveries.${id}`, events.slice(half));
          fed = true;
        }
        daemon.kill('SIGKILL');
        expect(await daemon.exited).toBe('SIGKILL');
      }
      const last = await startRole('deliverer', file);
      daemons.push(last);
      const localIds = (await readCommitted(local, { atLeast: EVENTS, timeoutMs: 240_000, settleMs: 3_000 })).map((r) => r.headers['message-id']!);
      const remoteIds = (await readTopic(otherKafka.admin, remote, { atLeast: EVENTS, timeoutMs: 180_000, settleMs: 2_000 }, [other.brokers])).map((r) => r.headers['message-id']!);
      const expected = events.map((e) => e.headers['message-id']).sort();
      // Exactly once: every event, none twice.
      expect([...localIds].sort()).toEqual(expected);
      expect([...new Set(remoteIds)].sort()).toEqual(expected);
      process.stderr.write(`kafka destinations over ${KILLS} SIGKILLs: same cluster ${localIds.length - EVENTS} duplicate(s), another cluster ${remoteIds.length - EVENTS} duplicate(s) of ${EVENTS}\n`);
      last.kill('SIGTERM');
      expect(await last.exited).toBe(0);
    } finally {
      await Promise.allSettled([kafka.close(), otherKafka.close()]);
    }
  });
});
