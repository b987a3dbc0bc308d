// The deliverer's commit ledger: when the partition stream's next commit goes out and
// what it names (stream-progress.ts holds each partition's progress), the tickets of
// completions, and whether the lanes may start more. Timers and bookkeeping;
// the stream sends the commits through its `CommitChannel`. The rule it keeps is in
// docs/webhooks.md#delivery-and-retries: offsets are committed below the oldest
// unfinished record, within about one commit round trip of completions, with the
// finished offsets above it in the commit's metadata; docs/kafka.md#the-deliverers-commits
// draws the protocol.
//
// The words of this module, once:
// - dirty: the partitions whose progress moved since their last commit (the stream's
//   StreamProgress); a partition turning dirty schedules a round.
// - round: one commit of every dirty partition, in slices of PARTITIONS_PER_COMMIT
//   sent together; one round at a time. A round starts `commitDelay` after the first
//   completion it covers, or at once after the round before it when asked to
//   (`commitSoon` while one was out: `roundAgainAtOnce`); after a failed round, after
//   `commitEveryMs`. `flush` is the last round before leaving, retried until done.
// - member: the stream joined its group and read the assignment's commits
//   (`CommitChannel.isMember`); no round starts otherwise, and `joined` starts one.
// - ticket: the number `finish` gives each completion, counting up.
//   `committedThrough()`: every completion whose ticket is at most this is committed,
//   or its partition is no longer this member's.
// - stalled (`commitsStalled`): finished records wait for a commit, and the last round
//   failed, or a request is out longer than `commitOverdueMs`, or they waited over
//   COMMIT_STALL_MS. A SIGKILL would redo all of them: lanes start no more.
// - account: one lane's share of the tickets (commit-account.ts).
//
// NOTE: what a lane finishes together (the events of one batch request) is one
// `finish` per record, in the same turn: one round takes them all. A record a lane
// holds back (a later event of a user whose earlier one waits for its retry) is simply
// not finished: the commit stays below it and the metadata lists what finished above.
import type { Logger } from 'pino';
import { isGenerationLost } from '../kafka/index.js';
import type { CommitPoint, PartitionProgress } from '../kafka/index.js';
import type { CommitChannel, StreamCommits } from './partition-stream.js';
import { commitUntilDone } from '../runtime/commit-until-done.js';

export interface CommitLedgerSettings {
  groupId: string;
  /** After a failed round (a rebalance, a broker away), how long before the next. */
  commitEveryMs: number;
  /** How long a round waits after the first completion it covers, at the least (commitDelay; default 5 ms). */
  commitDelayMs?: number;
}

/**
 * NOTE: how long finished records may wait for a commit before the role holds new work.
 * Commits follow completions within about 100 ms; past a second they are failing. Seen
 * in the chaos harness: a deliverer went on delivering for seconds with the broker down,
 * could commit none of it, was SIGKILLed, and its successor delivered all of it again
 * (docs/benchmarks.md#figures-behind-the-code).
 */
export const COMMIT_STALL_MS = 1_000;

/**
 * How long a commit may go unanswered before the role holds new work: four times the
 * broker's recent answer time (`typicalMs`), at least 150 ms, at most COMMIT_STALL_MS.
 * NOTE: the broker answers a commit within milliseconds, one of 1,000 partitions on a busy
 * machine within a few hundred (destinations bench, docs/benchmarks.md#figures-behind-the-code). One
 * that takes far longer than usual is stuck in retries: seen in the chaos harness, a
 * stopping broker left the commit under way unanswered, and busy lanes finished
 * hundreds more before COMMIT_STALL_MS held them.
 */
export function commitOverdueMs(typicalMs: number): number {
  return Math.min(COMMIT_STALL_MS, Math.max(150, 4 * typicalMs));
}

/**
 * Whether commits are stalled at `now`, with finished records waiting for one: the last
 * commit failed, a commit request is out for longer than its commitOverdueMs, or the
 * records waited over COMMIT_STALL_MS (no member to commit: a rejoin, a crash).
 * NOTE: seen in the chaos harness: commits refused in a rebalance, then a broker stop,
 * then a SIGKILL; the lanes had gone on for the second COMMIT_STALL_MS allows at the
 * rate of a backlog, and all of it was delivered again.
 */
export function commitsStalledAt(
  now: number,
  state: { commitOutSince: number | undefined; overdueAfterMs: number; failing: boolean; waitingSince: number | undefined },
): boolean {
  const { commitOutSince, overdueAfterMs, failing, waitingSince } = state;
  if (failing) return true;
  if (commitOutSince !== undefined && now - commitOutSince > overdueAfterMs) return true;
  return waitingSince !== undefined && now - waitingSince > COMMIT_STALL_MS;
}

const COMMIT_DELAY_CAP_MS = 100;

/**
 * How long the next round waits after the first completion it covers: `baseMs` (5 ms by
 * default), or 0.1 ms per partition the last round carried, up to 100 ms (or the base).
 * NOTE: a commit costs in proportion to its partitions (the broker writes one offset
 * record each), and at 1,000 busy
 * destinations every commit names about 1,000: one right after the other took a large share
 * of the deliverer's CPU per event (destinations bench, docs/benchmarks.md#figures-behind-the-code).
 * Spacing them as they grow keeps that cost per partition bounded, and the redo after a SIGKILL within about 100 ms of
 * completions (docs/webhooks.md#delivery-and-retries); few partitions still commit within a few milliseconds.
 */
export function commitDelay(lastCommitPartitions: number, baseMs = 5): number {
  return Math.max(baseMs, Math.min(COMMIT_DELAY_CAP_MS, lastCommitPartitions / 10));
}

/** The answer time a ledger assumes before its first round (commitOverdueMs). */
const FIRST_COMMIT_ANSWER_MS = 50;

/**
 * Partitions per commit request. A round of more goes out in slices, all at once (one
 * round trip, not one per slice). NOTE: measured on the client before the engine, whose
 * grouping by topic cost the square of a request's topics
 * (docs/benchmarks.md#figures-behind-the-code); the committer groups in
 * linear time, and the size stays until measured again.
 */
export const PARTITIONS_PER_COMMIT = 50;

/** Partitions kept out of the ledger's rounds (CommitLedger.hold): `held` until released, or until it let go by itself. */
export interface Hold {
  readonly held: boolean;
  release(): void;
}

export class CommitLedger implements StreamCommits {
  /** The next round's timer. */
  private timer: NodeJS.Timeout | undefined;
  /** The round under way (a flush too). */
  private round: Promise<void> | undefined;
  /** Asked for by commitSoon while a round was out: the next starts right after it. */
  private roundAgainAtOnce = false;
  /** Partitions in the last round: the next waits longer after a big one (commitDelay). */
  private lastRoundPartitions = 0;
  /** The commit request out now, since when (undefined: none). */
  private requestOut: { since: number } | undefined;
  /** How long the broker took to answer recent rounds (a moving average, ms). */
  private answerMs = FIRST_COMMIT_ANSWER_MS;
  /** The last round failed (a rebalance, the broker away); none went through since. */
  private failing = false;
  private lastProblem: string | undefined;
  /** Since when finished records wait for a commit (the oldest no round took yet); undefined: none. */
  private waitingSince: number | undefined;
  /** The last completion's ticket. */
  private lastTicket = 0;
  /** Completions up to this ticket are committed, while some partition is dirty (with none dirty, all are). */
  private committedTicket = 0;
  private waiters: (() => void)[] = [];
  private stopped = false;
  /** The partitions of the round's request out (its snapshot's), for `hold`. */
  private roundKeys: ReadonlyMap<string, number> | undefined;
  /** The last round found only held partitions dirty: none starts again before a release or a new completion. */
  private onlyHeld = false;
  /** Holds waiting for another's release. */
  private holdWaiters: (() => void)[] = [];

  constructor(
    private readonly settings: CommitLedgerSettings,
    private readonly channel: CommitChannel,
    private readonly logger: Logger,
  ) {
    channel.progress.listen((first) => this.dirtied(first));
  }

  private get dirtyCount(): number {
    return this.channel.progress.dirtyCount;
  }

  /** A partition's progress (keyed by partitionKey); what a transaction's offsets are made from (kafka-transactions.ts). */
  progressAt(key: string): PartitionProgress | undefined {
    return this.channel.progress.progressAt(key);
  }

  /**
   * Keeps `keys` out of the rounds until the returned release (called at most `maxMs`
   * later by itself). Resolves once no other hold has them and no request out names
   * them: a transaction's offsets of these partitions are then the last the coordinator
   * stores until the transaction ends (kafka-transactions.ts). NOTE: the coordinator
   * keeps the offset stored last; a commit stored after a transaction's TxnOffsetCommit
   * (plain, or another transaction's) wins when the transaction commits, with a point
   * that lacks its events (docs/kafka.md#transactions).
   */
  async hold(keys: readonly string[], maxMs: number): Promise<Hold> {
    const { progress } = this.channel;
    while (keys.some((key) => progress.isHeld(key))) await new Promise<void>((resolve) => this.holdWaiters.push(resolve));
    for (const key of keys) progress.hold(key);
    const hold = {
      held: true,
      release: () => {
        if (!hold.held) return;
        hold.held = false;
        clearTimeout(timer);
        for (const key of keys) progress.release(key);
        for (const wake of this.holdWaiters.splice(0)) wake();
        this.onlyHeld = false;
        this.scheduleRound();
      },
    };
    const timer = setTimeout(hold.release, maxMs);
    timer.unref();
    while (this.round !== undefined && keys.some((key) => this.roundKeys?.has(key) === true)) await this.round;
    return hold;
  }

  /** A committed transaction's offsets named `point` for the partition: clean, if that is its commit point (kafka-transactions.ts). */
  committedElsewhere(key: string, point: CommitPoint): void {
    this.channel.progress.committedAt(key, point);
  }

  // ---- The side of the role that finishes records.

  /**
   * The record at `offset` finished (its outcome is safe in Kafka); any order. Returns
   * the completion's ticket: it is committed once `committedThrough()` reaches it.
   */
  finish(topic: string, partition: number, offset: string): number {
    if (!this.channel.finish(topic, partition, offset)) return 0; // not ours any more: the next owner redoes it (a duplicate, never a loss)
    this.lastTicket += 1;
    return this.lastTicket;
  }

  /** Every completion whose ticket is at most this is committed (or no longer this member's). */
  committedThrough(): number {
    return this.dirtyCount === 0 ? this.lastTicket : this.committedTicket;
  }

  /** Finished records wait too long for a commit: lanes should start no more until it says false again. */
  commitsStalled(): boolean {
    if (this.dirtyCount === 0) return false; // nothing finished waits for a commit
    return commitsStalledAt(Date.now(), { commitOutSince: this.requestOut?.since, overdueAfterMs: commitOverdueMs(this.answerMs), failing: this.failing, waitingSince: this.waitingSince });
  }

  /** Many finished and wait: the next round starts now, not after its usual delay (commitDelay). */
  commitSoon(): void {
    if (this.round !== undefined) {
      this.roundAgainAtOnce = true;
      return;
    }
    if (this.timer === undefined) return; // nothing to commit yet, or not a member: the join commits
    clearTimeout(this.timer);
    this.timer = undefined;
    this.startRound();
  }

  /** Runs `callback` once, when the next round is answered (or failed), or the next join is done: commits may have moved. */
  whenCommitted(callback: () => void): void {
    this.waiters.push(callback);
  }

  // ---- The stream's side (StreamCommits).

  /** A partition's progress moved (StreamProgress): a round is due. */
  private dirtied(first: boolean): void {
    this.onlyHeld = false;
    if (first) {
      // Nothing was dirty: every completion so far is committed.
      this.waitingSince = Date.now();
      this.committedTicket = this.lastTicket;
    }
    this.scheduleRound();
  }

  /** The stream is a member with its commits read: commit what waits, and wake the lanes (partitions that went took their completions with them). */
  joined(): void {
    this.scheduleRound();
    this.wakeWaiters();
  }

  /**
   * Before leaving: waits for the round under way (at most a second: its broker may not
   * answer), then commits what finished, until done while
   * still a member (src/runtime/commit-until-done.ts).
   */
  async flush(): Promise<void> {
    await Promise.race([this.round?.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.dirtyCount === 0 || !this.channel.isMember()) return;
    // NOTE: marked as the round under way, so that no round starts beside it (commitSoon, a timer).
    const flushing = commitUntilDone(() => this.commitDirty(), {
      stillOwned: () => this.channel.isMember() && this.channel.canSend(),
      logger: this.logger,
      what: `group ${this.settings.groupId}`,
    }).catch((error: unknown) => this.roundFailed(error));
    this.round = flushing;
    await flushing;
    if (this.round === flushing) this.round = undefined;
  }

  /** The stream stops: no round starts by itself any more (a flush still commits). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  // ---- Rounds.

  /**
   * NOTE: commits follow completions as closely as the broker allows: a SIGKILL redoes
   * what finished but was not committed yet, so that window is kept to about one commit
   * round trip (a round starts `commitDelayMs` after a completion when none is under
   * way, else right after the one under way is answered) instead of a fixed period.
   * Nothing finished, no timer: an idle stream costs nothing.
   */
  private scheduleRound(delayMs = commitDelay(this.lastRoundPartitions, this.settings.commitDelayMs)): void {
    if (this.timer !== undefined || this.round !== undefined || this.stopped || this.onlyHeld) return;
    if (this.dirtyCount === 0 || !this.channel.isMember()) return; // the join schedules the next
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.startRound();
    }, delayMs);
  }

  private startRound(): void {
    if (this.round !== undefined || this.dirtyCount === 0 || !this.channel.isMember()) return;
    let retryMs: number | undefined;
    const current: Promise<void> = this.commitDirty()
      .catch((error: unknown) => {
        this.roundFailed(error);
        retryMs = this.settings.commitEveryMs;
      })
      .finally(() => {
        if (this.round === current) this.round = undefined;
        const atOnce = this.roundAgainAtOnce;
        this.roundAgainAtOnce = false;
        this.scheduleRound(retryMs ?? (atOnce ? 0 : undefined));
        this.wakeWaiters();
      });
    this.round = current;
  }

  /** One commit of every partition that moved. */
  private async commitDirty(): Promise<void> {
    if (!this.channel.canSend()) return;
    const snapshotAt = Date.now();
    const snapshotTicket = this.lastTicket;
    const { offsets, changes } = this.channel.progress.snapshot();
    this.onlyHeld = offsets.length === 0 && this.dirtyCount > 0;
    if (offsets.length === 0) return;
    this.lastRoundPartitions = offsets.length;
    this.roundKeys = changes;
    const acknowledged = this.channel.acknowledged();
    const slices: Promise<void>[] = [];
    for (let i = 0; i < offsets.length; i += PARTITIONS_PER_COMMIT) slices.push(this.channel.send(offsets.slice(i, i + PARTITIONS_PER_COMMIT)));
    const out = { since: snapshotAt };
    this.requestOut = out;
    // NOTE: every slice settles before the round ends (allSettled, not all): a slice still
    // waiting for its answer after another failed would land after the next round's
    // commit and move its partitions back to older offsets.
    const settled = await Promise.allSettled(slices);
    if (this.roundKeys === changes) this.roundKeys = undefined;
    if (this.requestOut === out) this.requestOut = undefined;
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    this.answerMs = 0.8 * this.answerMs + 0.2 * (Date.now() - snapshotAt);
    if (this.channel.acknowledged() - acknowledged < slices.length) throw Object.assign(new Error(`offsets of group ${this.settings.groupId} not committed: the consumer is not running`), { retriable: true });
    this.channel.progress.committed(changes);
    // What is still dirty finished after the snapshot this round took.
    this.waitingSince = this.dirtyCount > 0 ? snapshotAt : undefined;
    this.committedTicket = Math.max(this.committedTicket, snapshotTicket);
    this.failing = false;
    if (this.lastProblem !== undefined) {
      this.logger.info({ groupId: this.settings.groupId }, 'offsets committed again');
      this.lastProblem = undefined;
    }
  }

  private roundFailed(error: unknown): void {
    this.failing = true;
    // NOTE: a commit refused because the group rebalances is no error: the partitions
    // stay dirty and are committed in the next generation, or the next owner redoes at
    // most what was in flight (the metadata of the last commit lists the rest).
    const problem = error instanceof Error ? error.message : String(error);
    if (isGenerationLost(error)) {
      this.logger.debug({ err: error }, 'commit refused by a rebalance; committing again once rejoined');
    } else if (problem !== this.lastProblem) {
      this.logger.warn({ err: error, groupId: this.settings.groupId }, 'could not commit finished offsets; trying again');
    }
    this.lastProblem = problem;
  }

  private wakeWaiters(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}
