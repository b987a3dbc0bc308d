// Work of several callers in one Kafka transaction at a time (docs/kafka.md#transactions):
// the batches in hand share a transaction, so that its cost (AddPartitionsToTxn,
// TxnOffsetCommit, EndTxn, the markers) is paid once per group of batches, not per batch.
import type { Transaction, TransactionalProducer } from '../kafka/index.js';

export interface GroupedTransactionsOptions {
  /** How long a transaction takes in new work after it opened; later work waits for the next one. Default 100 ms. */
  maxOpenMs?: number;
}

interface Round {
  transaction: Promise<Transaction>;
  holders: number;
  accepting: boolean;
  failure: unknown;
  ended: Promise<void>;
  end(error?: unknown): void;
}

/**
 * Work of several callers (the router's batches in hand) in one transaction at a time:
 * `within(work)` runs `work` inside the open transaction (or the next one), and
 * resolves once that transaction committed, or rejects once it aborted (any one
 * work's failure aborts the whole transaction: every work in it rejects and is
 * redone by its caller). A transaction stops taking new work once one of its works
 * finished, or `maxOpenMs` after it opened; it commits once all its works finished.
 */
export class GroupedTransactions {
  private current: Round | undefined;
  /** The end of the last round (the producer holds one transaction at a time). */
  private previous: Promise<void> = Promise.resolve();
  private readonly maxOpenMs: number;

  constructor(
    private readonly producer: TransactionalProducer,
    options: GroupedTransactionsOptions = {},
  ) {
    this.maxOpenMs = options.maxOpenMs ?? 100;
  }

  async within<T>(work: (transaction: Transaction) => Promise<T>): Promise<T> {
    const round = this.join();
    let result: T | undefined;
    try {
      const transaction = await round.transaction;
      result = await work(transaction);
    } catch (error) {
      round.failure ??= error;
    } finally {
      round.accepting = false;
      round.holders -= 1;
      if (round.holders === 0) void this.finish(round);
    }
    await round.ended;
    return result as T;
  }

  private join(): Round {
    const open = this.current;
    if (open !== undefined && open.accepting) {
      open.holders += 1;
      return open;
    }
    let end!: (error?: unknown) => void;
    const ended = new Promise<void>((resolve, reject) => {
      end = (error) => (error === undefined ? resolve() : reject(error));
    });
    const before = this.previous;
    const round: Round = {
      transaction: before.then(() => this.producer.begin()),
      holders: 1,
      accepting: true,
      failure: undefined,
      ended,
      end,
    };
    // Every work awaits `ended`; this handler only keeps an unobserved rejection quiet.
    ended.catch(() => undefined);
    round.transaction.catch(() => undefined);
    this.previous = ended.catch(() => undefined);
    this.current = round;
    setTimeout(() => {
      round.accepting = false;
    }, this.maxOpenMs).unref();
    return round;
  }

  private async finish(round: Round): Promise<void> {
    if (this.current === round) this.current = undefined;
    let transaction: Transaction;
    try {
      transaction = await round.transaction;
    } catch (error) {
      round.end(round.failure ?? error);
      return;
    }
    if (round.failure !== undefined) {
      await transaction.abort().catch(() => undefined);
      round.end(round.failure);
      return;
    }
    try {
      await transaction.commit();
      round.end();
    } catch (error) {
      round.end(error);
    }
  }
}
