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
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createAdmin, createKafka, createTransactionalProducer } from '../../src/kafka/index.js';
import type { KafkaClient, TopicRecords } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { replayGroupId } from '../../src/runtime/group-ids.js';
import { createTopology } from '../../src/runtime/topology.js';
import { runCli, writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, readCommitted, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

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
    // The last transaction's markers land a moment after its commit() returned.
    await kafka.admin.waitForSettled(dlq);
    await kafka.admin.waitForSettled(retry);
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

describe('the deliverer moving in transactions (delivery.transactionalMoves: true)', () => {
  it('dead letters and events waiting in a retry tier are counted as events, in the console and in switchyard_retry_queue_depth', async () => {
    const prefix = randomPrefix();
    const gone = await startReceiver();
    const down = await startReceiver();
    gone.reply({ status: 400 }); // permanent: dead-lettered at once
    down.reply({ status: 503 }); // to the retry tier, where it waits an hour
    const file = writeConfigFile({
      kafka: { brokers: testBrokers(), clientId: randomName('dlq-txn'), topicPrefix: prefix, partitions: 2, transactions: true },
      delivery: { retryTiers: ['1h'], transactionalMoves: true, circuitBreaker: { minAttempts: 1_000_000, unanswered: 1_000_000 } },
      sources: [{ id: 'web' }],
      destinations: [
        { id: 'gone', type: 'webhooks', settings: { webhooks: [{ url: gone.url() }] } },
        { id: 'down', type: 'webhooks', settings: { webhooks: [{ url: down.url() }] } },
      ],
    });
    const loaded = loadConfigFile(file, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const config = loaded.config;
    const client = createKafka(config.kafka, silentLogger());
    const metrics = createMetrics({ defaultMetrics: false });
    const service = createDelivererService({ config: staticConfigStore(config), kafka: client, metrics, logger: silentLogger() }, { sampleIntervalMs: 300 });
    try {
      await service.start();
      await waitFor(() => service.health().ready, { timeoutMs: 60_000, what: 'the deliverer to be ready' });
      const { names } = createTopology(prefix);
      const events = (ids: string[]) => ids.map((id) => ({ key: `u-${id}`, value: body(id), headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } }));
      // One by one, so that the moves are transactions of their own, each with its marker.
      for (const id of ['g-1', 'g-2', 'g-3']) {
        await kafka.produce(names.deliveries('gone'), events([id]));
        await waitFor(() => gone.requests.length >= Number(id.slice(2)), { what: `${id} attempted` });
      }
      for (const id of ['w-1', 'w-2', 'w-3', 'w-4']) {
        await kafka.produce(names.deliveries('down'), events([id]));
        await waitFor(() => down.requests.length >= Number(id.slice(2)), { what: `${id} attempted` });
      }
      const retryTopic = names.retry('down', '1h');
      expect(await readCommitted(retryTopic, { atLeast: 4 })).toHaveLength(4);
      const gauge = async (of: 'retryQueueDepth' | 'consumerLag', match: (labels: Record<string, string | number>) => boolean) =>
        (await metrics[of].get()).values.find((v) => match(v.labels))?.value;
      // The offsets hold the moves' markers too: the lag of the tier (offsets) is more than its events, the depth is its events.
      let seen = {};
      await waitFor(
        async () => {
          seen = { lag: await gauge('consumerLag', (l) => l.topic === retryTopic), depth: await gauge('retryQueueDepth', (l) => l.destination === 'down' && l.tier === '1h') };
          return ((seen as { lag?: number }).lag ?? 0) > 4 && (seen as { depth?: number }).depth === 4;
        },
        { timeoutMs: 20_000, what: 'a sample of the four moves: a lag of more than 4 offsets (the moves and their markers), a depth of 4 events' },
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; last seen ${JSON.stringify(seen)}`);
      });

      const status = createDestinationsStatus({ config: staticConfigStore(config), kafka: client, answeredBy, logger: silentLogger(), kafkaTtlMs: 0 });
      await waitFor(
        async () => {
          const doc = await status();
          return doc.destinations.find((d) => d.id === 'gone')?.deadLetters?.kept === 3;
        },
        { what: 'the three dead letters committed' },
      );
      const doc = await status();
      const row = (id: string) => doc.destinations.find((d) => d.id === id)!;
      expect(row('gone').deadLetters).toEqual({ kept: 3, notReplayed: 3 });
      expect(row('gone').reasons).toContain('3 dead letters not replayed');
      expect(row('down').retryBacklog).toEqual([{ tier: '1h', waiting: 4 }]);
      expect(row('down').reasons).toContain('4 events waiting to be retried');
    } finally {
      await service.stop();
      await gone.close();
      await down.close();
    }
  });
});
