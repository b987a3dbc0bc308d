// The deliverer group's commits of a Kafka destination of the same cluster never go back
// (docs/kafka.md#transactions): each event's offset is committed in the transaction that
// writes it, and the deliverer's plain commits (its commit ledger's) are held out of a
// partition while a transaction holds offsets of it. A plain commit stored after a
// transaction's offsets would win when the transaction commits, with an older point: a
// SIGKILL then has the next owner write those events a second time (seen in CI, in
// deliver-kafka-kill.test.ts). Here the commits are read every few milliseconds while a
// backlog is written: not once may a partition's commit be lower than one read before.
import { afterAll, describe, expect, it } from 'vitest';
import { killAll, startRole, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestAdmin, createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const EVENTS = 4_000;
const PARTITIONS = 3;

const daemons: Daemon[] = [];
afterAll(async () => {
  await killAll(daemons);
});

describe("a Kafka destination's offsets in the deliverer group", () => {
  it('never move back while transactions and plain commits interleave', { timeout: 180_000 }, async () => {
    const kafka = await createTestKafka();
    const admin = createTestAdmin();
    try {
      const prefix = randomPrefix();
      const local = randomName('local');
      await kafka.admin.createTopics({ topics: [{ topic: local, numPartitions: PARTITIONS }] });
      const file = writeConfigFile({
        kafka: { brokers: testBrokers(), clientId: randomName('kcommits'), topicPrefix: prefix, partitions: PARTITIONS },
        admin: { port: 0, host: '127.0.0.1' },
        delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '10m', concurrencyPerDestination: 16 },
        sources: [{ id: 'web' }],
        destinations: [{ id: 'local', type: 'kafka', settings: { topic: local } }],
      });
      const deliveries = `${prefix}deliveries.local`;
      await kafka.produce(
        deliveries,
        Array.from({ length: EVENTS }, (_, i) => ({
          key: `u${i % 50}`,
          value: `{"version":1,"type":"track","userId":"u${i % 50}","messageId":"m-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Step"}`,
          headers: { 'source-id': 'web', 'message-id': `m-${i}`, attempt: '0', 'first-attempt-at': '' },
        })),
      );
      const ends = new Map((await kafka.admin.fetchTopicOffsets(deliveries)).map((p) => [p.partition, BigInt(p.high)]));
      daemons.push(await startRole('deliverer', file));

      const highest = new Map<number, bigint>();
      const wentBack: string[] = [];
      let reads = 0;
      const deadline = Date.now() + 150_000;
      while (Date.now() < deadline) {
        const [committed] = await admin.fetchOffsets({ groupId: `${prefix}deliverer`, topics: [deliveries] });
        reads += 1;
        for (const { partition, offset } of committed?.partitions ?? []) {
          const now = BigInt(offset);
          const before = highest.get(partition) ?? -1n;
          if (now < before) wentBack.push(`partition ${partition}: ${before} then ${now} (read ${reads})`);
          if (now > before) highest.set(partition, now);
        }
        if ([...ends].every(([partition, end]) => (highest.get(partition) ?? -1n) >= end)) break;
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      process.stderr.write(`deliverer commits of a Kafka destination: ${reads} reads, ${wentBack.length} went back\n`);
      expect([...ends].map(([partition, end]) => [partition, (highest.get(partition) ?? -1n) >= end])).toEqual([...ends.keys()].map((p) => [p, true]));
      expect(wentBack).toEqual([]);
    } finally {
      await Promise.allSettled([kafka.close(), admin.close()]);
    }
  });
});
