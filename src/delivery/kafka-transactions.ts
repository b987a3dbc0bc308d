// Exactly once into a topic of Switchyard's own cluster (docs/kafka.md#what-is-guaranteed):
// a Kafka destination's records and the deliverer group's offsets of the delivery
// records they came from are written in one transaction (src/kafka/transaction.ts). A
// consumer of the topic that reads committed data sees each event once, across SIGKILLs,
// rebalances and broker restarts: a transaction that did not commit left neither the
// records nor the offsets, so the next owner of the partition writes them again, once.
// With `kafka.transactions: true` the deliverer's moves to a retry tier or the
// dead-letter topic go the same way (retry-or-dead-letter.ts), in the same transactions.
//
// The offsets are the commit the deliverer's ledger would make once these events are
// finished: the first unfinished offset and the `sy1:` metadata of the finished ones
// above it (offset-progress.ts), so that a transaction commits no offset below an event
// still in flight. Concurrent deliveries share a transaction (GroupedTransactions); each
// one's offsets go out after those of the deliveries that joined before it, computed
// when they go, so the last TxnOffsetCommit of a transaction names all of its events.
//
// NOTE: the offsets are committed with the group member's generation (KIP-447): a
// deliverer whose partitions moved to another member cannot commit (its transaction
// aborts, the new owner writes the events). After the transaction, the lane finishes the
// events in the ledger as any others; its own commit names the same point or a later one.
// NOTE: a window is left (docs/kafka.md#transactions): a ledger commit whose snapshot
// predates these events and that the coordinator stores after this transaction's
// TxnOffsetCommit wins when the transaction commits (the offset stored last is kept),
// until the ledger's next commit, which names the events once the lane finished them.
// Closing it means no ledger commit naming a partition between a transaction's offsets
// of that partition and the lane's finish (a hold in the ledger); not done yet.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { PartitionProgress, createTransactionalProducer, partitionKey } from '../kafka/index.js';
import type { InboundRecord, KafkaClient, TopicRecords, Transaction, TransactionGroupMember, TransactionOffset, TransactionalProducer } from '../kafka/index.js';
import { GroupedTransactions } from '../runtime/grouped-transactions.js';

export interface KafkaTransactionsOptions {
  kafka: KafkaClient;
  /** The deliverer's group: the transactional id starts with it (`<group>.kafka-destinations.<random>`). */
  groupId: string;
  /** The deliverer's group member, as a transaction names it; undefined between generations. */
  member: () => TransactionGroupMember | undefined;
  /** A partition's progress in the deliverer's commit ledger (key: src/kafka/partition-key.ts); undefined once it is not this member's. */
  progressAt: (key: string) => PartitionProgress | undefined;
  logger: Logger;
  /** One write per transaction, one transaction at a time: for an event tried again alone after its shared transaction failed. */
  alone?: boolean;
  /**
   * Offsets committed transactions named that the ledger may not show finished yet, by
   * partition key: shared by the deliverer's transactions (shared and alone), so that
   * each one's offsets include the others'.
   */
  committed: Map<string, Set<string>>;
  /** How long a write may take (its transaction's commit included) before it is given up (`delivery.timeout` and the transaction timeout). */
  deadlineMs: number;
}

/** One transaction's events so far, by partition; the writes waiting for its next request, and its requests in order. */
interface Round {
  finishing: Map<string, { topic: string; partition: number; offsets: string[] }>;
  waiting: { records: readonly TopicRecords[]; done: (error?: unknown) => void }[];
  chain: Promise<void>;
}

/** Thrown while the deliverer is between generations: the events are attempted again (never finished). */
export class NotAMemberError extends Error {
  readonly retriable = true;
  constructor(groupId: string) {
    super(`the deliverer is not a member of group ${groupId} at the moment (a rebalance); the transaction was not started and its events are attempted again`);
    this.name = 'NotAMemberError';
  }
}

export class KafkaTransactions {
  private producer!: TransactionalProducer;
  private grouped!: GroupedTransactions;
  private readonly rounds = new WeakMap<Transaction, Round>();
  private connected: Promise<void> | undefined;
  /** `alone`: the write before, which the next waits for. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly options: KafkaTransactionsOptions) {
    // NOTE: a transactional id of its own per process start: KIP-447 fences zombies by
    // the group's generation, so the id need not follow the partitions. A SIGKILLed
    // process's open transaction is aborted by the broker after the transaction timeout.
    this.renew();
  }

  /**
   * A new transactional producer, with an id of its own: at the start, and when a
   * transaction did not end within the deadline. (After a transaction that failed, the
   * producer itself starts the next on a new library producer: src/kafka/transaction.ts.)
   */
  private renew(): void {
    const transactionalId = `${this.options.groupId}.kafka-destinations${this.options.alone === true ? '-alone' : ''}.${randomBytes(6).toString('hex')}`;
    this.producer = createTransactionalProducer(this.options.kafka, { transactionalId });
    this.grouped = new GroupedTransactions(this.producer, { maxOpenMs: 20 });
    this.connected = undefined;
  }

  /** Writes `records` and commits the offsets of `events` (their delivery records) in one transaction; resolves once it committed. */
  async write(records: readonly TopicRecords[], events: readonly InboundRecord[]): Promise<void> {
    if (this.options.alone !== true) return this.withinDeadline(this.writeShared(records, events));
    const turn = this.queue.then(() => this.withinDeadline(this.writeShared(records, events)));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  /**
   * NOTE: a transaction that does not end within the deadline is given up: the producer
   * is replaced (the broker aborts the old one's open transaction after its timeout) and
   * the write fails (its events are retried). Seen once under test: a transaction whose
   * first try failed on a record too large never settled.
   */
  private async withinDeadline(write: Promise<void>): Promise<void> {
    const producer = this.producer;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        if (this.producer === producer) {
          this.renew();
          void producer.close().catch(() => undefined);
        }
        reject(Object.assign(new Error(`the Kafka transaction did not end within ${this.options.deadlineMs} ms; given up, its events are retried`), { retriable: true }));
      }, this.options.deadlineMs);
    });
    write.catch(() => undefined);
    try {
      await Promise.race([write, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async writeShared(records: readonly TopicRecords[], events: readonly InboundRecord[]): Promise<void> {
    const producer = this.producer;
    this.connected ??= producer.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    });
    await this.connected;
    await this.grouped.within(async (transaction) => {
      const member = this.options.member();
      if (member === undefined) throw new NotAMemberError(this.options.groupId);
      let round = this.rounds.get(transaction);
      if (round === undefined) this.rounds.set(transaction, (round = { finishing: new Map(), waiting: [], chain: Promise.resolve() }));
      for (const { topic, partition, offset } of events) {
        const key = partitionKey(topic, partition);
        let entry = round.finishing.get(key);
        if (entry === undefined) round.finishing.set(key, (entry = { topic, partition, offsets: [] }));
        entry.offsets.push(offset);
      }
      // NOTE: one request of the transaction at a time: concurrent sends into one
      // transaction were answered TRANSACTION_ABORTABLE by the broker. The writes that
      // joined meanwhile go together: their records in one send, then the offsets of
      // every event of the transaction so far in one TxnOffsetCommit.
      const current = round;
      const done = new Promise<void>((resolve, reject) => current.waiting.push({ records, done: (error) => (error === undefined ? resolve() : reject(error)) }));
      if (current.waiting.length === 1) current.chain = current.chain.then(() => this.flush(transaction, member, current));
      await done;
    });
    for (const { topic, partition, offset } of events) {
      const key = partitionKey(topic, partition);
      let offsets = this.options.committed.get(key);
      if (offsets === undefined) this.options.committed.set(key, (offsets = new Set()));
      offsets.add(offset);
    }
  }

  /** The writes waiting in `round`: their records, then the round's offsets; each told how it went. */
  private async flush(transaction: Transaction, member: TransactionGroupMember, round: Round): Promise<void> {
    const writes = round.waiting;
    round.waiting = [];
    try {
      await transaction.send(writes.flatMap((w) => w.records));
      await transaction.sendOffsets(member, this.offsetsOf(round));
      for (const write of writes) write.done();
    } catch (error) {
      for (const write of writes) write.done(error);
    }
  }

  async close(): Promise<void> {
    await this.producer.close();
  }

  /** Each partition's commit once the round's events are finished, over what the ledger finished already. */
  private offsetsOf(round: Round): TransactionOffset[] {
    return [...round.finishing].map(([key, { topic, partition, offsets }]) => {
      const progress = this.options.progressAt(key);
      // Not this member's any more: the group refuses the offsets anyway; refused here, the transaction aborts.
      if (progress === undefined) throw new NotAMemberError(this.options.groupId);
      const { offset, metadata } = progress.commitPoint(Number.MAX_SAFE_INTEGER);
      const after = new PartitionProgress(offset, metadata);
      for (const done of offsets) after.finish(done);
      const earlier = this.options.committed.get(key);
      for (const done of earlier ?? []) {
        if (progress.isFinished(done)) earlier!.delete(done);
        else after.finish(done);
      }
      if (earlier?.size === 0) this.options.committed.delete(key);
      const point = after.commitPoint();
      return { topic, partition, offset: BigInt(point.offset), metadata: point.metadata };
    });
  }
}
