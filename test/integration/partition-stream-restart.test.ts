// Regression (the chaos harness once lost 16 events; its deliverer log shows this): a
// config reload resubscribed the deliverer's partition stream while the Kafka client of
// the time, kafkajs, was restarting the consumer by itself after a crash (the broker had
// just come back): two members of one process fetched into the same stream from two
// positions, which can take the records between them for a gap in the log and commit past
// them (the likely cause of that loss). That client has left; the stream's own membership
// (src/kafka/membership.ts) joins again, one change at a time, and a batch fetched from
// past where the stream expects it does not count its leading gap as finished. The cases
// below keep that so: one member across resubscribes while the broker comes back, a rejoin
// by itself after a broker restart, and no gap taken for finished.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdmin, createKafka } from '../../src/kafka/index.js';
import { createDeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { DeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { InboundRecord, KafkaAdmin } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';
import { createTestAdmin, createTestProducer, randomName, randomPrefix } from '../support/kafka.js';
import type { TestAdmin, TestProducer } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';

const PARTITIONS = 4;
/** How long the resubscribes go on after the broker is back (kafkajs restarted its consumer within this). */
const RESUBSCRIBING_MS = 12_000;

describe('partition stream across a broker restart with resubscribes', () => {
  let broker: DedicatedBroker;
  let rawAdmin: TestAdmin;
  let producer: TestProducer;
  let admin: KafkaAdmin;

  beforeAll(async () => {
    broker = await startDedicatedBroker();
    rawAdmin = createTestAdmin([broker.brokers]);
    producer = createTestProducer([broker.brokers]);
    admin = createAdmin(createKafka(kafkaSettings(broker.brokers), silentLogger()));
    await admin.connect();
  });

  afterAll(async () => {
    await producer?.close().catch(() => undefined);
    await rawAdmin?.close().catch(() => undefined);
    await admin?.disconnect().catch(() => undefined);
    await broker?.stop();
  });

  /**
   * A stream on this broker. Each record goes to `take` and is finished at once, unless
   * `take` returns false (it stays in flight); `inFlight` is what a revoke leaves running.
   */
  function openStream(groupId: string, take: (record: InboundRecord) => boolean | void, options: { onCrash?: (restart: boolean) => void; inFlight?: () => string[] } = {}): DeliveryStream {
    const { onCrash, inFlight = () => [] } = options;
    const stream: DeliveryStream = createDeliveryStream(
      createKafka(kafkaSettings(broker.brokers), silentLogger()),
      { groupId, admin, commitEveryMs: 100, maxWaitTimeInMs: 200 },
      {
        accept: (records) => {
          for (const r of records) if (take(r) !== false) queueMicrotask(() => stream.ledger.finish(r.topic, r.partition, r.offset));
          return true;
        },
        revoke: () => inFlight(),
      },
      onCrash === undefined ? {} : { onCrash: (_error, restart) => onCrash(restart) },
      silentLogger(),
    );
    return stream;
  }

  it('stays one member and hands over every record when it resubscribes while the broker comes back', async () => {
    const topic = `${randomPrefix()}restart`;
    const groupId = randomName('ps-restart-group');
    await admin.ensureTopics([{ topic }], { partitions: PARTITIONS, replicationFactor: 1 });
    const produced = new Set<string>();
    let sequence = 0;

    const got = new Map<string, InboundRecord>();
    const crashes: { restart: boolean }[] = [];
    // Finished at once: the commit follows the fetch, as a fast deliverer's does.
    const stream = openStream(groupId, (r) => void got.set(`${r.partition}:${r.offset}`, r), { onCrash: (restart) => crashes.push({ restart }) });
    const send = async (count: number) => {
      const messages = Array.from({ length: count }, () => {
        const n = sequence++;
        return { partition: n % PARTITIONS, value: `r-${n}` };
      });
      const answers = await producer.send({ topic, messages });
      // One answer per partition: its base offset, the partition's records follow it in order.
      for (const answer of answers) {
        const count = messages.filter((m) => m.partition === answer.partition).length;
        for (let i = 0; i < count; i++) produced.add(`${answer.partition}:${BigInt(answer.baseOffset) + BigInt(i)}`);
      }
    };

    try {
      await send(40);
      await stream.start([topic]);
      await waitFor(() => got.size === produced.size, { what: 'the first forty records' });

      await broker.stopProcess();
      await waitFor(() => crashes.length > 0, { what: 'the stream to see the broker gone', timeoutMs: 60_000 });
      await broker.startProcess();

      // Reloads keep resubscribing while the consumer finds the broker again (where
      // kafkajs restarted it by itself), and records keep coming.
      const until = Date.now() + RESUBSCRIBING_MS;
      while (Date.now() < until) {
        await send(8).catch(() => undefined);
        await Promise.race([stream.resubscribe([topic]).catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 300))]);
      }
      await waitFor(() => stream.joined(), { what: 'the stream to be a member again', timeoutMs: 60_000 });
      await send(40);

      await waitFor(() => [...produced].every((at) => got.has(at)), { what: 'every produced record handed over', timeoutMs: 60_000 });
      await waitFor(
        async () => {
          const committed = await admin.committedOffsets(groupId, [topic]);
          const ends = await rawAdmin.fetchTopicOffsets(topic);
          const at = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
          return ends.every((end) => at.get(end.partition) === end.high);
        },
        { what: 'every partition committed to its end', timeoutMs: 60_000 },
      );
      const [group] = (await rawAdmin.describeGroups([groupId])).groups;
      expect(group?.members.length).toBe(1);
    } finally {
      await stream.stop();
    }
  }, 240_000);

  it('joins again by itself after a broker restart, with nobody resubscribing it', async () => {
    const topic = `${randomPrefix()}rejoin`;
    const groupId = randomName('ps-rejoin-group');
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    const got: string[] = [];
    const crashes: boolean[] = [];
    const stream = openStream(groupId, (r) => void got.push(r.offset), { onCrash: (restart) => crashes.push(restart) });
    try {
      await stream.start([topic]);
      await waitFor(() => stream.joined(), { what: 'the stream to join' });
      await broker.stopProcess();
      await waitFor(() => crashes.length > 0, { what: 'the stream to see the broker gone', timeoutMs: 60_000 });
      // Reported as a crash it comes back from: the role's health stays live.
      expect(crashes[0]).toBe(true);
      await broker.startProcess();
      // Nothing restarts it from outside: the stream's own rejoin brings it back.
      await waitFor(() => stream.joined(), { what: 'the stream to join again by itself', timeoutMs: 90_000 });
      await producer.send({ topic, messages: [{ value: 'after' }] });
      await waitFor(() => got.includes('0'), { what: 'a record written after the restart' });
    } finally {
      await stream.stop();
    }
  }, 180_000);

  it('does not take records in flight for a gap when a fetch starts past them (the log start moved over them)', async () => {
    const topic = `${randomPrefix()}moved`;
    const groupId = randomName('ps-moved-group');
    await admin.ensureTopics([{ topic }], { partitions: 1, replicationFactor: 1 });
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `m-${i}` })) });
    const inFlight = new Set(['2', '3', '4']);
    const got: string[] = [];
    const stream = openStream(
      groupId,
      (r) => {
        got.push(r.offset);
        return !inFlight.has(r.offset);
      },
      { inFlight: () => [...inFlight] },
    );
    const committed = async () => (await admin.committedOffsets(groupId, [topic]))[0]?.partitions[0]?.offset;
    try {
      await stream.start([topic]);
      await waitFor(async () => (await committed()) === '2', { what: 'the commit to stop before the records in flight' });
      // The log now starts at 6: a join fetches from the commit (2), finds it gone
      // (OFFSET_OUT_OF_RANGE), and the fetcher starts the partition over at the log's
      // start, 6, past the three records still in flight.
      await rawAdmin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '6' }] });
      await stream.resubscribe([topic]);
      await waitFor(() => stream.joined(), { what: 'the stream to join again' });
      // NOTE: the commit stays below the records in flight (kafkajs committed -2,
      // "earliest", each time it found its offset gone; the engine commits only the ledger's point).
      const seen = new Set<string | undefined>();
      for (const until = Date.now() + 3_000; Date.now() < until; ) {
        seen.add(await committed());
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect([...seen]).toEqual(['2']);
      for (const offset of inFlight) stream.ledger.finish(topic, 0, offset);
      // A record after them moves the commit past everything.
      await producer.send({ topic, messages: [{ value: 'm-10' }] });
      await waitFor(async () => (await committed()) === '11', { what: 'the commit past everything once the three finished' });
      expect(got.slice(0, 10)).toEqual(['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    } finally {
      await stream.stop();
    }
  }, 120_000);
});

function kafkaSettings(brokers: string) {
  return { brokers: [brokers], clientId: randomName('ps-restart'), topicPrefix: '', partitions: PARTITIONS, replicationFactor: 1 };
}
