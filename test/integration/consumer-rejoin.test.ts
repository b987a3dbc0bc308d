// The port's consumer runtime on @platformatic/kafka (src/kafka/consumer-platformatic.ts)
// through rejoins, on a real broker. Nothing may be lost: every record is handed to a
// batch handler (at least once) before the group's commit passes it.
//
// - A member consumes a topic with a steady stream of records while a second member of
//   its group joins and leaves again and again, so that the first rejoins with batches
//   in hand, records queued and a fetch in flight (whose answer may come after the
//   rejoin); the topic is fresh, so the first rejoins find partitions with no commit.
// - A member rejoins while nothing is committed yet, with records queued (its one batch
//   at a time is held): a partition with no commit must be read again from its start.
// - A follower (a group that commits nothing, reading from the end) rejoins with records
//   queued: it has no commits to go back to, so what it queued for the partitions it
//   keeps must still be handed over.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { waitFor } from '../support/wait-for.js';
import { startConsumer } from '../../src/runtime/consumer.js';
import type { BatchHandler, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from '../../src/runtime/consumer.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

const PARTITIONS = 3;

/** Every offset handed to a batch handler, by partition, whichever member had it. */
class Handed {
  private readonly offsets = Array.from({ length: PARTITIONS }, () => new Set<number>());

  add(batch: RecordBatch): void {
    for (const record of batch.records) this.offsets[batch.partition]!.add(Number(record.offset));
  }

  /** The first offset of the partition never handed over. */
  firstMissing(partition: number): number {
    let offset = 0;
    while (this.offsets[partition]!.has(offset)) offset++;
    return offset;
  }

  /** The offsets below `end` never handed over, as ranges (`345-361`). */
  missing(partition: number, end: number): string[] {
    const seen = this.offsets[partition]!;
    const ranges: string[] = [];
    for (let offset = 0; offset < end; offset++) {
      if (seen.has(offset)) continue;
      const from = offset;
      while (offset + 1 < end && !seen.has(offset + 1)) offset++;
      ranges.push(from === offset ? `${from}` : `${from}-${offset}`);
    }
    return ranges;
  }
}

/** A handler that finishes each batch at once: all its records are done. */
async function markAllDone(batch: RecordBatch): Promise<void> {
  const last = batch.records.at(-1);
  if (last !== undefined) await batch.markDone(last.offset);
}

/** A handler that records what it is handed and holds its first batch until `release()`; `holding()` once it holds it. */
function holdingFirstBatch(handed: Handed): { handler: BatchHandler; holding: () => boolean; release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let taken = false;
  const handler = async (batch: RecordBatch): Promise<void> => {
    handed.add(batch);
    if (!taken) {
      taken = true;
      await held;
    }
    await markAllDone(batch);
  };
  return { handler, holding: () => taken, release };
}

describe('the consumer runtime on platformatic through rejoins', () => {
  let tk: TestKafka;
  const client = createKafka(
    { brokers: testBrokers(), clientId: randomName('rejoin'), topicPrefix: randomPrefix(), partitions: PARTITIONS, replicationFactor: 1 },
    silentLogger(),
  );
  const running = new Set<RunningConsumer>();

  beforeAll(async () => {
    tk = await createTestKafka();
  });

  afterAll(async () => {
    for (const consumer of running) await consumer.disconnect().catch(() => undefined);
    await tk?.close();
  });

  const start = async (settings: ConsumerSettings, handler: BatchHandler, events: ConsumerEvents = {}): Promise<RunningConsumer> => {
    const consumer = await startConsumer(client, settings, handler, events, silentLogger());
    running.add(consumer);
    return consumer;
  };
  const leave = async (consumer: RunningConsumer): Promise<void> => {
    await consumer.disconnect();
    running.delete(consumer);
  };

  /** A fresh topic, what was produced to it by partition, and a round of `perPartition` records on each. */
  const freshTopic = async () => {
    const topic = randomName('rejoin');
    await tk.createTopic(topic, PARTITIONS);
    const produced = Array.from({ length: PARTITIONS }, () => 0);
    const produceRound = async (perPartition: number): Promise<void> => {
      const messages = Array.from({ length: PARTITIONS }, (_, partition) =>
        Array.from({ length: perPartition }, () => ({ partition, key: null, value: `p${partition}` })),
      ).flat();
      await tk.producer.send({ topic, messages });
      for (let partition = 0; partition < PARTITIONS; partition++) produced[partition]! += perPartition;
    };
    return { topic, produced, produceRound };
  };

  /** The group's commits by partition (-1: none). */
  const committed = async (groupId: string, topic: string): Promise<number[]> => {
    const [found] = await tk.admin.fetchOffsets({ groupId, topics: [topic] });
    return Array.from({ length: PARTITIONS }, (_, partition) => Number(found?.partitions.find((p) => p.partition === partition)?.offset ?? -1));
  };

  /** Watches the group's commits while it runs: one that passes an offset never handed over is a loss. */
  const watchCommits = (groupId: string, topic: string, handed: Handed) => {
    const losses = new Set<string>();
    let watching = true;
    const done = (async () => {
      while (watching) {
        const commits = await committed(groupId, topic).catch(() => []);
        commits.forEach((offset, partition) => {
          const hole = handed.firstMissing(partition);
          if (offset > hole) losses.add(`partition ${partition}: a commit passed offset ${hole}, never handed over`);
        });
        await sleep(100);
      }
    })();
    return {
      async stop(): Promise<string[]> {
        watching = false;
        await done;
        return [...losses];
      },
    };
  };

  /** Once the group committed every record produced: no commit passed a record not handed over, and none was left out. */
  const expectNothingLost = async (groupId: string, topic: string, produced: readonly number[], handed: Handed, watch: ReturnType<typeof watchCommits>) => {
    await waitFor(async () => (await committed(groupId, topic)).every((offset, partition) => offset === produced[partition]), {
      timeoutMs: 30_000,
      what: 'the group to commit every record produced',
    });
    const losses = await watch.stop();
    const missing = Array.from({ length: PARTITIONS }, (_, partition) => handed.missing(partition, produced[partition]!));
    expect({ losses, missing }).toEqual({ losses: [], missing: missing.map(() => []) });
  };

  it('hands every record over before the commit passes it, while a second member joins and leaves', async () => {
    /** Records on each partition before any member starts (a fresh topic: no commits yet). */
    const BACKLOG_PER_PARTITION = 300;
    /** How long a batch's work takes: batches are in hand (not committed) when a rebalance comes. */
    const BATCH_WORK_MS = 40;
    /** The pace of the steady stream: one record per partition this often, so a long-poll fetch is nearly always in flight. */
    const PRODUCE_EVERY_MS = 60;
    const ROUNDS = 3;
    const { topic, produced, produceRound } = await freshTopic();
    const groupId = randomName('group');
    await produceRound(BACKLOG_PER_PARTITION);

    const handed = new Handed();
    const handler = async (batch: RecordBatch): Promise<void> => {
      handed.add(batch);
      await sleep(BATCH_WORK_MS);
      const last = batch.records.at(-1);
      if (last !== undefined) await batch.markDone(last.offset);
    };
    const settings: ConsumerSettings = { groupId, topics: [topic], fromBeginning: true, commit: { kind: 'batch-end' }, maxWaitTimeInMs: 500 };
    let firstJoins = 0;
    let firstAssigned = 0;
    let firstFetches = 0;
    const first = await start(settings, handler, {
      onJoin: (assignment) => {
        firstJoins += 1;
        firstAssigned = assignment[topic]?.length ?? 0;
      },
      onFetch: () => {
        firstFetches += 1;
      },
    });

    const watch = watchCommits(groupId, topic, handed);
    let producing = true;
    const steady = (async () => {
      while (producing) {
        await produceRound(1);
        await sleep(PRODUCE_EVERY_MS);
      }
    })();

    try {
      for (let round = 1; round <= ROUNDS; round++) {
        const joinsBefore = firstJoins;
        const second = await start(settings, handler);
        // The second member joined, so the first rejoined (with its work in hand) to share the partitions.
        await waitFor(() => firstJoins > joinsBefore && firstAssigned < PARTITIONS, { timeoutMs: 20_000, what: `round ${round}: the first member to rejoin with a share` });
        await leave(second);
        await waitFor(() => firstAssigned === PARTITIONS, { timeoutMs: 20_000, what: `round ${round}: the first member to take every partition back` });
      }
    } finally {
      producing = false;
      await steady;
    }
    await expectNothingLost(groupId, topic, produced, handed, watch);

    // A stream replaced on each rejoin does not make the member join again: alone, it stays in its generation.
    const joinsSettled = firstJoins;
    const fetchesSettled = firstFetches;
    await waitFor(() => firstFetches >= fetchesSettled + 4, { timeoutMs: 20_000, what: 'the first member to go on fetching' });
    expect(firstJoins).toBe(joinsSettled);
    await leave(first);
  }, 120_000);

  it('reads a partition with no commit again from its start after a rejoin that dropped its queued records', async () => {
    const BACKLOG_PER_PARTITION = 50;
    const { topic, produced, produceRound } = await freshTopic();
    const groupId = randomName('group');
    await produceRound(BACKLOG_PER_PARTITION);

    const handed = new Handed();
    // The first member's first batch is held until it rejoined: nothing is committed
    // then, and the other partitions' records (fetched with it) wait in its queues.
    const { handler, holding, release } = holdingFirstBatch(handed);
    const settings: ConsumerSettings = { groupId, topics: [topic], fromBeginning: true, commit: { kind: 'batch-end' }, maxWaitTimeInMs: 500 };
    let firstJoins = 0;
    let firstAssigned = 0;
    await start(settings, handler, {
      onJoin: (assignment) => {
        firstJoins += 1;
        firstAssigned = assignment[topic]?.length ?? 0;
      },
    });
    await waitFor(holding, { timeoutMs: 20_000, what: 'the first member to take its first batch' });
    expect(await committed(groupId, topic)).toEqual([-1, -1, -1]);

    const watch = watchCommits(groupId, topic, handed);
    await start(settings, handler);
    await waitFor(() => firstJoins > 1 && firstAssigned < PARTITIONS, { timeoutMs: 20_000, what: 'the first member to rejoin with a share' });
    release();
    // A record more on each partition: a member that skipped the backlog would commit past it.
    await produceRound(1);
    await expectNothingLost(groupId, topic, produced, handed, watch);
  }, 60_000);

  it('keeps what it queued for the partitions it keeps when its group commits nothing (a follower)', async () => {
    const { topic, produced, produceRound } = await freshTopic();
    const groupId = randomName('group');
    const handed = new Handed();
    const { handler, holding, release } = holdingFirstBatch(handed);
    // A follower reads from the end: no commits to go back to on a rejoin.
    const settings: ConsumerSettings = { groupId, topics: [topic], fromBeginning: false, commit: { kind: 'none' }, maxWaitTimeInMs: 500 };
    let joins = 0;
    let kept: number[] = [];
    let fetches = 0;
    await start(settings, handler, {
      onJoin: (assignment) => {
        joins += 1;
        kept = assignment[topic] ?? [];
      },
      onFetch: () => {
        fetches += 1;
      },
    });
    // It reads from the end it found once it fetches: what follows is read.
    await waitFor(() => fetches > 0, { timeoutMs: 20_000, what: 'the follower to fetch' });
    await produceRound(50);
    await waitFor(holding, { timeoutMs: 20_000, what: 'the follower to take its first batch' });

    await start(settings, markAllDone);
    await waitFor(() => joins > 1 && kept.length < PARTITIONS, { timeoutMs: 20_000, what: 'the follower to rejoin with a share' });
    release();
    await waitFor(() => kept.every((partition) => handed.firstMissing(partition) >= produced[partition]!), {
      timeoutMs: 15_000,
      what: `every record of the partitions the follower kept (${kept.join(', ')}) to be handed over`,
    }).catch(() => undefined);
    expect(Object.fromEntries(kept.map((partition) => [partition, handed.missing(partition, produced[partition]!)]))).toEqual(
      Object.fromEntries(kept.map((partition) => [partition, []])),
    );
  }, 60_000);
});
