// Dead letters and retry records written in Kafka transactions (what the deliverer does
// with delivery.transactionalMoves, docs/kafka.md#transactions): every commit or abort
// leaves a marker that takes an offset, and an aborted transaction's records are never
// read. The figures of GET /v1/destinations count letters, not offsets; `dlq list` shows
// each letter once; a full replay brings "not replayed" to 0, a partial one leaves the
// rest. On the real broker, the operator commands run as the operator runs them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDestinationsStatus } from '../../src/admin/destinations-status.js';
import { loadConfigFile } from '../../src/config/load.js';
import { staticConfigStore } from '../../src/config/store.js';
import { createAdmin, createKafka, createTransactionalProducer } from '../../src/kafka/index.js';
import type { KafkaClient, TopicRecords } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { replayGroupId } from '../../src/runtime/group-ids.js';
import { createTopology } from '../../src/runtime/topology.js';
import { runCli, writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';

const answeredBy = { pod: 'switchyard-router-0', role: 'router', version: '0.1.0', pid: 1, startedAt: '2026-05-01T12:00:00.000Z' };
const body = (id: string) => `{"version":1,"type":"track","userId":"u-${id}","messageId":"${id}","timestamp":"2026-05-01T12:00:00.000Z","event":"Trial Started","properties":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
beforeAll(async () => {
  kafka = await createTestKafka();
});
afterAll(async () => {
  await kafka?.close();
});

function letter(id: string, partition: number, minutesAgo: number): TopicRecords['messages'][number] {
  const at = new Date(Date.now() - minutesAgo * 60_000).toISOString();
  return {
    key: `u-${id}`,
    value: body(id),
    partition,
    headers: { 'source-id': 'web', 'message-id': id, attempt: '3', 'first-attempt-at': at, 'last-attempt-at': at, error: `https://hooks.example.com/in: 400 Bad Request (${id})` },
  };
}

/** Writes each group of records in one transaction, committed or aborted. */
async function writeInTransactions(client: KafkaClient, transactions: { records: TopicRecords[]; commit: boolean }[]): Promise<void> {
  const producer = createTransactionalProducer(client, { transactionalId: randomName('dlq-txn') });
  await producer.connect();
  try {
    for (const { records, commit } of transactions) {
      const transaction = await producer.begin();
      await transaction.send(records);
      if (commit) await transaction.commit();
      else await transaction.abort();
    }
  } finally {
    await producer.close();
  }
}

describe('dead letters written in transactions', () => {
  it('are counted, listed and replayed as letters: markers and aborted records are none', async () => {
    const prefix = randomPrefix();
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('dlq-txn'), topicPrefix: prefix, partitions: 2 },
      delivery: { retryTiers: ['1h'] },
      sources: [{ id: 'web' }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
    });
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const config = loaded.config;
    const { names } = createTopology(prefix);
    const dlq = names.dlq('hooks');
    const retry = names.retry('hooks', '1h');
    await kafka.createTopic(dlq, 2);
    await kafka.createTopic(retry, 2);
    await kafka.createTopic(names.deliveries('hooks'), 2);

    const client = createKafka(config.kafka, silentLogger());
    // Partition 0: d-1 d-2 | marker | x-1 (aborted) | marker | d-4 | marker: 7 offsets, 3 letters.
    // Partition 1: d-3 | marker | d-5 | marker: 4 offsets, 2 letters.
    await writeInTransactions(client, [
      { records: [{ topic: dlq, messages: [letter('d-1', 0, 50), letter('d-2', 0, 40), letter('d-3', 1, 45)] }], commit: true },
      { records: [{ topic: dlq, messages: [letter('x-1', 0, 30)] }], commit: false },
      { records: [{ topic: dlq, messages: [letter('d-4', 0, 20)] }, { topic: retry, messages: [letter('r-1', 0, 1), letter('r-2', 1, 1)] }], commit: true },
      { records: [{ topic: dlq, messages: [letter('d-5', 1, 10)] }, { topic: retry, messages: [letter('r-x', 0, 1)] }], commit: false },
      { records: [{ topic: dlq, messages: [letter('d-5', 1, 10)] }, { topic: retry, messages: [letter('r-3', 0, 1)] }], commit: true },
    ]);
    const admin = createAdmin(client);
    await admin.connect();
    const offsets = (await admin.partitionEnds(dlq)).reduce((sum, e) => sum + Number(BigInt(e.high) - BigInt(e.low)), 0);
    await admin.disconnect();
    expect(offsets).toBeGreaterThan(5); // the markers and the aborted letters take offsets

    // One status for the whole test, read again at each step (what a console polling does), and a fresh one at the end.
    const status = createDestinationsStatus({ config: staticConfigStore(config), kafka: client, answeredBy, logger: silentLogger(), kafkaTtlMs: 0 });
    const figures = async (of = status) => {
      const doc = await of();
      expect(doc.kafka.ok).toBe(true);
      const row = doc.destinations[0]!;
      return { deadLetters: row.deadLetters, retryBacklog: row.retryBacklog, reasons: row.reasons };
    };
    expect(await figures()).toEqual({
      deadLetters: { kept: 5, notReplayed: 5 },
      retryBacklog: [{ tier: '1h', waiting: 3 }],
      reasons: ['5 dead letters not replayed', '3 events waiting to be retried'],
    });

    const listed = await runCli(['dlq', 'list', '--destination', 'hooks', '--config', file, '--json']);
    expect(listed.code).toBe(0);
    const ids = listed.out.trim().split('\n').map((line) => (JSON.parse(line) as { messageId: string }).messageId);
    expect(ids).toEqual(['d-1', 'd-3', 'd-2', 'd-4', 'd-5']);
    expect(listed.err).toContain('5 dead letter(s) of "hooks"');

    // A partial replay: 2 letters (the oldest of each partition first).
    const partial = await runCli(['replay', '--destination', 'hooks', '--config', file, '--limit', '2']);
    expect(partial.code).toBe(0);
    expect(partial.out).toContain('replayed 2 dead letter(s) of "hooks" back to delivery');
    expect((await figures()).deadLetters).toEqual({ kept: 5, notReplayed: 3 });

    const rest = await runCli(['replay', '--destination', 'hooks', '--config', file]);
    expect(rest.code).toBe(0);
    expect(rest.out).toContain('replayed 3 dead letter(s) of "hooks" back to delivery');
    const after = await figures();
    expect(after.deadLetters).toEqual({ kept: 5, notReplayed: 0 });
    expect(after.reasons).toEqual(['3 events waiting to be retried']);

    // The replay group's ledger is past every offset, markers and aborted letters included: a replay has nothing left to read.
    const reader = createAdmin(client);
    await reader.connect();
    const highs = (await reader.partitionEnds(dlq)).map((e) => [e.partition, e.high]).sort();
    const [committed] = await reader.committedOffsets(replayGroupId(config, 'hooks'), [dlq]);
    await reader.disconnect();
    expect(committed!.partitions.map((p) => [p.partition, p.offset]).sort()).toEqual(highs);

    const again = await runCli(['replay', '--destination', 'hooks', '--config', file]);
    expect(again.out).toContain('replayed 0 dead letter(s) of "hooks" back to delivery');
    const moved = await kafka.readAll(names.deliveries('hooks'), { atLeast: 5 });
    expect(moved.map((m) => m.headers['message-id']).sort()).toEqual(['d-1', 'd-2', 'd-3', 'd-4', 'd-5']);

    const listedAfter = await runCli(['dlq', 'list', '--destination', 'hooks', '--config', file]);
    expect(listedAfter.out.trim().split('\n').filter((line) => line.includes('  replayed  '))).toHaveLength(5);

    // A process that starts now reads the whole topics once and finds the same.
    const fresh = createDestinationsStatus({ config: staticConfigStore(config), kafka: client, answeredBy, logger: silentLogger() });
    expect(await figures(fresh)).toEqual({ deadLetters: { kept: 5, notReplayed: 0 }, retryBacklog: [{ tier: '1h', waiting: 3 }], reasons: ['3 events waiting to be retried'] });
  });
});
