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
// aborts, the new owner writes the events).
// NOTE: the coordinator keeps the offset stored last, and a plain commit of the ledger
// stored after a transaction's TxnOffsetCommit would win when the transaction commits,
// with a point that lacks the transaction's events (docs/kafka.md#transactions; seen in
// CI: 16 events written twice after a SIGKILL in that window). So the ledger holds a
// partition out of its rounds (and out of other transactions' offsets) from before the
// transaction's offsets of it until the transaction ended, and a committed transaction's
// events are finished in the ledger before the hold is released: every commit after it
// names them.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { PartitionProgress, createTransactionalProducer, isFenced, partitionKey } from '../kafka/index.js';
import type { CommitPoint, InboundRecord, KafkaClient, TopicRecords, Transaction, TransactionGroupMember, TransactionOffset, TransactionalProducer } from '../kafka/index.js';
import { GroupedTransactions } from '../runtime/grouped-transactions.js';
import type { Hold } from './commit-ledger.js';

/** What the transactions need of the deliverer's commit ledger (commit-ledger.ts). */
export interface TransactionLedger {
  /** A partition's progress (key: src/kafka/partition-key.ts); undefined once it is not this member's. */
  progressAt(key: string): PartitionProgress | undefined;
  /** Keeps the partitions out of the ledger's commits until the release (or `maxMs`); resolves once none is in a commit out. */
  hold(keys: readonly string[], maxMs: number): Promise<Hold>;
  finish(topic: string, partition: number, offset: string): number;
  /** A committed transaction named this point of the partition: no commit of its own is due if the ledger's is the same. */
  committedElsewhere(key: string, point: CommitPoint): void;
}

export interface KafkaTransactionsOptions {
  kafka: KafkaClient;
  /** The deliverer's group: the transactional id starts with it (`<group>.kafka-destinations.<random>`). */
  groupId: string;
  /** The deliverer's group member, as a transaction names it; undefined between generations. */
  member: () => TransactionGroupMember | undefined;
  ledger: TransactionLedger;
  logger: Logger;
  /** One write per transaction, one transaction at a time: for an event tried again alone after its shared transaction failed. */
  alone?: boolean;
  /** How long a write may take (its transaction's commit included) before it is given up (`delivery.timeout` and the transaction timeout). */
  deadlineMs: number;
}

/** One transaction's events so far, by partition; the writes waiting for its next request, its requests in order, and the ledger's holds of its partitions. */
interface Round {
  finishing: Map<string, { topic: string; partition: number; offsets: string[] }>;
  waiting: { records: readonly TopicRecords[]; done: (error?: unknown) => void }[];
  chain: Promise<void>;
  /** The ledger's hold of each partition of the round (one hold per request that named new ones). */
  holds: Map<string, Hold>;
  /** The last point each partition's TxnOffsetCommit named. */
  named: Map<string, CommitPoint>;
}

/** Thrown while the deliverer is between generations: the events are attempted again (never finished). */
export class NotAMemberError extends Error {
  readonly retriable = true;
  constructor(groupId: string) {
    super(`the deliverer is not a member of group ${groupId} at the moment (a rebalance); the transaction was not started and its events are attempted again`);
    this.name = 'NotAMemberError';
  }
}

/** A transaction refused because of a rebalance (this member fenced, or between generations): the partition's owner writes the events. */
export function refusedByRebalance(error: unknown): boolean {
  return isFenced(error) || error instanceof NotAMemberError;
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
    let joined: Round | undefined;
    try {
      await this.grouped.within(async (transaction) => {
        const member = this.options.member();
        if (member === undefined) throw new NotAMemberError(this.options.groupId);
        let round = this.rounds.get(transaction);
        if (round === undefined) this.rounds.set(transaction, (round = { finishing: new Map(), waiting: [], chain: Promise.resolve(), holds: new Map(), named: new Map() }));
        joined = round;
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
      if (joined !== undefined) this.ended(joined, true);
    } catch (error) {
      if (joined !== undefined) this.ended(joined, false);
      throw error;
    }
  }

  /**
   * The transaction of `round` ended (the first of its writes to learn it tells): a
   * committed one's events are finished in the ledger, and a partition whose ledger point
   * is then the one the transaction committed needs no plain commit; then its partitions
   * are released.
   */
  private ended(round: Round, committed: boolean): void {
    if (committed) {
      for (const { topic, partition, offsets } of round.finishing.values()) for (const offset of offsets) this.options.ledger.finish(topic, partition, offset);
      // NOTE: not after a hold let go by itself (a transaction past its deadline): a plain commit may have been stored after its offsets.
      for (const [key, point] of round.named) if (round.holds.get(key)?.held === true) this.options.ledger.committedElsewhere(key, point);
    }
    round.finishing.clear();
    round.named.clear();
    for (const hold of new Set(round.holds.values())) hold.release();
    round.holds.clear();
  }

  /** The writes waiting in `round`: their records, then the round's offsets; each told how it went. */
  private async flush(transaction: Transaction, member: TransactionGroupMember, round: Round): Promise<void> {
    const writes = round.waiting;
    round.waiting = [];
    try {
      await transaction.send(writes.flatMap((w) => w.records));
      const unheld = [...round.finishing.keys()].filter((key) => !round.holds.has(key));
      if (unheld.length > 0) {
        const hold = await this.options.ledger.hold(unheld, this.options.deadlineMs);
        for (const key of unheld) round.holds.set(key, hold);
      }
      const offsets = this.offsetsOf(round);
      await transaction.sendOffsets(member, offsets);
      for (const { topic, partition, offset, metadata } of offsets) round.named.set(partitionKey(topic, partition), { offset: offset.toString(), metadata: metadata ?? '' });
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
      const progress = this.options.ledger.progressAt(key);
      // Not this member's any more: the group refuses the offsets anyway; refused here, the transaction aborts.
      if (progress === undefined) throw new NotAMemberError(this.options.groupId);
      const { offset, metadata } = progress.commitPoint(Number.MAX_SAFE_INTEGER);
      const after = new PartitionProgress(offset, metadata);
      for (const done of offsets) after.finish(done);
      const point = after.commitPoint();
      return { topic, partition, offset: BigInt(point.offset), metadata: point.metadata };
    });
  }
}
