// A destination lane's share of the deliverer's commits: the tickets of its completions
// not known to be committed yet, and its bound (docs/webhooks.md#delivery-and-retries:
// what a SIGKILL may redo). `mayStart()`: commits keep up and fewer than the bound of the
// lane's completions wait; at half the bound the account asks for a commit at once.
// `whenOpen(callback)`: a lane that may not start is called back when the next commit
// round is answered (or failed), which is when it may again.

/** What an account needs of the partition stream's commit ledger (src/delivery/commit-ledger.ts). */
export interface CommitTickets {
  /** The record finished: its completion's ticket (committed once committedThrough reaches it). */
  finish(topic: string, partition: number, offset: string): number;
  committedThrough(): number;
  commitsStalled(): boolean;
  commitSoon(): void;
  whenCommitted(callback: () => void): void;
}

/**
 * While a lane waits for a commit, when it looks again should no round's answer call it
 * back: a safety net, as every change that lets a lane go on ends a round or a join.
 */
const COMMIT_RECHECK_MS = 1_000;

export class CommitAccount {
  /** The tickets of this lane's completions, oldest first, from `ticketHead` not known committed. */
  private tickets: number[] = [];
  private ticketHead = 0;
  /** Waits for a round's answer (whenCommitted). */
  private waitingForAnswer = false;
  /** Looks again should no round's answer call back first. */
  private recheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly ledger: CommitTickets,
    private readonly bound: number,
  ) {}

  /** The record at `offset` finished: its outcome is safe in Kafka. Any order. */
  finish(topic: string, partition: number, offset: string): void {
    this.tickets.push(this.ledger.finish(topic, partition, offset));
    if (this.uncommitted() >= this.bound / 2) this.ledger.commitSoon();
  }

  /** Whether the lane may start another delivery: commits keep up, and fewer than its bound of its completions wait for one. */
  mayStart(): boolean {
    return !this.ledger.commitsStalled() && this.uncommitted() < this.bound;
  }

  /** Runs `callback` once, when the lane may start again (or COMMIT_RECHECK_MS later should no answer come); asked again while waiting, it waits once. */
  whenOpen(callback: () => void): void {
    if (!this.waitingForAnswer) {
      this.waitingForAnswer = true;
      this.ledger.whenCommitted(() => {
        this.waitingForAnswer = false;
        callback();
      });
    }
    this.recheck ??= setTimeout(() => {
      this.recheck = undefined;
      this.waitingForAnswer = false;
      callback();
    }, COMMIT_RECHECK_MS);
  }

  /** The lane stopped: no more call backs. */
  close(): void {
    clearTimeout(this.recheck);
    this.recheck = undefined;
  }

  /** This lane's completions not known to be committed. */
  private uncommitted(): number {
    const through = this.ledger.committedThrough();
    const { tickets } = this;
    let head = this.ticketHead;
    while (head < tickets.length && tickets[head]! <= through) head += 1;
    if (head === tickets.length) {
      this.tickets = [];
      head = 0;
    } else if (head > 1024) {
      this.tickets = tickets.slice(head);
      head = 0;
    }
    this.ticketHead = head;
    return this.tickets.length - head;
  }
}
