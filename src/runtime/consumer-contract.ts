// What the ordered consumer (consumer.ts) promises a role.
import type { InboundRecord, TopicRecords } from '../kafka/index.js';
import type { GroupedTransactions } from './grouped-transactions.js';

/** One fetched batch of one partition, in offset order. */
export interface RecordBatch {
  readonly topic: string;
  readonly partition: number;
  readonly records: readonly InboundRecord[];
  /**
   * Every record up to and including `offset` is finished: its writes are
   * acknowledged, so it is committed when the batch ends.
   */
  markDone(offset: string): Promise<void>;
  /** False once the consumer stops or the partition was taken away (a rebalance, a failed batch). */
  stillOwned(): boolean;
  /**
   * With `commit: transaction` only: writes the role's output for this batch inside the
   * transaction that also commits the batch's offsets (docs/kafka.md#transactions).
   * Resolves once acknowledged; read-committed readers see the records once it commits.
   */
  send?(records: readonly TopicRecords[]): Promise<void>;
  /**
   * With `commit: transaction` only: `effect` runs once the batch's transaction ended,
   * with whether it committed (what a role may only believe once its output is
   * committed: the router's memory of routed calls).
   */
  afterCommit?(effect: (committed: boolean) => void): void;
}

export type BatchHandler = (batch: RecordBatch) => Promise<void>;

export interface ConsumerEvents {
  /** The member joined (again): its partitions per topic. */
  onJoin?(assignment: Record<string, number[]>, memberId: string): void;
  /** The consumer failed; with `restart` it joins the group again shortly (membership.ts), else it is stopped for good. */
  onCrash?(error: Error, restart: boolean): void;
  onStop?(): void;
  /** A fetch came back (the consumer is reading). */
  onFetch?(): void;
}

/**
 * When the finished work is committed:
 * - `'batch-end'`: once the batch ends, what was marked done (retried until done);
 * - `'none'`: never (a group of its own that only follows a topic);
 * - `'transaction'`: the batch's writes (RecordBatch.send) and its offsets in one Kafka
 *   transaction, shared with the other batches in hand (docs/kafka.md#transactions).
 */
export type CommitPolicy = { kind: 'batch-end' } | { kind: 'none' } | { kind: 'transaction'; transactions: GroupedTransactions };

export interface ConsumerSettings {
  groupId: string;
  topics: readonly string[];
  /** Where a partition without a commit starts: its beginning, or its end. */
  fromBeginning: boolean;
  commit: CommitPolicy;
  /** How much one fetch takes from one partition. */
  maxBytesPerPartition?: number;
  /** What the fetched records of all partitions may hold together (the fetcher's budget). */
  maxBytes?: number;
  /** How long an idle fetch waits on the broker; also bounds how long stop() waits for it. */
  maxWaitTimeInMs?: number;
  /** The broker answers a fetch that waits for records once it holds this much for it, or after `maxWaitTimeInMs` (default 1). */
  minBytes?: number;
  /** Partitions whose batches run at once (each partition's batches still run one after the other). Default 1. */
  partitionsConsumedConcurrently?: number;
}


export interface RunningConsumer {
  /**
   * Why the member is not ready although joined: its latest assignment held partitions
   * of topics it does not read (a group id shared with another deployment;
   * foreign-assignment.ts). Undefined while the assignment is its own.
   */
  assignmentProblem(): string | undefined;
  /** Stops fetching; resolves once the batches in hand are finished (and committed). */
  stop(): Promise<void>;
  /** Stops (if not yet) and leaves the group. */
  disconnect(): Promise<void>;
}
