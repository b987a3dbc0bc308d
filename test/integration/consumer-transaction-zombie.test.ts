// A zombie cannot commit (docs/kafka.md#transactions): a consumer with `commit:
// transaction` (what the router runs) whose batch is still in hand when the group moves
// on (a second member joins; the first one's revoke wait runs out and it rejoins)
// finishes that batch for a generation that is over. The group coordinator refuses its
// offsets, its transaction aborts, its output is never read committed, and the
// partition's owner in the new generation writes that output once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { createKafka } from '../../src/kafka/client.js';
import { createTransactionalProducer } from '../../src/kafka/transaction.js';
import type { TransactionalProducer } from '../../src/kafka/transaction.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startConsumer } from '../../src/runtime/consumer.js';
import type { RecordBatch, RunningConsumer } from '../../src/runtime/consumer.js';
import { GroupedTransactions } from '../../src/runtime/grouped-transactions.js';

/** The consumers' log lines (the zombie's refusal is one). */
const lines: { msg?: string; err?: { type?: string; message?: string } }[] = [];
const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
let tk: Awaited<ReturnType<typeof createTestKafka>>;
const input = `${randomPrefix()}zombie-in`;
const output = `${randomPrefix()}zombie-out`;
const closing: (() => Promise<void>)[] = [];

beforeAll(async () => {
  tk = await createTestKafka();
  await tk.createTopic(input, 2);
  await tk.createTopic(output, 1);
});

afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => undefined);
  await tk?.admin.deleteTopics({ topics: [input, output] }).catch(() => undefined);
  await tk?.close();
});

describe('commit: transaction consumer, a zombie batch', () => {
  it('a batch finishing after the group moved on cannot commit: its output aborts, the new owner writes it once', { timeout: 120_000 }, async () => {
    const groupId = randomName('zombie-group');
    const client = createKafka({ brokers: testBrokers(), clientId: randomName('zombie'), topicPrefix: 'x.', partitions: 1, replicationFactor: 1 }, logger);
    const member = async (name: string, handler: (batch: RecordBatch) => Promise<void>, joins: string[]): Promise<RunningConsumer> => {
      const producer: TransactionalProducer = createTransactionalProducer(client, { transactionalId: randomName(name) });
      await producer.connect();
      const consumer = await startConsumer(
        client,
        { groupId, topics: [input], fromBeginning: true, commit: { kind: 'transaction', transactions: new GroupedTransactions(producer, { maxOpenMs: 20 }) }, maxWaitTimeInMs: 200 },
        handler,
        { onJoin: (assignment) => joins.push(JSON.stringify(assignment)) },
        logger,
      );
      closing.push(async () => {
        await consumer.stop();
        await producer.close();
      });
      return consumer;
    };
    /** Writes `out:<value>` for each record (through the batch's transaction), marks it done. */
    const route = async (batch: RecordBatch, who: string) => {
      await batch.send!([{ topic: output, messages: batch.records.map((r) => ({ key: r.key, value: `out:${r.value!.toString()}`, headers: { by: who } })) }]);
      await batch.markDone(batch.records.at(-1)!.offset);
    };

    await tk.produce(input, [
      { key: 'a', value: 'p0-1', partition: 0 },
      { key: 'b', value: 'p1-1', partition: 1 },
    ]);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    const firstJoins: string[] = [];
    // The first member: its first batch writes its output, then stays in hand until released.
    await member(
      'zombie-a',
      async (batch) => {
        if (held === 0) {
          held += 1;
          await route(batch, 'zombie');
          await gate;
          return;
        }
        await route(batch, 'a');
      },
      firstJoins,
    );
    await waitFor(() => held === 1, { timeoutMs: 30_000, what: 'the first batch in hand' });

    // A second member joins: the group moves to a new generation without the held batch.
    const secondJoins: string[] = [];
    await member('zombie-b', (batch) => route(batch, 'b'), secondJoins);
    await waitFor(() => secondJoins.length > 0 && firstJoins.length > 1, { timeoutMs: 60_000, what: 'both members in the new generation' });

    // The zombie batch finishes now, for the generation that is over.
    release();
    const values = await waitFor(
      async () => {
        const read = await tk.readAll(output, { timeoutMs: 10_000 });
        const texts = read.map((m) => m.text).sort();
        return texts.length >= 2 ? read : undefined;
      },
      { timeoutMs: 60_000, what: 'both records routed' },
    );
    // Give the zombie's transaction time to (wrongly) commit, then read again.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const final = await tk.readAll(output, { timeoutMs: 10_000 });
    expect(final.map((m) => m.text).sort()).toEqual(['out:p0-1', 'out:p1-1']);
    expect(final.some((m) => m.headers.by === 'zombie')).toBe(false);
    expect(values.length).toBe(2);
    // What stopped it: the group coordinator refused the zombie's offsets.
    const refusal = lines.find((l) => l.err?.type === 'GroupFencedError');
    expect(refusal?.err?.message).toMatch(/ILLEGAL_GENERATION|UNKNOWN_MEMBER_ID/);
    expect(refusal?.msg).toBe('transaction fenced and aborted; joining the group again');
  });
});
