// The ordered consumer, for roles that work in order (the router, the audiences, the
// seen follower, the destination state's followers): a group member on the port's
// consumer engine (src/kafka/: membership, fetcher, committer) that hands the role batches of records and commits what the role
// marked done. Roles never commit themselves.
//
// - records are queued per partition as they arrive; a partition whose queue is not
//   empty and has no batch running gets one (all it has queued, up to a cap), with up
//   to `partitionsConsumedConcurrently` partitions at once, each in offset order. The
//   fetcher's byte budget bounds what waits;
// - a batch's commit names the record after its last one marked done (past the
//   fetch's skipped control records when that is the last one fetched), and is retried
//   until done while the partition is ours (commit-until-done.ts); commits of batches
//   that finish together leave as one request (commit-merger.ts);
// - a new generation starts every assigned partition from its last commit, else from
//   the start `fromBeginning` names; the batches in hand finish and commit for the
//   generation that gave them (accepted until the next join completes); a group that
//   commits nothing (`commit: none`) keeps the positions of the partitions it keeps;
// - a failed batch drops what is queued and joins again, reading from the commits.
// docs/kafka.md#the-consumer-engine draws it.
import type { Logger } from 'pino';
import { GroupReader, assignedTopics, committedWithin, heldBytes, isFenced, partitionKey as keyOf, splitPartitionKey } from '../kafka/index.js';
import type { Generation, InboundRecord, KafkaClient, TransactionGroupMember } from '../kafka/index.js';
import { CommitMerger } from './commit-merger.js';
import { ForeignAssignment } from './foreign-assignment.js';
import type { BatchHandler, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from './consumer-contract.js';
import type { GroupedTransactions } from './grouped-transactions.js';
import { commitUntilDone } from './commit-until-done.js';

export type { BatchHandler, CommitPolicy, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from './consumer-contract.js';

/** The most records one batch takes. */
const MAX_BATCH_RECORDS = 5_000;
/** What the fetched records of all partitions may hold together, by default. */
const DEFAULT_BUDGET_BYTES = 64 * 1024 * 1024;
const DEFAULT_PARTITION_BYTES = 1024 * 1024;
/**
 * How long a generation's end waits for the batches in hand to finish and commit for it.
 * NOTE: short: the whole group's join waits for its slowest member; a batch that runs
 * longer finishes unowned and commits nothing (its records are read again: duplicates,
 * never a loss).
 */
const REVOKE_WAIT_MS = 1_000;

interface PartitionQueue {
  topic: string;
  partition: number;
  records: InboundRecord[];
  /** The fetcher's position after the last queued record (past control records). */
  next: bigint;
  /**
   * An answer moved `next` with no record (an aborted transaction, a marker): owed a
   * commit that no batch of records will carry, or the group's lag stays above 0.
   */
  moved: boolean;
  running: boolean;
}

/** Starts a group member on `settings.topics`; resolves at once (the join follows). */
export async function startConsumer(client: KafkaClient, settings: ConsumerSettings, handler: BatchHandler, events: ConsumerEvents, logger: Logger): Promise<RunningConsumer> {
  const runtime = new BatchRuntime(client, settings, handler, events, logger);
  runtime.start();
  return {
    assignmentProblem: () => runtime.foreign.notReady(),
    stop: () => runtime.stop(),
    disconnect: () => runtime.stop(),
  };
}

class BatchRuntime {
  readonly foreign: ForeignAssignment;
  private readonly reader: GroupReader;
  private readonly queues = new Map<string, PartitionQueue>();
  private assigned = new Set<string>();
  /** Bumped by every generation and failure: a batch of an older epoch is not owned any more. */
  private epoch = 0;
  private running = 0;
  private scheduled = false;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  private readonly idle = new Set<() => void>();
  private readonly concurrency: number;
  private readonly commits: CommitMerger;
  /** For `commit: none`: where the partitions stood when the last generation ended. */
  private readonly kept = new Map<string, bigint>();
  /** The generation that gave the batches of the current epoch (their transactions commit for it). */
  private generation: Generation | undefined;

  constructor(
    client: KafkaClient,
    private readonly settings: ConsumerSettings,
    private readonly handler: BatchHandler,
    private readonly events: ConsumerEvents,
    private readonly logger: Logger,
  ) {
    this.concurrency = Math.max(1, settings.partitionsConsumedConcurrently ?? 1);
    this.foreign = new ForeignAssignment(settings.groupId, logger);
    const budget = settings.maxBytes ?? DEFAULT_BUDGET_BYTES;
    this.reader = new GroupReader(
      client,
      {
        groupId: settings.groupId,
        rebalanceTimeoutMs: 60_000,
        fetch: committedWithin(budget, { partitionBytes: settings.maxBytesPerPartition ?? DEFAULT_PARTITION_BYTES, requestBytes: budget, pollWaitMs: () => settings.maxWaitTimeInMs ?? 5_000, emptyPollMs: 100, ...(settings.minBytes !== undefined ? { minBytes: settings.minBytes } : {}) }),
      },
      {
        membership: {
          assigned: (generation) => this.onAssigned(generation),
          revoking: () => this.onRevoking(),
          trouble: (error) => this.events.onCrash?.(error, true),
        },
        fetch: {
          records: (topic, partition, records, from, next) => this.onRecords(topic, partition, records, from, next),
          reset: (topic, partition, from, to) =>
            logger.warn({ topic, partition, from: from.toString(), to: to.toString(), groupId: settings.groupId }, `records of ${topic} partition ${partition} from offset ${from} were removed by retention before they were read; reading on from ${to}`),
          trouble: (error) => logger.debug({ err: error, groupId: settings.groupId }, 'fetch failed; asking the leaders again'),
          ...(events.onFetch ? { fetched: () => events.onFetch?.() } : {}),
        },
      },
      logger,
    );
    const generationOf = () => this.reader.membership.current();
    this.commits = new CommitMerger(async (offsets) => {
      const generation = generationOf();
      if (generation === undefined) throw Object.assign(new Error(`offsets of group ${settings.groupId} not committed: between generations`), { retriable: true });
      await this.reader.commit(
        generation,
        offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: o.offset.toString(), metadata: null })),
      );
    });
  }

  start(): void {
    this.reader.membership.subscribe(this.settings.topics);
  }

  private onAssigned(generation: Generation): void {
    this.foreign.joined([...generation.foreignTopics]);
    this.epoch += 1;
    this.generation = generation;
    const assignment = Object.fromEntries([...generation.assignment].map(([topic, partitions]) => [topic, [...partitions]]));
    this.assigned = new Set(Object.entries(assignment).flatMap(([topic, partitions]) => partitions.map((p) => keyOf(topic, p))));
    void this.startFetching(generation)
      .then(() => this.events.onJoin?.(assignment, generation.memberId))
      .catch((error: unknown) => {
        this.events.onCrash?.(error as Error, true);
        this.reader.membership.rejoin();
      });
  }

  /** Positions from the commits (or, for `commit: none`, from where the partitions stood), else from the start `fromBeginning` names. */
  private async startFetching(generation: Generation): Promise<void> {
    const assigned = assignedTopics(generation);
    if (assigned.length === 0) return;
    const kept = new Map([...this.kept].filter(([key]) => this.assigned.has(key)));
    const committed = this.settings.commit.kind === 'none' ? kept : await this.reader.committedPositions(generation, assigned);
    const positions = await this.reader.fillFromLog(committed, assigned, this.settings.fromBeginning ? 'earliest' : 'latest', 1);
    if (this.reader.membership.current() !== generation || this.stopping) return;
    await this.reader.fetcher.add(assigned.flatMap(({ topic, partitions }) => partitions.map((partition) => ({ topic, partition, position: positions.get(keyOf(topic, partition))! }))));
  }

  /** The generation ends: stop fetching, let the batches in hand finish (they commit for it), drop what waits. */
  private async onRevoking(): Promise<void> {
    if (this.settings.commit.kind === 'none') {
      this.kept.clear();
      for (const key of this.assigned) {
        const { topic, partition } = splitPartitionKey(key);
        const queue = this.queues.get(key);
        const position = queue?.records[0] !== undefined ? BigInt(queue.records[0].offset) : this.reader.fetcher.position(topic, partition);
        if (position !== undefined) this.kept.set(key, position);
      }
    }
    this.reader.fetcher.clear();
    this.dropQueued();
    await this.whenIdle(REVOKE_WAIT_MS);
  }

  private dropQueued(): void {
    for (const queue of this.queues.values()) {
      queue.records = [];
      queue.moved = false;
    }
  }

  private onRecords(topic: string, partition: number, records: InboundRecord[], from: bigint, next: bigint): void {
    if (this.stopping) return;
    const key = keyOf(topic, partition);
    if (!this.assigned.has(key)) return;
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, records: [], next, moved: false, running: false };
      this.queues.set(key, queue);
    }
    queue.records.push(...records);
    queue.next = next;
    // A commit policy of none owes no commit.
    if (records.length === 0 && next > from && this.settings.commit.kind !== 'none') queue.moved = true;
    // NOTE: the answers of one fetch are handed over one after the other in the same
    // turn; batches start once they are all queued, so that a batch takes them together.
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.schedule();
      });
    }
  }

  private schedule(): void {
    if (this.stopping) return;
    for (const queue of this.queues.values()) {
      if (this.running >= this.concurrency) return;
      if (queue.running) continue;
      // A queue with no record whose position moved gets a batch of none: it commits `next`.
      if (queue.records.length === 0 && !queue.moved) continue;
      const taken = queue.records.length <= MAX_BATCH_RECORDS ? queue.records : queue.records.slice(0, MAX_BATCH_RECORDS);
      queue.records = taken === queue.records ? [] : queue.records.slice(MAX_BATCH_RECORDS);
      const next = queue.records.length === 0 ? queue.next : undefined;
      if (next !== undefined) queue.moved = false;
      queue.running = true;
      this.running += 1;
      void this.runBatch(queue, taken, next).finally(() => {
        queue.running = false;
        // Round robin: the partition just served goes last, so the others' turn comes first.
        const key = keyOf(queue.topic, queue.partition);
        if (this.queues.get(key) === queue) {
          this.queues.delete(key);
          this.queues.set(key, queue);
        }
        this.running -= 1;
        if (this.running === 0) for (const wake of [...this.idle]) wake();
        this.schedule();
      });
    }
  }

  /** `next`: the position after the batch's last record when nothing was queued after it. */
  private async runBatch(queue: PartitionQueue, records: InboundRecord[], next: bigint | undefined): Promise<void> {
    const { commit } = this.settings;
    if (commit.kind === 'transaction') return runInTransaction(this.transactionRun(queue, records, next), commit.transactions);
    const { topic, partition } = queue;
    const key = keyOf(topic, partition);
    const epoch = this.epoch;
    const owned = () => !this.stopping && this.epoch === epoch && this.assigned.has(key);
    let doneIndex = -1;
    const indexOf = (offset: string): number => {
      for (let i = doneIndex + 1; i < records.length; i++) if (records[i]!.offset === offset) return i;
      for (let i = Math.min(doneIndex, records.length - 1); i >= 0; i--) if (records[i]!.offset === offset) return i;
      return -1;
    };
    const view: RecordBatch = {
      topic,
      partition,
      records,
      markDone: async (offset) => {
        const index = indexOf(offset);
        if (index >= 0) doneIndex = index;
      },
      stillOwned: owned,
    };
    let failure: unknown;
    try {
      if (records.length > 0) await this.handler(view);
    } catch (error) {
      failure = error;
    }
    let released = 0;
    for (let i = 0; i <= doneIndex; i++) released += heldBytes(records[i]!);
    if (failure !== undefined) {
      for (let i = doneIndex + 1; i < records.length; i++) released += heldBytes(records[i]!);
      this.reader.fetcher.release(topic, partition, released);
      this.fail(failure);
      return;
    }
    this.reader.fetcher.release(topic, partition, released);
    this.requeueNotDone(queue, records, doneIndex, epoch);
    // NOTE: not owned() here: a batch that finishes after stop() began still commits (stop waits for it).
    const stillOurs = () => this.epoch === epoch && this.assigned.has(key);
    const offset = committedAfter(records, doneIndex, next);
    if (this.settings.commit.kind === 'none' || offset === undefined || !stillOurs()) return;
    try {
      await commitUntilDone(() => this.commits.commit({ topic, partition, offset, leaderEpoch: -1 }), { stillOwned: stillOurs, logger: this.logger, what: `${topic} partition ${partition}` });
    } catch (error) {
      this.logger.debug({ err: error, topic, partition }, 'commit refused (the group moved on); the partition is read again from its last commit');
      if (this.epoch === epoch) this.reader.membership.rejoin();
    }
  }

  /** What runInTransaction needs of this runtime for one batch. */
  private transactionRun(queue: PartitionQueue, records: InboundRecord[], next: bigint | undefined): TransactionRun {
    const { topic, partition } = queue;
    const key = keyOf(topic, partition);
    const epoch = this.epoch;
    const generation = this.generation;
    return {
      topic,
      partition,
      records,
      next,
      handler: this.handler,
      owned: () => !this.stopping && this.epoch === epoch && this.assigned.has(key),
      member: generation === undefined ? undefined : { groupId: this.settings.groupId, generationId: generation.id, memberId: generation.memberId, groupInstanceId: null, coordinator: generation.coordinator },
      finished: (doneIndex, failure) => {
        let released = 0;
        const through = failure === undefined ? doneIndex : records.length - 1;
        for (let i = 0; i <= through; i++) released += heldBytes(records[i]!);
        this.reader.fetcher.release(topic, partition, released);
        if (failure === undefined) {
          this.requeueNotDone(queue, records, doneIndex, epoch);
        } else if (isFenced(failure)) {
          // NOTE: a zombie's transaction (the group moved on, or this producer was
          // fenced): aborted, so nothing of it is visible; the partitions' owner reads it again.
          this.logger.warn({ err: failure, topic, partition, groupId: this.settings.groupId }, 'transaction fenced and aborted; joining the group again');
          if (this.epoch === epoch && !this.stopping) {
            this.epoch += 1;
            this.dropQueued();
            this.reader.membership.rejoin();
          }
        } else {
          this.fail(failure);
        }
      },
    };
  }

  /** The records after the last one marked done go back to the front of the partition's queue. */
  private requeueNotDone(queue: PartitionQueue, records: readonly InboundRecord[], doneIndex: number, epoch: number): void {
    if (this.stopping || this.epoch !== epoch) return;
    const rest = records.slice(doneIndex + 1);
    if (rest.length > 0) queue.records = [...rest, ...queue.records];
  }

  /** A batch failed: report it, drop what is queued and join again (positions from the commits). */
  private fail(error: unknown): void {
    if (this.stopping) return;
    const failure = error instanceof Error ? error : new Error(String(error));
    this.epoch += 1;
    this.dropQueued();
    this.events.onCrash?.(failure, true);
    this.reader.membership.rejoin();
  }

  private whenIdle(maxMs: number): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, maxMs);
      const idle = this.idle;
      function done() {
        clearTimeout(timer);
        idle.delete(done);
        resolve();
      }
      idle.add(done);
    });
  }

  /** Stops fetching; resolves once the batches in hand are finished (and committed), and the member left. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      this.reader.fetcher.clear();
      this.dropQueued();
      while (this.running > 0) await this.whenIdle(60_000);
      await this.reader.close();
      this.events.onStop?.();
    })();
    return this.stopped;
  }
}

/**
 * The offset a batch commits: past its last record marked done, or `next` (past control
 * records after it) when that is the batch's last record and nothing was queued after
 * it. A batch of no record commits `next`: the position an answer moved without records.
 */
function committedAfter(records: readonly InboundRecord[], doneIndex: number, next: bigint | undefined): bigint | undefined {
  if (records.length === 0) return next;
  const done = records[doneIndex];
  if (done === undefined) return undefined;
  return doneIndex === records.length - 1 && next !== undefined ? next : BigInt(done.offset) + 1n;
}

/** One batch of a `commit: transaction` consumer, as runInTransaction sees it. */
interface TransactionRun {
  topic: string;
  partition: number;
  records: InboundRecord[];
  /** The position after the batch's last record when nothing was queued after it. */
  next: bigint | undefined;
  handler: BatchHandler;
  owned(): boolean;
  /** The member of the generation that gave the batch (undefined between generations: the batch fails). */
  member: TransactionGroupMember | undefined;
  /** The batch ended: `doneIndex` records marked done, committed when `failure` is undefined. */
  finished(doneIndex: number, failure: unknown): void;
}

/**
 * A batch of a `commit: transaction` consumer: the role's writes (RecordBatch.send) and
 * the offset after the last record marked done go into one transaction, shared with
 * the other batches in hand (GroupedTransactions); the offset is committed for the
 * generation that gave the batch, so a zombie's transaction aborts (KIP-447). A failed
 * or aborted transaction fails the batch: the group reads it again from the commits.
 */
async function runInTransaction(run: TransactionRun, transactions: GroupedTransactions): Promise<void> {
  const { topic, partition, records, member } = run;
  let doneIndex = -1;
  const effects: ((committed: boolean) => void)[] = [];
  let failure: unknown;
  try {
    if (member === undefined) throw Object.assign(new Error(`batch of ${topic} partition ${partition} not routed: the consumer is between generations`), { retriable: true });
    await transactions.within(async (transaction) => {
      const view: RecordBatch = {
        topic,
        partition,
        records,
        markDone: async (offset) => {
          for (let i = records.length - 1; i > doneIndex; i--) {
            if (records[i]!.offset === offset) {
              doneIndex = i;
              return;
            }
          }
        },
        stillOwned: run.owned,
        send: (out) => transaction.send(out),
        afterCommit: (effect) => effects.push(effect),
      };
      if (records.length > 0) await run.handler(view);
      const offset = committedAfter(records, doneIndex, run.next);
      if (offset === undefined) return;
      await transaction.sendOffsets(member, [{ topic, partition, offset, metadata: null }]);
    });
  } catch (error) {
    failure = error;
  }
  for (const effect of effects) effect(failure === undefined);
  run.finished(doneIndex, failure);
}
