// The deliverer's consumer, built on the port's consumer engine (docs/kafka.md#the-consumer-engine):
// fetching decoupled from completion. Where the ordered consumer (src/runtime/consumer.ts)
// hands a batch over and waits for it, the stream hands the records over at once (the
// lanes queue them), fetches on, and is told when each record finished, in any order
// (stream-progress.ts); when commits go out is the commit ledger's (`StreamCommits`,
// commit-ledger.ts). The stream keeps the group membership and the assignment (each
// partition's progress read from its last commit and metadata, so a member that takes a
// partition over skips what finished and a crash redoes only what was in flight), the
// fetch, the hand-over, and the pause and resume of single partitions (a full queue, a
// retry not yet due) without stopping the fetch loop.
import type { Logger } from 'pino';
import { DEFAULT_BUFFER_BUDGET } from '../config/schema.js';
import { GroupReader, PartitionProgress, assignedTopics, committedWithin, heldBytes as heldBytesOf, partitionKey as keyOf, splitPartitionKey as splitKey } from '../kafka/index.js';
import type { Generation, InboundRecord, KafkaAdmin, KafkaClient, TransactionGroupMember } from '../kafka/index.js';
import { ForeignAssignment } from '../runtime/foreign-assignment.js';
import { StreamProgress } from './stream-progress.js';
import type { PartitionCommit } from './stream-progress.js';
import { findOlderCommits, logCarried } from '../runtime/group-upgrade.js';

/** What the role does with the records; both calls are synchronous (nothing may block the fetch loop). */
export interface StreamHandler {
  /**
   * Fetched records of one partition, in offset order, none finished or handed over
   * before. False: nobody takes the topic now (its lane retired, the next not made yet):
   * the records are not handed over, and the partition is fetched again from its first
   * unfinished offset at the next assignment or revokeTopic.
   */
  accept(records: readonly InboundRecord[]): boolean;
  /**
   * The partition is no longer this member's (a rebalance gave it to another, or it left
   * the subscription): drop its records not started yet. Returns the offsets still
   * running: they are not handed over again should the partition come back.
   */
  revoke(topic: string, partition: number): Iterable<string>;
}

/** The stream's side a role's commit ledger commits through. */
export interface CommitChannel {
  /** Each assigned partition's progress, and which moved since their last commit. */
  readonly progress: StreamProgress;
  /** The record at `offset` finished: its bytes leave the budget, its progress moves; false when the partition is not tracked. */
  finish(topic: string, partition: number, offset: string): boolean;
  /** Joined the group, its assignment's commits read: commits may go out. */
  isMember(): boolean;
  /** A generation holds, so a commit can be sent now. */
  canSend(): boolean;
  /** One commit request; settles once the broker answered. */
  send(offsets: PartitionCommit[]): Promise<void>;
  /** How many commit requests the broker has acknowledged so far (one per request). */
  acknowledged(): number;
}

/** What the stream asks of the role's commit ledger. */
export interface StreamCommits {
  /** Joined, the assignment's commits read: commit what waits. */
  joined(): void;
  /** The generation ends: commit what finished while it still holds. */
  flush(): Promise<void>;
  /** The stream stops: no commit starts by itself any more (a flush still commits). */
  stop(): void;
}

/** What the stream knows when it picks a fetch's wait on the broker. */
export interface FetchWaitState {
  now: number;
  /** When a fetch last brought records (epoch ms). */
  lastRecordsAt: number;
  /** When each paused partition is expected to resume (undefined: any moment). */
  resumeTimes: Iterable<number | undefined>;
}

export interface PartitionStreamSettings {
  groupId: string;
  /** Where the committed offsets and their metadata are read on each assignment. */
  admin: KafkaAdmin;
  /** How long a fetch that polls partitions at their end may wait on the broker. */
  fetchWaitMs(state: FetchWaitState): number;
  maxBytesPerPartition?: number;
  /**
   * The bytes of fetched records the stream may hold at once, handed over and not
   * finished (fetch-plan.ts shares it among the partitions). Default `delivery.bufferBudget`'s (docs/operations.md#memory).
   */
  bufferBudgetBytes?: number;
  /**
   * The groups that consumed `topic` before this one (older versions' names), most
   * recent first: a partition with no commit in this group starts from the commit of
   * the first of them that has one, with its metadata (an upgrade keeps its progress).
   */
  legacyGroupOf?: (topic: string) => readonly string[];
}

export interface StreamEvents {
  onJoin?(assignment: Record<string, number[]>): void;
  onCrash?(error: Error, restart: boolean): void;
}

export interface PartitionStream<L extends StreamCommits = StreamCommits> {
  /** Where the role says what finished, and learns whether commits keep up (made by the role: createPartitionStream). */
  readonly ledger: L;
  /** Joins the group on `topics` (resolves once joined). */
  start(topics: readonly string[]): Promise<void>;
  /**
   * Commits what finished, leaves, and joins again on `topics` (none: stays out of the
   * group until given some). Records handed over stay with the role; those of
   * partitions that do not come back are revoked.
   */
  resubscribe(topics: readonly string[]): Promise<void>;
  /**
   * Fetches nothing more of the partition until `resume`. `resumeAt` (epoch ms): when the
   * role expects to resume it (a retry due then); without it, any moment (room in a queue).
   */
  pause(topic: string, partition: number, resumeAt?: number): void;
  resume(topic: string, partition: number): void;
  /**
   * The record at `offset` was handed over and will not finish here (its lane stopped
   * after a failed write): it is fetched again (from the first unfinished offset).
   */
  release(topic: string, partition: number, offset: string): void;
  /**
   * The role dropped the queued records of `topic` (a lane replaced): each partition's
   * records still running are asked for again (StreamHandler.revoke); the rest is
   * handed over again after the next join, which fetches from the commit.
   */
  revokeTopic(topic: string): void;
  /** Joined, and neither crashed nor asked to join on other topics (resubscribe) since. */
  joined(): boolean;
  /**
   * Why the member is not ready although joined: its latest assignment held partitions
   * of topics it does not read (a group id shared with another deployment;
   * src/runtime/foreign-assignment.ts). Undefined while the assignment is its own.
   */
  assignmentProblem(): string | undefined;
  /**
   * When records were last fetched (epoch ms); undefined while that does not tell whether
   * records arrived: not joined, or a partition paused (its new records are not fetched).
   */
  recordsMovedAt(): number | undefined;
  /** The records handed over and not finished, and their bytes as the budget counts them. */
  buffered(): { records: number; bytes: number };
  /** Positions reset because retention removed records before they were read (each logged). */
  resets(): number;
  /**
   * This member as a transaction names it when it commits the group's offsets (KIP-447:
   * a transaction of an older generation is refused); undefined between generations.
   */
  transactionMember(): TransactionGroupMember | undefined;
  /** Commits what finished (until done while still a member), then leaves the group. */
  stop(): Promise<void>;
}

/** A partition stream; `ledger` makes the role's commit ledger on the stream's channel. */
export function createPartitionStream<L extends StreamCommits>(
  client: KafkaClient,
  settings: PartitionStreamSettings,
  handler: StreamHandler,
  events: StreamEvents,
  logger: Logger,
  ledger: (channel: CommitChannel) => L,
): PartitionStream<L> {
  return new EnginePartitionStream(client, settings, handler, events, logger, ledger);
}

/** The most one partition brings in one fetch answer, and one answer in all. */
const MAX_PARTITION_BYTES = 1024 * 1024;
const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** Past this many offsets, a range lost to retention is skipped whole, records in flight in it included (counted and logged). */
const MAX_GAP_WALK = 1_000_000n;
/** How often partitions at their end are asked for while others bring records (fetch-plan.ts). */
const EMPTY_POLL_MS = 200;

class EnginePartitionStream<L extends StreamCommits> implements PartitionStream<L> {
  readonly ledger: L;
  private readonly reader: GroupReader;
  private readonly progress: StreamProgress;
  /** Partitions of the current assignment (their progress is in `progress` once loaded). */
  private assignment = new Set<string>();
  /** Offsets handed to the role and not finished (queued or running), per partition, with their bytes. */
  private readonly handed = new Map<string, Map<string, number>>();
  private handedBytes = 0;
  private handedRecords = 0;
  /** Partitions whose records nobody took (StreamHandler.accept): not fetched until the next assignment or revokeTopic. */
  private readonly orphaned = new Set<string>();
  /** Paused partitions, with when the role expects to resume each (undefined: any moment). */
  private readonly paused = new Map<string, number | undefined>();
  /** The keys each topic has had in `handed` or `paused`: revokeTopic reads one topic's. */
  private readonly keysOfTopic = new Map<string, Set<string>>();
  /** When a fetch last brought records (epoch ms). */
  private lastRecordsAt = Date.now();
  private member = false;
  /** Asked to join again on other topics (resubscribe), not joined since: not `joined()`, though the old generation may still commit. */
  private rejoining = false;
  private stopping = false;
  private resetCount = 0;
  /** Commits the broker acknowledged. */
  private acknowledgedCommits = 0;
  private readonly foreign: ForeignAssignment;
  /** Older groups this principal may not read (src/runtime/group-upgrade.ts): not asked again. */
  private readonly unreadableGroups = new Set<string>();
  /** Resolves the start() waiting for the first assignment. */
  private firstJoin: { resolve: () => void; promise: Promise<void> };
  private troubleSince: number | undefined;

  constructor(
    client: KafkaClient,
    private readonly settings: PartitionStreamSettings,
    private readonly handler: StreamHandler,
    private readonly events: StreamEvents,
    private readonly logger: Logger,
    makeLedger: (channel: CommitChannel) => L,
  ) {
    this.foreign = new ForeignAssignment(settings.groupId, logger);
    let resolve: () => void = () => undefined;
    this.firstJoin = { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
    const budget = settings.bufferBudgetBytes ?? DEFAULT_BUFFER_BUDGET;
    this.reader = new GroupReader(
      client,
      {
        groupId: settings.groupId,
        rebalanceTimeoutMs: 60_000,
        fetch: committedWithin(budget, { partitionBytes: settings.maxBytesPerPartition ?? MAX_PARTITION_BYTES, requestBytes: MAX_REQUEST_BYTES, pollWaitMs: () => this.fetchWaitMs(), emptyPollMs: EMPTY_POLL_MS }),
      },
      {
        membership: {
          assigned: (generation) => this.onAssigned(generation),
          revoking: () => this.onRevoking(),
          trouble: (error, retryInMs) => this.onTrouble(error, retryInMs),
        },
        fetch: {
          records: (topic, partition, records, from, next) => this.onRecords(topic, partition, records, from, next),
          reset: (topic, partition, from, to) => this.onReset(topic, partition, from, to),
          trouble: (error) => this.logger.debug({ err: error, groupId: this.settings.groupId }, 'fetch failed; asking the leaders again'),
        },
      },
      logger,
    );
    const { groupId } = settings;
    this.progress = new StreamProgress((key) => this.assignment.has(key));
    this.ledger = makeLedger({
      progress: this.progress,
      finish: (topic, partition, offset) => {
        const key = keyOf(topic, partition);
        this.finished(key, topic, partition, offset);
        return this.progress.finish(key, offset);
      },
      isMember: () => this.member,
      canSend: () => this.reader.membership.current() !== undefined,
      send: async (offsets) => {
        const generation = this.reader.membership.current();
        if (generation === undefined) throw Object.assign(new Error(`offsets of group ${groupId} not committed: between generations`), { retriable: true });
        await this.reader.commit(generation, offsets);
        this.acknowledgedCommits += 1;
      },
      acknowledged: () => this.acknowledgedCommits,
    });
  }

  start(topics: readonly string[]): Promise<void> {
    this.reader.membership.subscribe(topics);
    return this.firstJoin.promise;
  }

  async resubscribe(topics: readonly string[]): Promise<void> {
    if (topics.length === 0) {
      await this.reader.membership.leave();
      return;
    }
    // Not joined from now on: the generation that does not read these topics is over,
    // though its revoke (a last commit) is still to run.
    this.rejoining = true;
    this.reader.membership.subscribe(topics);
  }

  pause(topic: string, partition: number, resumeAt?: number): void {
    const key = keyOf(topic, partition);
    this.paused.set(key, resumeAt);
    this.remember(topic, key);
    this.reader.fetcher.pause(topic, partition);
  }

  resume(topic: string, partition: number): void {
    if (!this.paused.delete(keyOf(topic, partition))) return;
    this.reader.fetcher.resume(topic, partition);
  }

  /** Files `key` under its topic (see keysOfTopic). */
  private remember(topic: string, key: string): void {
    let keys = this.keysOfTopic.get(topic);
    if (keys === undefined) this.keysOfTopic.set(topic, (keys = new Set()));
    keys.add(key);
  }

  revokeTopic(topic: string): void {
    const keys = this.keysOfTopic.get(topic) ?? [];
    for (const key of keys) {
      const handed = this.handed.get(key);
      if (handed === undefined) continue;
      const { partition } = splitKey(key);
      const running = new Set(this.handler.revoke(topic, partition));
      for (const [offset, bytes] of handed) {
        if (running.has(offset)) continue;
        handed.delete(offset);
        this.letGo(topic, partition, bytes);
      }
      // The dropped records are fetched again, from the first unfinished offset.
      const progress = this.progress.progressAt(key);
      if (progress !== undefined) this.reader.fetcher.seek(topic, partition, BigInt(progress.next));
    }
    for (const key of keys) {
      if (!this.orphaned.delete(key)) continue;
      const { partition } = splitKey(key);
      const progress = this.progress.progressAt(key);
      if (progress !== undefined) this.reader.fetcher.seek(topic, partition, BigInt(progress.next));
      if (!this.paused.has(key)) this.reader.fetcher.resume(topic, partition);
    }
    // NOTE: the pauses were the dropped lane's (full, a retry not due); the lane that
    // takes the topic over decides afresh, and a pause left behind would stall it for good.
    for (const key of keys) if (this.paused.has(key)) this.resume(topic, splitKey(key).partition);
  }

  release(topic: string, partition: number, offset: string): void {
    const key = keyOf(topic, partition);
    const handed = this.handed.get(key);
    const bytes = handed?.get(offset);
    if (handed === undefined || bytes === undefined) return;
    handed.delete(offset);
    this.letGo(topic, partition, bytes);
    // Fetched past it already: go back to the first unfinished offset (the finished and
    // handed-over records after it are skipped again).
    const progress = this.progress.progressAt(key);
    if (progress !== undefined) this.reader.fetcher.seek(topic, partition, BigInt(progress.next));
  }

  joined(): boolean {
    return this.member && !this.rejoining;
  }

  transactionMember(): TransactionGroupMember | undefined {
    const generation = this.reader.membership.current();
    if (generation === undefined || !this.member) return undefined;
    return { groupId: this.settings.groupId, generationId: generation.id, memberId: generation.memberId, groupInstanceId: null, coordinator: generation.coordinator };
  }

  assignmentProblem(): string | undefined {
    return this.foreign.notReady();
  }

  recordsMovedAt(): number | undefined {
    return this.joined() && this.paused.size === 0 ? this.lastRecordsAt : undefined;
  }

  buffered(): { records: number; bytes: number } {
    return { records: this.handedRecords, bytes: this.handedBytes };
  }

  resets(): number {
    return this.resetCount;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.firstJoin.resolve();
    this.ledger.stop();
    await this.reader.close();
  }

  /** The wait of a fetch that polls partitions at their end (the role's choice); new records end it at once. */
  private fetchWaitMs(): number {
    return this.settings.fetchWaitMs({ now: Date.now(), lastRecordsAt: this.lastRecordsAt, resumeTimes: this.paused.values() });
  }

  private onTrouble(error: Error, retryInMs: number): void {
    this.troubleSince ??= Date.now();
    this.events.onCrash?.(error, true);
    this.logger.debug({ err: error, groupId: this.settings.groupId, retryInMs }, 'consumer group join or heartbeat failed; trying again');
  }

  /** The generation ends: stop fetching, commit what finished while it still holds. */
  private async onRevoking(): Promise<void> {
    this.reader.fetcher.clear();
    await this.ledger.flush();
    this.member = false;
  }

  /** A new assignment: revoke what went, read the commits of what came, fetch from there. */
  private onAssigned(generation: Generation): void {
    this.troubleSince = undefined;
    this.orphaned.clear();
    this.foreign.joined([...generation.foreignTopics]);
    const next = new Set<string>();
    const assignment: Record<string, number[]> = {};
    for (const [topic, partitions] of generation.assignment) {
      assignment[topic] = [...partitions];
      for (const p of partitions) next.add(keyOf(topic, p));
    }
    let gone = 0;
    for (const key of this.assignment) {
      if (next.has(key)) continue;
      this.forget(key);
      gone += 1;
    }
    this.logger.debug({ groupId: this.settings.groupId, generation: generation.id, partitions: next.size, gone, kept: this.assignment.size - gone }, 'partitions assigned');
    this.assignment = next;
    void this.loadUntilDone(generation).then((loaded) => {
      if (!loaded || this.reader.membership.current() !== generation) return;
      this.member = true;
      this.rejoining = false;
      this.ledger.joined();
      this.firstJoin.resolve();
      this.events.onJoin?.(assignment);
    });
  }

  /**
   * Reads the assignment's commits and starts fetching, again until the broker answers
   * (a coordinator still loading after a restart) or a newer generation makes them moot.
   */
  private async loadUntilDone(generation: Generation): Promise<boolean> {
    for (let attempt = 1; this.reader.membership.current() === generation && !this.stopping; attempt++) {
      try {
        await this.loadCommits(generation);
        return true;
      } catch (error) {
        if (attempt === 3) this.logger.warn({ err: error, groupId: this.settings.groupId }, 'could not read the committed offsets of the new assignment; trying again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(200 * attempt, 2_000)));
      }
    }
    return false;
  }

  private forget(key: string): void {
    const { topic, partition } = splitKey(key);
    this.paused.delete(key);
    this.progress.forget(key);
    this.reader.fetcher.remove(topic, partition);
    const running = new Set(this.handler.revoke(topic, partition));
    const handed = this.handed.get(key);
    if (handed !== undefined) {
      for (const [offset, bytes] of handed) {
        if (running.has(offset)) continue;
        handed.delete(offset);
        this.letGo(topic, partition, bytes);
      }
    }
    this.remember(topic, key);
  }

  /** Each assigned partition's progress from its commit and metadata (one request), or from an older group's commit; then fetches. */
  private async loadCommits(generation: Generation): Promise<void> {
    const assigned = assignedTopics(generation);
    if (assigned.length === 0) return;
    const committed = await this.reader.commits(generation, assigned);
    // NOTE: a newer generation's load may have run meanwhile: this one must not touch the
    // progress it tracks (a stale load that reset a partition's progress behind records a
    // newer one had delivered made them look unfinished: delivered twice after a reload).
    if (this.reader.membership.current() !== generation) return;
    const fresh: { topic: string; partition: number }[] = [];
    for (const { topic, partition, offset, metadata } of committed) {
      const key = keyOf(topic, partition);
      if (!this.assignment.has(key)) continue;
      const known = this.progress.progressAt(key);
      if (known !== undefined) {
        // Still ours from before the rejoin: ours is newer, unless another member moved it on meanwhile.
        if (BigInt(offset) >= 0n) known.startAt(new PartitionProgress(offset, metadata).next);
        continue;
      }
      this.progress.track(key, new PartitionProgress(offset, metadata));
      if (BigInt(offset) < 0n) fresh.push({ topic, partition });
    }
    const { legacyGroupOf, admin, groupId } = this.settings;
    if (legacyGroupOf !== undefined && fresh.length > 0) {
      const carried = await findOlderCommits(admin, fresh, legacyGroupOf, {
        groupId,
        logger: this.logger,
        unreadable: this.unreadableGroups,
        stillWanted: (key) => this.reader.membership.current() === generation && this.progress.progressAt(key) !== undefined,
        carry: ({ topic, partition, offset, metadata }) => {
          if (this.reader.membership.current() !== generation) return;
          const key = keyOf(topic, partition);
          this.progress.track(key, new PartitionProgress(offset, metadata));
          this.progress.markDirty(key);
        },
      });
      logCarried(this.logger, groupId, carried);
    }
    if (this.reader.membership.current() !== generation) return;
    const tracked = new Map<string, bigint>();
    for (const { topic, partitions } of assigned) {
      for (const partition of partitions) {
        const next = this.progress.progressAt(keyOf(topic, partition))?.next;
        if (next !== undefined && BigInt(next) >= 0n) tracked.set(keyOf(topic, partition), BigInt(next));
      }
    }
    // Never committed, by this group or an older one: from the log's beginning.
    const positions = await this.reader.fillFromLog(new Map(tracked), assigned, 'earliest');
    if (this.reader.membership.current() !== generation) return;
    const starts = assigned.flatMap(({ topic, partitions }) =>
      partitions.map((partition) => {
        const key = keyOf(topic, partition);
        const position = positions.get(key)!;
        if (tracked.has(key)) return { topic, partition, position, held: this.heldOf(key) };
        this.progress.track(key, new PartitionProgress(position.toString(), null));
        return { topic, partition, position };
      }),
    );
    await this.reader.fetcher.add(starts);
    for (const key of this.paused.keys()) {
      if (!this.assignment.has(key)) continue;
      const { topic, partition } = splitKey(key);
      this.reader.fetcher.pause(topic, partition);
    }
  }

  /** The bytes of a partition's records handed over and not finished. */
  private heldOf(key: string): number {
    let bytes = 0;
    for (const b of this.handed.get(key)?.values() ?? []) bytes += b;
    return bytes;
  }

  /** A fetched partition's records: hands over those neither finished nor handed over already. */
  private onRecords(topic: string, partition: number, fetched: readonly InboundRecord[], from: bigint, next: bigint): void {
    const key = keyOf(topic, partition);
    if (!this.assignment.has(key)) return;
    const progress = this.progress.progressAt(key);
    if (progress === undefined) return;
    let handed = this.handed.get(key);
    if (handed === undefined) {
      this.handed.set(key, (handed = new Map()));
      this.remember(topic, key);
    }
    const records: InboundRecord[] = [];
    // NOTE: the answer starts at the position asked (the fetcher fences any other), so
    // offsets between it and a record, or after the last one up to `next`, hold no
    // record (compaction, transaction markers): finished.
    let expected = from;
    for (const record of fetched) {
      const offset = BigInt(record.offset);
      this.skipGap(progress, expected, offset);
      expected = offset + 1n;
      if (progress.isFinished(record.offset) || handed.has(record.offset)) {
        this.reader.fetcher.release(topic, partition, heldBytesOf(record));
        continue;
      }
      const bytes = heldBytesOf(record);
      handed.set(record.offset, bytes);
      this.handedBytes += bytes;
      this.handedRecords += 1;
      records.push(record);
    }
    this.skipGap(progress, expected, next);
    this.progress.moved(key);
    if (records.length === 0) return;
    this.lastRecordsAt = Date.now();
    if (this.handler.accept(records)) return;
    // NOTE: left out of `handed`, or no later fetch would hand them over again: the
    // commit would stay below them until a restart, which then redid more than was in
    // flight. Found with the chaos harness: a lane retired by a reload, its topic fetched
    // again at once (revokeTopic) before the next lane was made.
    for (const record of records) {
      const bytes = handed.get(record.offset);
      if (bytes === undefined) continue;
      handed.delete(record.offset);
      this.letGo(topic, partition, bytes);
    }
    this.orphaned.add(key);
    this.reader.fetcher.pause(topic, partition);
  }

  /** Retention removed records before they were read: their offsets count as finished (they cannot be delivered). */
  private onReset(topic: string, partition: number, from: bigint, to: bigint): void {
    this.resetCount += 1;
    this.logger.warn(
      { topic, partition, from: from.toString(), to: to.toString(), groupId: this.settings.groupId },
      `records of ${topic} partition ${partition} from offset ${from} were removed by retention before they were read; reading on from ${to}`,
    );
    const key = keyOf(topic, partition);
    const progress = this.progress.progressAt(key);
    if (progress === undefined || to <= BigInt(progress.next)) return;
    // NOTE: records handed over before retention removed them are still being
    // delivered: only the offsets not in flight count as finished.
    const handed = this.handed.get(key);
    const base = BigInt(progress.next);
    if (handed === undefined || handed.size === 0 || to - base > MAX_GAP_WALK) progress.startAt(to.toString());
    else for (let o = base; o < to; o++) if (!handed.has(o.toString())) progress.finish(o.toString());
    this.progress.markDirty(key);
  }

  /** A record finished (CommitChannel.finish): its bytes leave the budget. */
  private finished(key: string, topic: string, partition: number, offset: string): void {
    const handed = this.handed.get(key);
    const bytes = handed?.get(offset);
    if (handed === undefined || bytes === undefined) return;
    handed.delete(offset);
    this.letGo(topic, partition, bytes);
  }

  private letGo(topic: string, partition: number, bytes: number): void {
    this.handedBytes -= bytes;
    this.handedRecords -= 1;
    this.reader.fetcher.release(topic, partition, bytes);
  }

  /** Offsets in [from, to) that hold no record: finished. */
  private skipGap(progress: PartitionProgress, from: bigint, to: bigint): void {
    if (to <= from) return;
    if (from <= BigInt(progress.next)) {
      progress.startAt(to.toString());
      return;
    }
    for (let o = from; o < to; o++) progress.finish(o.toString());
  }
}
