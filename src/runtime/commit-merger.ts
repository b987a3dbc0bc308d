// The commits of batches that finish close together, sent as one request: one commit
// request in flight per consumer; a commit leaves at the end of the event loop's turn
// it was asked for in, with every other commit asked for in that turn or while the
// request before was in flight (the newest offset of each partition). Each caller still resolves only
// once a request carrying its offset was answered, so "committed when the batch's
// commit resolved" holds as before; only the number of requests changes.
//
// NOTE: with one commit per batch, a router keeping up with a steady stream committed
// once per partition per fetch, as many commit requests as produce requests (gateway
// bench, steady row; figures in docs/benchmarks.md#figures-behind-the-code).
import { partitionKey } from '../kafka/index.js';

/** A partition's next offset to read, as the client commits it. */
export interface PartitionCommit {
  topic: string;
  partition: number;
  offset: bigint;
  leaderEpoch: number;
}

interface Waiter {
  commit: PartitionCommit;
  resolve(): void;
  reject(error: unknown): void;
}

export class CommitMerger {
  private waiting: Waiter[] = [];
  private inFlight = false;
  private flushScheduled = false;

  /** `send` commits the offsets in one request; it fails as a whole. */
  constructor(private readonly send: (commits: PartitionCommit[]) => Promise<void>) {}

  /** Resolves once a request that carried `commit` (or a later offset of its partition) was answered; rejects with that request's error. */
  commit(commit: PartitionCommit): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ commit, resolve, reject });
      // NOTE: batches whose records were acknowledged by one merged produce request ask
      // for their commits in the same turn (src/kafka/producer.ts): they leave as one.
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => {
          this.flushScheduled = false;
          this.flush();
        });
      }
    });
  }

  private flush(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    const taken = this.waiting;
    this.waiting = [];
    this.inFlight = true;
    this.send(newestPerPartition(taken.map((w) => w.commit))).then(
      () => this.settle(taken, undefined),
      (error: unknown) => this.settle(taken, error ?? new Error('commit failed')),
    );
  }

  private settle(taken: readonly Waiter[], error: unknown): void {
    this.inFlight = false;
    for (const waiter of taken) {
      if (error === undefined) waiter.resolve();
      else waiter.reject(error);
    }
    this.flush();
  }
}

/** The newest commit of each partition, in the order the partitions first appear. */
export function newestPerPartition(commits: readonly PartitionCommit[]): PartitionCommit[] {
  const newest = new Map<string, PartitionCommit>();
  for (const commit of commits) {
    const key = partitionKey(commit.topic, commit.partition);
    const seen = newest.get(key);
    if (seen === undefined || commit.offset > seen.offset) newest.set(key, commit);
  }
  return [...newest.values()];
}
