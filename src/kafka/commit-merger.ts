// The commits of batches that finish close together, sent as one request: one commit
// request in flight per consumer; a commit leaves at the end of the event loop's turn
// it was asked for in, with every other commit asked for in that turn or while the
// request before was in flight (the newest offset of each partition). Each caller still resolves only
// once a request carrying its offset was answered, so "committed when the batch's
// commit resolved" holds as before; only the number of requests changes.
//
// NOTE: with one commit per batch, a router keeping up with a steady stream committed
// once per partition per fetch, as many commit requests as produce requests (gateway
// bench, steady row; figures in docs/architecture.md#measured-figures-behind-the-code).
// `minIntervalMs` spaces the requests further: a request leaves at least that long
// after the one before it left, carrying everything asked for meanwhile; a commit asked
// for as `urgent` does not wait for the spacing (only for the request in flight).

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
  /** When the last request left (Date.now()); the next waits until `minIntervalMs` after it. */
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private spacingTimer: NodeJS.Timeout | undefined;
  /** Stopping: what waits leaves at once, whatever the spacing. */
  private hurried = false;
  /** A commit asked for as urgent waits: the next request leaves without the spacing. */
  private urgentWaiting = false;
  private recordsWaiting = 0;

  /** The records of the commits not sent yet (as their callers counted them). */
  waitingRecords(): number {
    return this.recordsWaiting;
  }

  /** `send` commits the offsets in one request; it fails as a whole. */
  constructor(
    private readonly send: (commits: PartitionCommit[]) => Promise<void>,
    private readonly options: { minIntervalMs?: number } = {},
  ) {}

  /** From now on, commits leave without waiting for the spacing (the consumer stops: its last commits should not wait). */
  hurry(): void {
    this.hurried = true;
    clearTimeout(this.spacingTimer);
    this.spacingTimer = undefined;
    this.flush();
  }

  /**
   * Resolves once a request that carried `commit` (or a later offset of its partition) was
   * answered; rejects with that request's error. `records`: how many records it commits
   * (waitingRecords counts them); `urgent`: it leaves with the next request whatever the
   * spacing.
   */
  commit(commit: PartitionCommit, records = 0, urgent = false): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ commit, resolve, reject });
      this.recordsWaiting += records;
      if (urgent && this.spacingTimer !== undefined) {
        clearTimeout(this.spacingTimer);
        this.spacingTimer = undefined;
      }
      if (urgent) this.urgentWaiting = true;
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
    if (this.inFlight || this.waiting.length === 0 || this.spacingTimer !== undefined) return;
    const spacingLeft = this.hurried || this.urgentWaiting ? 0 : this.lastSentAt + (this.options.minIntervalMs ?? 0) - Date.now();
    if (spacingLeft > 0) {
      this.spacingTimer = setTimeout(() => {
        this.spacingTimer = undefined;
        this.flush();
      }, spacingLeft);
      return;
    }
    this.lastSentAt = Date.now();
    this.urgentWaiting = false;
    this.recordsWaiting = 0;
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
    const key = `${commit.topic}:${commit.partition}`;
    const seen = newest.get(key);
    if (seen === undefined || commit.offset > seen.offset) newest.set(key, commit);
  }
  return [...newest.values()];
}
