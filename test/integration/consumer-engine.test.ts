// The consumer engine (src/kafka/: wire.ts, membership.ts, fetcher.ts, committer.ts)
// on a real broker, through the port's partition stream and ordered consumer and
// through the engine's classes: the "no loss" cases of docs/kafka.md#the-consumer-engine.
// Topics are made, written, trimmed and written in transactions with
// @platformatic/kafka's own Admin and Producer.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Admin, Producer } from '@platformatic/kafka';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitOffsets, readCommitted } from '../../src/kafka/committer.js';
import { Fetcher } from '../../src/kafka/fetcher.js';
import type { FetcherSettings } from '../../src/kafka/fetcher.js';
import { createAdmin, createKafka, encodeFinished } from '../../src/kafka/index.js';
import { createDeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { DeliveryStream } from '../../src/delivery/delivery-stream.js';
import type { InboundRecord, KafkaAdmin } from '../../src/kafka/index.js';
import { Wire } from '../../src/kafka/wire.js';
import type { FetchAnswer, FetchAsk } from '../../src/kafka/wire.js';
import { silentLogger } from '../../src/observability/logger.js';
import { testConfig } from '../support/config.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startConsumer } from '../../src/runtime/consumer.js';
import type { ConsumerSettings, RecordBatch, RunningConsumer } from '../../src/runtime/consumer.js';
import { GroupedTransactions } from '../../src/runtime/grouped-transactions.js';
import { createTransactionalProducer } from '../../src/kafka/transaction.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function kafkaSettings() {
  return testConfig({
    kafka: { brokers: testBrokers(), clientId: randomName('engine'), topicPrefix: 'x.', partitions: 1 },
    sources: [{ id: 'web' }],
    destinations: [{ id: 'x', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/' }] } }],
  }).kafka;
}

/** A pino logger whose lines the test reads. */
function capturingLogger(level = 'debug') {
  const lines: { level: number; msg: string; [field: string]: unknown }[] = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, lines };
}

let admin: Admin;
let producer: Producer;
let portAdmin: KafkaAdmin;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  admin = new Admin({ clientId: randomName('engine-admin'), bootstrapBrokers: testBrokers() });
  producer = new Producer({ clientId: randomName('engine-producer'), bootstrapBrokers: testBrokers(), acks: -1 });
  portAdmin = createAdmin(createKafka(kafkaSettings(), silentLogger()));
  await portAdmin.connect();
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await portAdmin?.disconnect();
  await producer?.close();
  await admin?.close();
});

/** Makes `topics` (each of `partitions` partitions) and waits for their leaders. */
async function makeTopics(topics: string[], partitions = 1, configs: { name: string; value: string }[] = []): Promise<void> {
  await admin.createTopics({ topics, partitions, replicas: 1, configs });
  await waitFor(
    async () => {
      const metadata = await admin.metadata({ topics });
      return topics.every((t) => {
        const found = metadata.topics.get(t);
        return found !== undefined && found.partitionsCount === partitions && [...found.partitions.values()].every((p) => p.leader >= 0);
      });
    },
    { what: `the leaders of ${topics.join(', ')}` },
  );
}

async function produce(topic: string, partition: number, values: (string | Buffer)[]): Promise<void> {
  await producer.send({ messages: values.map((value) => ({ topic, partition, key: Buffer.from('k'), value: Buffer.isBuffer(value) ? value : Buffer.from(value) })) });
}

function startStream(groupId: string, got: InboundRecord[], options: { bufferBudgetBytes?: number; logger?: pino.Logger; finishAtOnce?: boolean } = {}): DeliveryStream {
  const stream: DeliveryStream = createDeliveryStream(
    createKafka(kafkaSettings(), silentLogger()),
    { groupId, admin: portAdmin, commitEveryMs: 100, maxWaitTimeInMs: 200, ...(options.bufferBudgetBytes === undefined ? {} : { bufferBudgetBytes: options.bufferBudgetBytes }) },
    {
      accept: (records) => {
        got.push(...records);
        if (options.finishAtOnce === true) queueMicrotask(() => records.forEach((r) => stream.ledger.finish(r.topic, r.partition, r.offset)));
        return true;
      },
      revoke: () => [],
    },
    {},
    options.logger ?? silentLogger(),
  );
  cleanups.push(() => stream.stop());
  return stream;
}

async function committedOf(groupId: string, topic: string, partitions: number[]) {
  const wire = new Wire(kafkaSettings(), randomName('engine-reader'));
  try {
    const found = await wire.findCoordinator(groupId);
    if ('errorCode' in found) throw new Error(`no coordinator for ${groupId}`);
    const [t] = await readCommitted(wire, found.nodeId, groupId, [{ topic, partitions }]);
    return new Map((t?.partitions ?? []).map((p) => [p.partition, p]));
  } finally {
    await wire.close();
  }
}

/** The partition's log end (high watermark). */
async function endOf(topic: string, partition: number): Promise<bigint> {
  const [t] = await admin.listOffsets({ topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp: -1n }] }] });
  return t!.partitions.find((p) => p.partitionIndex === partition)!.offset;
}

/** A Wire that remembers each fetch request and its answer (the broker still answers it). */
class RecordingWire extends Wire {
  readonly exchanges: { ask: FetchAsk; answer: FetchAnswer }[] = [];
  override async fetch(nodeId: number, ask: FetchAsk): Promise<FetchAnswer> {
    const answer = await super.fetch(nodeId, ask);
    this.exchanges.push({ ask, answer });
    return answer;
  }
}

/** A fetcher on `wire` whose owner takes each partition's records and finishes them at once (their bytes leave the budget); stopped after the tests. */
function startFetcher(wire: Wire, settings: FetcherSettings, take: (records: InboundRecord[]) => void): Fetcher {
  const fetcher: Fetcher = new Fetcher(
    wire,
    settings,
    {
      records: (topic, partition, records) => {
        take(records);
        for (const r of records) fetcher.release(topic, partition, 600 + (r.key?.length ?? 0) + (r.value?.length ?? 0));
      },
      reset: () => undefined,
    },
    silentLogger(),
  );
  cleanups.push(async () => {
    await fetcher.stop();
    await wire.close();
  });
  return fetcher;
}

describe('a record batch larger than its partition\'s share', () => {
  const BIG = 3 * 1024 * 1024;

  it('on a partition that is not first in the request: it is fetched alone and handed over whole, and the other partitions too', async () => {
    const prefix = randomPrefix();
    const [first, big, last] = ['first', 'big', 'last'].map((n) => `${prefix}${n}`) as [string, string, string];
    await makeTopics([first, big, last], 1, [{ name: 'max.message.bytes', value: String(BIG + 1024 * 1024) }]);
    await produce(first, 0, ['f-0', 'f-1', 'f-2']);
    await produce(big, 0, [Buffer.alloc(BIG, 'b')]);
    await produce(big, 0, ['b-1', 'b-2']);
    await produce(last, 0, ['l-0', 'l-1']);

    const wire = new RecordingWire(kafkaSettings(), randomName('engine-big'));
    const got: InboundRecord[] = [];
    const settings: FetcherSettings = { isolation: 0, budgetBytes: 2 * 1024 * 1024, maxPartitionBytes: 1024 * 1024, maxRequestBytes: 2 * 1024 * 1024, pollWaitMs: () => 100, emptyPollMs: 50 };
    const fetcher = startFetcher(wire, settings, (records) => got.push(...records));
    // In this order the big partition is second in the first request.
    await fetcher.add([first, big, last].map((topic) => ({ topic, partition: 0, position: 0n })));
    await waitFor(() => got.length === 8, { what: 'all eight records' });
    await fetcher.stop();

    const text = (r: InboundRecord) => (r.value!.length > 100 ? `${r.value!.length} bytes` : r.value!.toString());
    expect(got.filter((r) => r.topic === first).map(text)).toEqual(['f-0', 'f-1', 'f-2']);
    expect(got.filter((r) => r.topic === big).map(text)).toEqual([`${BIG} bytes`, 'b-1', 'b-2']);
    expect(got.filter((r) => r.topic === last).map(text)).toEqual(['l-0', 'l-1']);
    expect(got.find((r) => r.topic === big)!.value!.equals(Buffer.alloc(BIG, 'b'))).toBe(true);

    // The first request asked for the big partition behind another one, with less than its batch: the broker answered it with no records.
    const [opening] = wire.exchanges;
    const asked = opening!.ask.topics.map((t) => t.topic);
    expect(asked.indexOf(big)).toBeGreaterThan(0);
    const bigAnswer = opening!.answer.responses.find((t) => t.topicId === big)!.partitions[0]!;
    expect(bigAnswer.records ?? []).toHaveLength(0);
    expect(bigAnswer.highWatermark).toBe(3n);
    // Then it was asked for alone, and that answer brought the batch whole.
    const alone = wire.exchanges.find((e) => e.ask.topics.length === 1 && e.ask.topics[0]!.topic === big && e.ask.topics[0]!.partitions[0]!.offset === 0n);
    expect(alone, 'a request for the big partition alone').toBeDefined();
    expect(alone!.ask.topics[0]!.partitions[0]!.maxBytes).toBeLessThan(BIG);
    expect(alone!.answer.responses[0]!.partitions[0]!.records?.[0]?.records[0]?.value?.length).toBe(BIG);
  });

  it('through the partition stream with a small buffer budget: every record is handed over, the big one whole', async () => {
    const prefix = randomPrefix();
    const topics = ['a', 'b', 'c', 'd'].map((n) => `${prefix}${n}`);
    await makeTopics(topics, 1, [{ name: 'max.message.bytes', value: String(BIG + 1024 * 1024) }]);
    for (const topic of topics) await produce(topic, 0, ['s-0', 's-1']);
    await produce(topics[2]!, 0, [Buffer.alloc(BIG, 'c')]);
    for (const topic of topics) await produce(topic, 0, ['s-3']);
    const got: InboundRecord[] = [];
    const groupId = randomName('engine-big');
    // The owner finishes each record as it comes (a deliverer delivering): its bytes leave the budget.
    const stream = startStream(groupId, got, { bufferBudgetBytes: 2 * 1024 * 1024, finishAtOnce: true });
    await stream.start(topics);
    await waitFor(() => got.length === 13, { what: 'all thirteen records' });
    for (const topic of topics) {
      const offsets = got.filter((r) => r.topic === topic).map((r) => r.offset);
      expect(offsets).toEqual(topic === topics[2] ? ['0', '1', '2', '3'] : ['0', '1', '2']);
    }
    expect(got.find((r) => r.topic === topics[2] && r.offset === '2')!.value!.length).toBe(BIG);
    await waitFor(async () => {
      for (const topic of topics) if ((await committedOf(groupId, topic, [0])).get(0)?.offset !== (topic === topics[2] ? '4' : '3')) return false;
      return true;
    }, { what: 'every partition committed to its end' });
  });
});

describe('fetch sessions', () => {
  it('a poll of partitions at their end names none of them once the session is open; records that come are handed over; a lost session opens anew', async () => {
    const topic = `${randomPrefix()}session`;
    const PARTITIONS = 40;
    await makeTopics([topic], PARTITIONS);
    const wire = new RecordingWire(kafkaSettings(), randomName('engine-session'));
    const got: string[] = [];
    const settings: FetcherSettings = { isolation: 1, budgetBytes: 8 * 1024 * 1024, maxPartitionBytes: 1024 * 1024, maxRequestBytes: 8 * 1024 * 1024, pollWaitMs: () => 100, emptyPollMs: 50 };
    const fetcher = startFetcher(wire, settings, (records) => got.push(...records.map((r) => `${r.partition}:${r.offset}:${r.value!.toString()}`)));
    await fetcher.add(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition, position: 0n })));
    const polls = () => wire.exchanges.filter((e) => e.ask.session !== undefined);
    const named = (e: { ask: FetchAsk }) => e.ask.topics.reduce((n, t) => n + t.partitions.length, 0);
    const quiet = () => polls().filter((e) => e.ask.session!.id !== 0 && named(e) === 0);
    await waitFor(() => quiet().length >= 3, { what: 'three polls in an open session that name no partition' });

    // The session opened with every partition named; the steps after it count its epochs, and once the
    // partitions' limits settled (the first poll may come while the budget's share still moves), they
    // name none, and answers leave out the partitions with nothing new.
    const opening = polls().find((e) => e.ask.session!.id === 0)!;
    expect(opening.ask.session!.epoch).toBe(0);
    expect(named(opening)).toBe(PARTITIONS);
    expect(opening.answer.sessionId).not.toBe(0);
    const steps = polls().filter((e) => e.ask.session!.id === opening.answer.sessionId);
    expect(steps.map((e) => e.ask.session!.epoch)).toEqual(steps.map((_, i) => i + 1));
    expect(quiet().some((step) => step.answer.responses.length === 0)).toBe(true);
    expect(quiet().every((e) => e.ask.session!.id === opening.answer.sessionId)).toBe(true);

    // Records that come are handed over; the step after names that partition at its new position.
    await produce(topic, 17, ['a', 'b']);
    await waitFor(() => got.length === 2, { what: 'the two records' });
    expect(got).toEqual(['17:0:a', '17:1:b']);
    await waitFor(() => wire.exchanges.some((e) => e.ask.session !== undefined && e.ask.topics[0]?.partitions.some((p) => p.partition === 17 && p.offset === 2n)), { what: 'a poll that names partition 17 at 2' });

    // Another request closes the session (its id with the final epoch, -1): the broker refuses the fetcher's next step, and the fetcher opens another session.
    const last = polls().at(-1)!.ask.session!;
    expect(last.id).not.toBe(0);
    const other = new Wire(kafkaSettings(), randomName('engine-closer'));
    cleanups.push(() => other.close());
    const leader = (await other.metadata([topic])).topics.get(topic)!.partitions[0]!.leader;
    const closing = await other.fetch(leader, { maxWaitMs: 0, minBytes: 1, maxBytes: 1024, isolation: 1, topics: [], session: { id: last.id, epoch: -1, forgotten: [] } });
    expect(closing.errorCode).toBe(0);
    const before = wire.exchanges.length;
    await waitFor(() => wire.exchanges.slice(before).some((e) => e.ask.session?.id === 0 && e.answer.sessionId !== 0 && e.answer.sessionId !== last.id), { what: 'a new session' });
    expect(wire.exchanges.slice(before).some((e) => e.answer.errorCode !== 0)).toBe(true);
    await produce(topic, 3, ['c']);
    await waitFor(() => got.length === 3, { what: 'the record after the new session' });
    expect(got[2]).toBe('3:0:c');
  });
});

describe('a fetch answer delayed across a rebalance', () => {
  it('never moves a position: each member is handed each record once per generation, and the commits skip none', async () => {
    const topic = `${randomPrefix()}delayed`;
    const groupId = randomName('engine-delayed');
    await makeTopics([topic], 2);
    await produce(topic, 0, ['a-0', 'a-1']);
    await produce(topic, 1, ['b-0', 'b-1']);
    /** Per member: its joins and the offsets handed to it, in order. */
    const events = new Map<string, (['join'] | ['batch', string])[]>();
    const consumers: RunningConsumer[] = [];
    const joins = new Map<string, number>();
    async function member(name: string): Promise<RunningConsumer> {
      events.set(name, []);
      joins.set(name, 0);
      const consumer = await startConsumer(
        createKafka(kafkaSettings(), silentLogger()),
        // A long wait: an idle member's fetch waits on the broker up to 20 s.
        { groupId, topics: [topic], fromBeginning: true, commit: { kind: 'batch-end' }, maxWaitTimeInMs: 20_000 },
        async (batch: RecordBatch) => {
          for (const r of batch.records) events.get(name)!.push(['batch', `${r.partition}:${r.offset}`]);
          await batch.markDone(batch.records.at(-1)!.offset);
        },
        {
          onJoin: () => {
            events.get(name)!.push(['join']);
            joins.set(name, joins.get(name)! + 1);
          },
        },
        silentLogger(),
      );
      consumers.push(consumer);
      cleanups.push(() => consumer.stop());
      return consumer;
    }
    const handed = (name: string) => events.get(name)!.filter((e) => e[0] === 'batch').map((e) => e[1]!);

    await member('a');
    await waitFor(() => handed('a').length === 4, { what: 'member a to read the first four records' });
    await waitFor(async () => (await committedOf(groupId, topic, [0, 1])).get(1)?.offset === '2', { what: 'member a\'s commits' });
    // a's next fetch now waits on the broker for records. b joins meanwhile.
    await member('b');
    await waitFor(() => joins.get('a')! >= 2 && joins.get('b')! >= 1, { what: 'both members in the new generation', timeoutMs: 30_000 });
    // New records end a's old wait: its answer comes after the rebalance (for the old generation).
    await produce(topic, 0, ['a-2', 'a-3', 'a-4']);
    await produce(topic, 1, ['b-2', 'b-3', 'b-4']);
    await waitFor(
      async () => {
        const committed = await committedOf(groupId, topic, [0, 1]);
        return committed.get(0)?.offset === '5' && committed.get(1)?.offset === '5';
      },
      { what: 'both partitions committed to their end' },
    );
    // Stopping waits for the fetches waiting on the broker: new records end them (the stopping members take none).
    const stopped = Promise.all(consumers.map((c) => c.stop()));
    await produce(topic, 0, ['wake']);
    await produce(topic, 1, ['wake']);
    await stopped;

    // Between two joins of a member, no record is handed to it twice.
    for (const [name, list] of events) {
      let seen = new Set<string>();
      for (const e of list) {
        if (e[0] === 'join') {
          seen = new Set();
          continue;
        }
        expect(seen.has(e[1]), `member ${name} was handed ${e[1]} twice in one generation`).toBe(false);
        seen.add(e[1]);
      }
    }
    // Every record was handed to someone, and the records after the rebalance each once in all.
    const all = [...handed('a'), ...handed('b')];
    for (const p of [0, 1]) for (let o = 0; o < 5; o++) expect(all).toContain(`${p}:${o}`);
    for (const p of [0, 1]) for (let o = 2; o < 5; o++) expect(all.filter((x) => x === `${p}:${o}`), `${p}:${o}`).toHaveLength(1);
  });
});

describe('commit metadata written by the earlier code', () => {
  it('is read by a new member, which skips the offsets it lists (an upgrade keeps its progress)', async () => {
    const topic = `${randomPrefix()}upgrade`;
    const groupId = randomName('engine-upgrade');
    await makeTopics([topic]);
    await produce(topic, 0, Array.from({ length: 10 }, (_, i) => `v-${i}`));
    // As today's deliverer commits: the first unfinished offset, the finished ones above it in `sy1:` runs.
    const metadata = encodeFinished(2n, [3n, 4n, 7n]);
    expect(metadata).toBe('sy1:1.2,2.1');
    const wire = new Wire(kafkaSettings(), randomName('engine-upgrade'));
    cleanups.push(() => wire.close());
    const coordinator = await waitFor(async () => {
      const found = await wire.findCoordinator(groupId);
      return 'nodeId' in found ? found.nodeId : undefined;
    }, { what: 'the group\'s coordinator' });
    await commitOffsets(wire, groupId, { coordinator, id: -1, memberId: '' }, [{ topic, partition: 0, offset: '2', metadata }]);

    const got: InboundRecord[] = [];
    const stream = startStream(groupId, got);
    await stream.start([topic]);
    await waitFor(() => got.length >= 5 && stream.joined(), { what: 'the unfinished records' });
    expect(got.map((r) => r.offset)).toEqual(['2', '5', '6', '8', '9']);
    // The new member keeps the metadata: finishing 5 commits 2 with 3, 4, 5 and 7 listed.
    stream.ledger.finish(topic, 0, '5');
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.metadata === encodeFinished(2n, [3n, 4n, 5n, 7n]), { what: 'the commit with 3, 4, 5 and 7 listed' });
    for (const offset of ['2', '6', '8', '9']) stream.ledger.finish(topic, 0, offset);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '10', { what: 'everything committed' });
  });
});

describe('takeover by another member', () => {
  let a: ChildProcess | undefined;
  afterAll(() => {
    a?.kill('SIGKILL');
  });

  it('a member that stops without leaving: the next one gets its partition after the session timeout and redoes only what was unfinished', async () => {
    const topic = `${randomPrefix()}takeover`;
    const groupId = randomName('engine-takeover');
    await makeTopics([topic]);
    await produce(topic, 0, Array.from({ length: 10 }, (_, i) => `v-${i}`));
    a = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/support/stream-member-fixture.ts'), testBrokers().join(','), topic, groupId, '10', '7,3,0,4,1'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    a.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await waitFor(() => out.includes('committed'), { what: 'member a to commit its finished records', timeoutMs: 45_000 });
    expect(out.trim()).toBe('committed 0,1,2,3,4,5,6,7,8,9');
    const committed = (await committedOf(groupId, topic, [0])).get(0);
    expect(committed?.offset).toBe('2');
    expect(committed?.metadata).toBe(encodeFinished(2n, [3n, 4n, 7n]));
    // Gone like a killed process: no leave, no last commit.
    a.kill('SIGKILL');

    const got: InboundRecord[] = [];
    const b = startStream(groupId, got);
    const startedAt = Date.now();
    await b.start([topic]);
    await waitFor(() => got.length >= 5, { what: 'member b to get the unfinished records', timeoutMs: 45_000 });
    expect(got.map((r) => r.offset)).toEqual(['2', '5', '6', '8', '9']);
    // It waited for a's session to end (the broker removes a then), not for a's leave.
    expect(Date.now() - startedAt).toBeGreaterThan(3_000);
    for (const offset of ['9', '2', '8', '6', '5']) b.ledger.finish(topic, 0, offset);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '10', { what: 'everything committed' });
  });
});

describe('OFFSET_OUT_OF_RANGE after retention', () => {
  it('the stream resumes at the earliest offset, counts the reset and logs a warning', async () => {
    const topic = `${randomPrefix()}retention`;
    const groupId = randomName('engine-retention');
    await makeTopics([topic]);
    await produce(topic, 0, Array.from({ length: 10 }, (_, i) => `v-${i}`));
    // The group stopped at 2; retention then removed everything before 6.
    const wire = new Wire(kafkaSettings(), randomName('engine-retention'));
    cleanups.push(() => wire.close());
    const coordinator = await waitFor(async () => {
      const found = await wire.findCoordinator(groupId);
      return 'nodeId' in found ? found.nodeId : undefined;
    }, { what: 'the group\'s coordinator' });
    await commitOffsets(wire, groupId, { coordinator, id: -1, memberId: '' }, [{ topic, partition: 0, offset: '2', metadata: null }]);
    await admin.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 6n }] }] });

    const { logger, lines } = capturingLogger('warn');
    const got: InboundRecord[] = [];
    const stream = startStream(groupId, got, { logger });
    await stream.start([topic]);
    await waitFor(() => got.length >= 4, { what: 'the records retention kept' });
    expect(got.map((r) => r.offset)).toEqual(['6', '7', '8', '9']);
    expect(stream.resets()).toBe(1);
    const warning = lines.find((l) => l.level === 40 && l['topic'] === topic);
    expect(warning?.msg).toBe(`records of ${topic} partition 0 from offset 2 were removed by retention before they were read; reading on from 6`);
    for (const r of got) stream.ledger.finish(topic, 0, r.offset);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '10', { what: 'the commit at the end' });
  });
});

describe('transactions', () => {
  /** A new topic of one partition, and a function that writes `values` to it in one transaction, committed or aborted. */
  async function transactionalWriter(): Promise<{ topic: string; write(values: string[], commit: boolean): Promise<void> }> {
    const topic = `${randomPrefix()}tx`;
    await makeTopics([topic]);
    const tx = new Producer({ clientId: randomName('engine-tx'), bootstrapBrokers: testBrokers(), transactionalId: randomName('engine-tx'), idempotent: true, acks: -1 });
    cleanups.push(() => tx.close());
    const write = async (values: string[], commit: boolean) => {
      const transaction = await tx.beginTransaction();
      await transaction.send({ messages: values.map((value) => ({ topic, partition: 0, key: Buffer.from('k'), value: Buffer.from(value) })) });
      if (commit) await transaction.commit();
      else await transaction.abort();
    };
    return { topic, write };
  }

  /** Three transactions on partition 0: 3 records committed, 2 aborted, 2 committed; the log ends after the last marker. */
  async function transactionalTopic(): Promise<{ topic: string; end: bigint }> {
    const { topic, write } = await transactionalWriter();
    await write(['c-1', 'c-2', 'c-3'], true);
    await write(['aborted-1', 'aborted-2'], false);
    await write(['c-4', 'c-5'], true);
    // 7 records and 3 markers.
    const end = await waitFor(async () => {
      const found = await endOf(topic, 0);
      return found === 10n ? found : undefined;
    }, { what: 'the three transactions and their markers in the log' });
    return { topic, end };
  }

  it('the ordered consumer: the committed records each once, no control record, the commit past the last marker', async () => {
    const { topic, end } = await transactionalTopic();
    const groupId = randomName('engine-tx-ordered');
    const got: InboundRecord[] = [];
    const consumer = await startConsumer(
      createKafka(kafkaSettings(), silentLogger()),
      { groupId, topics: [topic], fromBeginning: true, commit: { kind: 'batch-end' }, maxWaitTimeInMs: 200 },
      async (batch) => {
        got.push(...batch.records);
        await batch.markDone(batch.records.at(-1)!.offset);
      },
      {},
      silentLogger(),
    );
    cleanups.push(() => consumer.stop());
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === end.toString(), { what: `the commit at ${end} (lag 0)` });
    expect(got.map((r) => r.value?.toString())).toEqual(['c-1', 'c-2', 'c-3', 'c-4', 'c-5']);
    // Offsets 3, 6 and 9 hold the markers, 4 and 5 the aborted records.
    expect(got.map((r) => r.offset)).toEqual(['0', '1', '2', '7', '8']);
  });

  // An answer may hold no record and still move the position: an aborted transaction
  // at the end of the log read after the consumer caught up. Its marker must be committed
  // too, or the group's lag stays above 0 until the next record.
  it.each([
    ['batch-end', false],
    ['transaction', true],
  ] as const)('the ordered consumer (commit: %s): an aborted transaction after the consumer caught up is committed past its marker', async (_kind, transactional) => {
    const { topic, write } = await transactionalWriter();
    const client = createKafka(kafkaSettings(), silentLogger());
    let commit: ConsumerSettings['commit'] = { kind: 'batch-end' };
    if (transactional) {
      const producer = createTransactionalProducer(client, { transactionalId: randomName('engine-tx-tail') });
      await producer.connect();
      cleanups.push(() => producer.close());
      commit = { kind: 'transaction', transactions: new GroupedTransactions(producer, { maxOpenMs: 20 }) };
    }
    const groupId = randomName('engine-tx-tail');
    const got: string[] = [];
    const consumer = await startConsumer(client, { groupId, topics: [topic], fromBeginning: true, commit, maxWaitTimeInMs: 200 }, async (batch) => {
      got.push(...batch.records.map((r) => r.value!.toString()));
      await batch.markDone(batch.records.at(-1)!.offset);
    }, {}, silentLogger());
    cleanups.push(() => consumer.stop());
    await write(['c-1'], true);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '2', { what: 'the commit past the first transaction (offset 2)' });
    // Offsets 2 and 3 aborted, 4 its marker: the next answer holds no record.
    await write(['aborted-1', 'aborted-2'], false);
    await waitFor(async () => (await endOf(topic, 0)) === 5n, { what: 'the aborted transaction and its marker in the log' });
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '5', { timeoutMs: 15_000, what: 'the commit past the abort marker (offset 5, lag 0)' });
    await write(['c-2'], true);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === '7', { what: 'the commit past the next transaction (offset 7)' });
    expect(got).toEqual(['c-1', 'c-2']);
  });

  it('the partition stream: the committed records each once, no control record, the commit past the last marker', async () => {
    const { topic, end } = await transactionalTopic();
    const groupId = randomName('engine-tx-stream');
    const got: InboundRecord[] = [];
    const stream = startStream(groupId, got);
    await stream.start([topic]);
    await waitFor(() => got.length >= 5, { what: 'the committed records' });
    expect(got.map((r) => r.value?.toString())).toEqual(['c-1', 'c-2', 'c-3', 'c-4', 'c-5']);
    for (const r of got) stream.ledger.finish(topic, 0, r.offset);
    await waitFor(async () => (await committedOf(groupId, topic, [0])).get(0)?.offset === end.toString(), { what: `the commit at ${end} (lag 0)` });
    expect(stream.buffered().records).toBe(0);
  });
});
