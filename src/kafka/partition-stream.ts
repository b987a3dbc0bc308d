// The port's second consumer kind: fetching decoupled from completion. Where
// consumer.ts hands the role a batch and waits for it, a partition stream hands the
// records over at once (the role queues them), fetches on, and lets the role say when
// each record finished, in any order (`markDone`). It owns the commits: as soon as
// something finished (one commit at a time, the next right after the broker answered
// the last), per partition, the offset after the contiguous finished prefix,
// with the offsets finished above it in the commit's metadata (offset-progress.ts).
// A member that takes a partition over reads that metadata and skips what finished:
// a crash redoes only what was in flight. The role pauses and resumes single
// partitions (a full queue, a retry not yet due) without stopping the fetch loop.
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { Logger } from 'pino';
import { isGroupNotAuthorized } from './admin.js';
import type { GroupOffset, KafkaAdmin } from './admin.js';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import { commitUntilDone, isGenerationLost } from './commit.js';
import { Rejoiner } from './crash-restart.js';
import { ForeignAssignment, foreignTopics } from './foreign-assignment.js';
import { PartitionProgress } from './offset-progress.js';
import type { InboundRecord, RecordHeaders } from './records.js';

/** What the role does with the records; both calls are synchronous (nothing may block the fetch loop). */
export interface StreamHandler {
  /** Fetched records of one partition, in offset order, none finished or handed over before. */
  accept(records: readonly InboundRecord[]): void;
  /**
   * The partition is no longer this member's (a rebalance gave it to another, or it left
   * the subscription): drop its records not started yet. Returns the offsets still
   * running: they are not handed over again should the partition come back.
   */
  revoke(topic: string, partition: number): Iterable<string>;
}

export interface PartitionStreamSettings {
  groupId: string;
  /** Where the committed offsets and their metadata are read on each assignment. */
  admin: KafkaAdmin;
  /** After a commit failed (a rebalance, a broker away), how long before the next try. */
  commitEveryMs: number;
  /**
   * How long a commit waits after the first completion it covers, at the least (default
   * 5 ms): the completions of that moment go in one request. The next commit starts once
   * the broker answered this one, so finished work waits about one commit round trip;
   * longer, up to 100 ms, after commits of many partitions (commitDelay).
   */
  commitDelayMs?: number;
  /** How long an idle fetch waits on the broker: also how late a resumed partition is fetched. */
  maxWaitTimeInMs: number;
  /**
   * The fetch wait once nothing was fetched for `idleAfterMs` and no paused partition is
   * due to resume within it (default: `maxWaitTimeInMs`, no idle mode). Below a third of
   * the session timeout: kafkajs heartbeats only between fetches.
   */
  idleWaitTimeInMs?: number;
  /**
   * The fetch wait while a partition is paused until its lane has room (no resume time):
   * a resumed partition is fetched only once the fetch under way returns, and with its
   * own partitions paused a lane's fetch is a long poll on nothing. Default: `maxWaitTimeInMs`.
   */
  roomWaitTimeInMs?: number;
  /** How long without a fetched record before the idle wait applies (default 2 s: records flowing end a long wait at once anyway; this only keeps the short wait through a pause in traffic). */
  idleAfterMs?: number;
  maxBytesPerPartition?: number;
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

export interface PartitionStream {
  /** Joins the group on `topics` (resolves once joined). */
  start(topics: readonly string[]): Promise<void>;
  /**
   * Commits what finished, leaves, and joins again on `topics`. Records handed over
   * stay with the role; those of partitions that do not come back are revoked.
   */
  resubscribe(topics: readonly string[]): Promise<void>;
  /**
   * Fetches nothing more of the partition until `resume`. `resumeAt` (epoch ms): when the
   * role expects to resume it (a retry due then); without it, any moment (room in a queue).
   */
  pause(topic: string, partition: number, resumeAt?: number): void;
  resume(topic: string, partition: number): void;
  /**
   * The record at `offset` finished (its outcome is safe in Kafka); any order. Returns
   * the completion's ticket: it is committed once `committedThrough()` reaches it.
   */
  markDone(topic: string, partition: number, offset: string): number;
  /** Every completion whose ticket is at most this is committed (or no longer this member's). */
  committedThrough(): number;
  /** Many finished and wait: the next commit starts now, not after its usual delay (commitDelay). */
  commitSoon(): void;
  /** Runs `callback` once, when the next commit is answered (or failed): commits may have moved. */
  whenCommitted(callback: () => void): void;
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
  /** Joined, and not crashed since. */
  joined(): boolean;
  /**
   * Why the member is not ready although joined: its latest assignment held partitions
   * of topics it does not read (a group id shared with another deployment;
   * foreign-assignment.ts). Undefined while the assignment is its own.
   */
  assignmentProblem(): string | undefined;
  /**
   * When records were last fetched (epoch ms); undefined while that does not tell whether
   * records arrived: not joined, or a partition paused (its new records are not fetched).
   */
  recordsMovedAt(): number | undefined;
  failure(): Error | undefined;
  /**
   * Records finished that no commit took for COMMIT_STALL_MS (the broker away, the group
   * rebalancing): a SIGKILL now would redo all of them, so the role should start no more
   * until it says false again.
   */
  commitsStalled(): boolean;
  /** Commits what finished (until done while still a member), then leaves the group. */
  stop(): Promise<void>;
}

/**
 * NOTE: how long finished records may wait for a commit before the role holds new work.
 * Commits follow completions within about 100 ms; past a second they are failing. Seen
 * in the chaos harness: a deliverer went on delivering for 8 s with the broker down,
 * could commit none of it, was SIGKILLed, and its successor delivered 3,300 events again.
 */
export const COMMIT_STALL_MS = 1_000;

/**
 * How long a commit may go unanswered before the role holds new work: four times the
 * broker's recent answer time (`typicalMs`), at least 150 ms, at most COMMIT_STALL_MS.
 * NOTE: the broker answers a commit within milliseconds; one of 1,000 partitions on a
 * machine busy with 12,000 deliveries a second took 130–220 ms, once 670 ms
 * (destinations bench). One that takes far longer than usual is stuck in retries: seen
 * in the chaos harness, a stopping broker left the commit under way unanswered, and
 * busy lanes finished hundreds more before COMMIT_STALL_MS held them.
 */
export function commitOverdueMs(typicalMs: number): number {
  return Math.min(COMMIT_STALL_MS, Math.max(150, 4 * typicalMs));
}

/** The answer time a stream assumes before its first commit (commitOverdueMs). */
const FIRST_COMMIT_ANSWER_MS = 50;

const DEFAULT_IDLE_AFTER_MS = 2_000;

/**
 * Partitions per commit request. NOTE: kafkajs groups a commit's offsets by topic
 * copying an object once per partition, so one call costs the square of its topics
 * (each destination has its own): at 1,000 destinations that was a tenth of the
 * deliverer's CPU under load with one call, and still 2.5 % of it in slices of 200. A
 * commit of more goes out in slices, all at once (one round trip, not one per slice).
 */
const PARTITIONS_PER_COMMIT = 50;

/** A partition's key in the stream's maps. */
function keyOf(topic: string, partition: number): string {
  return `${partition}:${topic}`;
}

function splitKey(key: string): { topic: string; partition: number } {
  const colon = key.indexOf(':');
  return { topic: key.slice(colon + 1), partition: Number(key.slice(0, colon)) };
}

export function createPartitionStream(client: KafkaClient, settings: PartitionStreamSettings, handler: StreamHandler, events: StreamEvents, logger: Logger): PartitionStream {
  return new KafkaPartitionStream(client, settings, handler, events, logger);
}

class KafkaPartitionStream implements PartitionStream {
  private consumer: Consumer | undefined;
  private topics: readonly string[] = [];
  /** Partitions of the current assignment, with their progress once loaded. */
  private readonly progress = new Map<string, PartitionProgress>();
  private assignment = new Set<string>();
  /** Offsets handed to the role and not finished (queued or running), per partition. */
  private readonly handed = new Map<string, Set<string>>();
  /** The offset after the last record handed over, per partition (gaps below it are finished). */
  private readonly fetchedTo = new Map<string, bigint>();
  /**
   * Partitions whose fetch position is not known until their next batch: records were
   * dropped after kafkajs fetched past them. Their next batch's leading gap is not
   * taken for a gap in the log.
   */
  private readonly positionUnknown = new Set<string>();
  /** Partitions sent back to where the stream expects them (fetchedFromExpected): said once. */
  private readonly refetching = new Set<string>();
  /** Partitions whose progress moved since their last commit: their change count then. */
  private readonly dirty = new Set<string>();
  private readonly committedChanges = new Map<string, number>();
  /** Paused partitions, with when the role expects to resume each (undefined: any moment). */
  private readonly paused = new Map<string, number | undefined>();
  /** When a fetch last brought records (epoch ms): the fetch wait is short until `idleAfterMs` later. */
  private lastRecordsAt = Date.now();
  /** The assignment's commits being read; batches wait for it. */
  private loading: Promise<void> = Promise.resolve();
  private member = false;
  private running = false;
  /** The consumer crashed and has not run since: the rejoiner's next try runs it. */
  private down = false;
  private stopping = false;
  private crashed: Error | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> | undefined;
  private lastCommitProblem: string | undefined;
  private changing: Promise<void> = Promise.resolve();
  /** Counts joins: a commit read for an older one is stale. */
  private generation = 0;
  /** Partitions in the last commit: the next one waits longer after a big one (commitDelay). */
  private lastCommitPartitions = 0;
  /** Commits the broker acknowledged (kafkajs's COMMIT_OFFSETS event). */
  private acknowledgedCommits = 0;
  /** Since when finished records wait for a commit (the oldest not taken by a commit yet); undefined: none. */
  private waitingSince: number | undefined;
  /** The last completion's ticket (markDone). */
  private lastTicket = 0;
  /** Completions up to this ticket are committed, while some partition is dirty (with none dirty, all are). */
  private committedTicket = 0;
  /** Asked for by commitSoon while a commit was under way: the next starts right after it. */
  private hurry = false;
  private commitWaiters: (() => void)[] = [];
  /** The commit request out now, since when (undefined: none). */
  private commitOut: { since: number } | undefined;
  /** How long the broker took to answer recent commits (a moving average, ms). */
  private commitAnswerMs = FIRST_COMMIT_ANSWER_MS;
  /** The last commit failed (a rebalance, the broker away); none went through since. */
  private commitFailing = false;
  private readonly rejoiner: Rejoiner;
  private readonly foreign: ForeignAssignment;
  /** Topics of the join under way that kafkajs dropped from the assignment (not subscribed). */
  private unsubscribed: string[] = [];
  /** Older groups this principal may not read (startFromLegacy): not asked again. */
  private readonly unreadableGroups = new Set<string>();

  constructor(
    private readonly client: KafkaClient,
    private readonly settings: PartitionStreamSettings,
    private readonly handler: StreamHandler,
    private readonly events: StreamEvents,
    private readonly logger: Logger,
  ) {
    this.rejoiner = new Rejoiner(() => this.rejoin(), logger, `consumer group ${settings.groupId}`);
    this.foreign = new ForeignAssignment(settings.groupId, logger);
  }

  start(topics: readonly string[]): Promise<void> {
    return this.serially(() => this.run(topics));
  }

  resubscribe(topics: readonly string[]): Promise<void> {
    return this.serially(() => this.switchTopics(topics));
  }

  /**
   * NOTE: joins, leaves and topic changes run one after the other: two at once on one
   * kafkajs consumer leave a second runner behind that heartbeats for a member the
   * group no longer knows (seen in the chaos harness: the member was expelled every
   * session timeout).
   */
  private serially(change: () => Promise<void>): Promise<void> {
    const next = this.changing.catch(() => undefined).then(change);
    this.changing = next;
    return next;
  }

  private async switchTopics(topics: readonly string[]): Promise<void> {
    const kept = new Set(topics);
    const dropsSome = this.topics.some((t) => !kept.has(t));
    await this.leave();
    if (this.stopping) return;
    if (dropsSome) {
      // NOTE: a kafkajs consumer only ever adds to its subscription (subscribe() merges);
      // dropping a topic takes a new consumer.
      await this.consumer?.disconnect();
      this.consumer = undefined;
    }
    await this.run(topics);
  }

  pause(topic: string, partition: number, resumeAt?: number): void {
    const key = keyOf(topic, partition);
    const known = this.paused.has(key);
    this.paused.set(key, resumeAt);
    if (known) return;
    if (this.running) this.tell(() => this.consumer?.pause([{ topic, partitions: [partition] }]));
  }

  resume(topic: string, partition: number): void {
    if (!this.paused.delete(keyOf(topic, partition))) return;
    if (this.running) this.tell(() => this.consumer?.resume([{ topic, partitions: [partition] }]));
  }

  /** A pause or resume for kafkajs; refused while its group is being made (the next join applies `paused`). */
  private tell(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.logger.debug({ err: error }, 'pause or resume before the consumer group was made; applied at the join');
    }
  }

  markDone(topic: string, partition: number, offset: string): number {
    const key = keyOf(topic, partition);
    this.handed.get(key)?.delete(offset);
    const progress = this.progress.get(key);
    if (progress === undefined) return 0; // not ours any more: the next owner redoes it (a duplicate, never a loss)
    progress.finish(offset);
    if (progress.changeCount !== this.committedChanges.get(key)) this.markDirty(key);
    this.lastTicket += 1;
    return this.lastTicket;
  }

  committedThrough(): number {
    return this.dirty.size === 0 ? this.lastTicket : this.committedTicket;
  }

  commitSoon(): void {
    if (this.committing !== undefined) {
      this.hurry = true;
      return;
    }
    if (this.commitTimer === undefined) return; // nothing to commit yet, or not a member: the join commits
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    this.commitTick();
  }

  whenCommitted(callback: () => void): void {
    this.commitWaiters.push(callback);
  }

  private wakeCommitWaiters(): void {
    if (this.commitWaiters.length === 0) return;
    const waiters = this.commitWaiters;
    this.commitWaiters = [];
    for (const waiter of waiters) waiter();
  }

  revokeTopic(topic: string): void {
    for (const key of this.handed.keys()) {
      const at = splitKey(key);
      if (at.topic !== topic) continue;
      this.handed.set(key, new Set(this.handler.revoke(topic, at.partition)));
      this.fetchedTo.delete(key);
      // NOTE: kafkajs fetches on after what was dropped until the next join goes back to
      // the commit: a batch before then must not make the dropped offsets look like a gap.
      this.positionUnknown.add(key);
    }
    // NOTE: the pauses were the dropped lane's (full, a retry not due); the lane that
    // takes the topic over decides afresh, and a pause left behind would stall it for good.
    for (const key of [...this.paused.keys()]) {
      const at = splitKey(key);
      if (at.topic === topic) this.resume(at.topic, at.partition);
    }
  }

  release(topic: string, partition: number, offset: string): void {
    const key = keyOf(topic, partition);
    if (!this.handed.get(key)?.delete(offset)) return;
    const progress = this.progress.get(key);
    this.fetchedTo.delete(key);
    // Fetched past it already: go back to the first unfinished offset (the finished and
    // handed-over records after it are skipped again). Not ours: the next join reads from the commit.
    if (progress !== undefined && this.running && this.assignment.has(key)) this.consumer?.seek({ topic, partition, offset: progress.next });
    else this.positionUnknown.add(key);
  }

  joined(): boolean {
    return this.member && this.crashed === undefined;
  }

  failure(): Error | undefined {
    return this.crashed;
  }

  assignmentProblem(): string | undefined {
    return this.foreign.notReady();
  }

  recordsMovedAt(): number | undefined {
    return this.joined() && this.paused.size === 0 ? this.lastRecordsAt : undefined;
  }

  stop(): Promise<void> {
    this.stopping = true;
    void this.rejoiner.stop(); // a rejoin under way runs before the leave (serially)
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    return this.serially(async () => {
      await this.leave();
      await this.consumer?.disconnect();
      this.consumer = undefined;
    });
  }

  /** Commits what finished (until done while a member), then stops fetching and leaves the group. */
  private async leave(): Promise<void> {
    if (!this.running) return;
    // A commit under way may be stuck in kafkajs's retries of a rebalance; the flush commits again.
    await Promise.race([this.committing?.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
    await this.flush();
    this.running = false;
    this.member = false;
    await this.consumer?.stop();
  }

  private async run(topics: readonly string[]): Promise<void> {
    this.topics = [...topics];
    const consumer = (this.consumer ??= this.createConsumer());
    try {
      await consumer.connect();
      // NOTE: kafkajs refuses subscribe() while running; after stop() it takes a new topic set.
      await consumer.subscribe({ topics: [...topics], fromBeginning: true });
      this.running = true;
      await this.runFetchLoop(consumer);
    } catch (error) {
      this.running = false;
      await consumer.disconnect().catch(() => undefined);
      this.consumer = undefined;
      throw error;
    }
  }

  private runFetchLoop(consumer: Consumer): Promise<void> {
    this.down = false;
    return consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: 1,
      eachBatch: (payload) => this.onBatch(payload),
    });
  }

  /** After a crash (crash-restart.ts): the same consumer joins again, unless a change since ran it. */
  private rejoin(): Promise<void> {
    return this.serially(async () => {
      const consumer = this.consumer;
      if (consumer === undefined || !this.running || this.stopping || !this.down) return;
      await consumer.connect();
      await this.runFetchLoop(consumer);
    });
  }

  /**
   * The wait of the next fetch (fetchWait): shortest while a lane waits for room, short
   * while records flow or a paused partition may resume soon, since a resumed partition
   * is fetched only once the fetch under way returns; long once idle, so that an idle
   * deliverer goes over its thousands of partitions every few seconds instead of twice a
   * second (even in a fetch session kafkajs walks every partition to build each request).
   * New records end a long wait at once: the broker answers a fetch as soon as any of its
   * partitions has some.
   */
  private fetchWaitMs(): number {
    return fetchWait(this.settings, { now: Date.now(), lastRecordsAt: this.lastRecordsAt, resumeTimes: this.paused.values() });
  }

  private createConsumer(): Consumer {
    const { groupId, maxBytesPerPartition } = this.settings;
    // NOTE: kafkajs reads its maxWaitTime on every fetch and only ever as a number (the
    // request's int32, its timeout, the sleep with nothing to fetch): a number-like
    // value lets each fetch take the wait fetchWaitMs chooses, with no reach into kafkajs.
    const maxWaitTimeInMs = { valueOf: () => this.fetchWaitMs() } as unknown as number;
    const consumer = kafkajsOf(this.client).consumer({
      groupId,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs,
      retry: this.rejoiner.retry(),
      ...(maxBytesPerPartition !== undefined ? { maxBytesPerPartition } : {}),
    });
    // NOTE: kafkajs drops the topics it was assigned but does not subscribe to before it
    // tells of the join (they are never fetched); this event, sent just before, names them.
    consumer.on(consumer.events.RECEIVED_UNSUBSCRIBED_TOPICS, (event) => {
      this.unsubscribed = foreignTopics(event.payload.assignedTopics, event.payload.topicsSubscribed);
    });
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      this.rejoiner.joined();
      this.foreign.joined(this.unsubscribed);
      this.unsubscribed = [];
      this.onJoin(event.payload.memberAssignment);
    });
    consumer.on(consumer.events.COMMIT_OFFSETS, () => (this.acknowledgedCommits += 1));
    consumer.on(consumer.events.CRASH, (event) => {
      const { error } = event.payload;
      this.member = false;
      this.down = true;
      const restarts = this.rejoiner.crashed(error);
      if (!restarts) this.crashed = error;
      this.events.onCrash?.(error, restarts);
    });
    return consumer;
  }

  /** A new assignment: revoke what went, read the commits of what came, put the pauses back. */
  private onJoin(memberAssignment: Record<string, number[]>): void {
    const next = new Set<string>();
    for (const [topic, partitions] of Object.entries(memberAssignment)) for (const p of partitions) next.add(keyOf(topic, p));
    for (const key of this.assignment) if (!next.has(key)) this.forget(key);
    this.assignment = next;
    for (const key of next) {
      // kafkajs fetches from the commit again.
      this.fetchedTo.delete(key);
      this.positionUnknown.delete(key);
    }
    const consumer = this.consumer;
    for (const key of this.paused.keys()) {
      if (!next.has(key)) continue;
      const { topic, partition } = splitKey(key);
      this.tell(() => consumer?.pause([{ topic, partitions: [partition] }]));
    }
    const generation = ++this.generation;
    this.loading = this.loadUntilDone(memberAssignment, generation).then(() => {
      if (generation !== this.generation) return;
      this.member = true;
      this.scheduleCommit();
      this.wakeCommitWaiters(); // partitions that went took their uncommitted completions with them
      this.events.onJoin?.(memberAssignment);
    });
  }

  /**
   * Reads the assignment's commits, again until the broker answers (a coordinator still
   * loading after a restart) or a newer join makes them moot. Batches wait meanwhile.
   */
  private async loadUntilDone(memberAssignment: Record<string, number[]>, generation: number): Promise<void> {
    for (let attempt = 1; generation === this.generation && !this.stopping; attempt++) {
      try {
        await this.loadCommits(memberAssignment);
        return;
      } catch (error) {
        if (attempt === 3) this.logger.warn({ err: error, groupId: this.settings.groupId }, 'could not read the committed offsets of the new assignment; trying again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(200 * attempt, 2_000)));
      }
    }
  }

  private forget(key: string): void {
    const { topic, partition } = splitKey(key);
    this.paused.delete(key);
    this.progress.delete(key);
    this.dirty.delete(key);
    this.committedChanges.delete(key);
    this.fetchedTo.delete(key);
    this.handed.set(key, new Set(this.handler.revoke(topic, partition)));
  }

  /** Each assigned partition's progress from its commit and metadata (one request), or from an older group's commit. */
  private async loadCommits(memberAssignment: Record<string, number[]>): Promise<void> {
    const { admin, groupId } = this.settings;
    const assigned = Object.entries(memberAssignment)
      .filter(([, partitions]) => partitions.length > 0)
      .map(([topic, partitions]) => ({ topic, partitions }));
    if (assigned.length === 0) return;
    const committed = await readCommits(admin, groupId, assigned);
    const fresh: { topic: string; partition: number }[] = [];
    for (const { topic, partitions } of committed) {
      const owned = new Set(memberAssignment[topic] ?? []);
      for (const { partition, offset, metadata } of partitions) {
        if (!owned.has(partition)) continue;
        const key = keyOf(topic, partition);
        const known = this.progress.get(key);
        if (known !== undefined) {
          // Still ours from before the rejoin: ours is newer, unless another member moved it on meanwhile.
          if (BigInt(offset) >= 0n) {
            const other = new PartitionProgress(offset, metadata);
            known.startAt(other.next);
          }
          continue;
        }
        this.progress.set(key, new PartitionProgress(offset, metadata));
        if (BigInt(offset) < 0n) fresh.push({ topic, partition });
      }
    }
    await this.startFromLegacy(fresh);
  }

  /**
   * NOTE: the upgrade from older group names (legacyGroupOf: `<clientId>-deliverer`,
   * then the per-destination `<clientId>-deliverer-<id>` of older versions still): a
   * partition this group never committed starts where the first of them that committed
   * it stopped, skipping what its metadata lists as finished, not at the start of the
   * log (which would deliver the topic's whole retention again). The next commit makes
   * it this group's own. At each assignment, so a destination enabled again later
   * starts where the old group left it too.
   */
  private async startFromLegacy(fresh: readonly { topic: string; partition: number }[]): Promise<void> {
    const legacyGroupOf = this.settings.legacyGroupOf;
    if (legacyGroupOf === undefined) return;
    let left = fresh.map((f) => ({ ...f, chain: legacyGroupOf(f.topic).filter((group) => !this.unreadableGroups.has(group)) }));
    for (let step = 0; left.length > 0; step++) {
      const asked = left.filter((f) => f.chain[step] !== undefined);
      if (asked.length === 0) return;
      const byGroup = new Map<string, Map<string, number[]>>();
      for (const { topic, partition, chain } of asked) {
        const group = chain[step]!;
        const topics = byGroup.get(group) ?? new Map<string, number[]>();
        topics.set(topic, [...(topics.get(topic) ?? []), partition]);
        byGroup.set(group, topics);
      }
      const wanted = new Set(asked.map((f) => keyOf(f.topic, f.partition)));
      const found = new Set<string>();
      // NOTE: one group per destination in the oldest versions: a first start at 1,000
      // destinations reads 1,000 groups; a few at a time keeps that to a second or two
      // without a burst on the broker.
      await forEachLimited([...byGroup], 16, async ([group, topics]) => {
        const committed = await readCommits(this.settings.admin, group, [...topics].map(([topic, partitions]) => ({ topic, partitions }))).catch((error: unknown) => {
          // NOTE: a deployment that never ran an older version, with ACLs on its own prefix only, must still join.
          if (!isGroupNotAuthorized(error)) throw error;
          this.unreadableGroups.add(group);
          this.logger.warn({ groupId: this.settings.groupId, legacyGroup: group }, `not authorized to read the commits of ${group}, the group an older version used: nothing is carried from it`);
          return [];
        });
        let carried = 0;
        for (const { topic, partitions } of committed) {
          for (const { partition, offset, metadata } of partitions) {
            const key = keyOf(topic, partition);
            if (!wanted.has(key) || found.has(key) || !this.progress.has(key) || BigInt(offset) < 0n) continue;
            found.add(key);
            this.progress.set(key, new PartitionProgress(offset, metadata));
            this.markDirty(key);
            this.consumer?.seek({ topic, partition, offset });
            carried += 1;
          }
        }
        if (carried > 0) this.logger.info({ groupId: this.settings.groupId, legacyGroup: group, partitions: carried }, `${carried} partition(s) start from the commits of ${group}, the group an older version used`);
      });
      left = asked.filter((f) => !found.has(keyOf(f.topic, f.partition)));
    }
  }

  /** Hands the batch's new records to the role at once and lets kafkajs fetch on. */
  private async onBatch(payload: EachBatchPayload): Promise<void> {
    await this.loading;
    const { batch } = payload;
    if (payload.isStale() || !this.running) return;
    const key = keyOf(batch.topic, batch.partition);
    if (!this.assignment.has(key)) return;
    let progress = this.progress.get(key);
    if (progress === undefined) {
      // NOTE: the commit read had no entry for it (a topic whose metadata was not known
      // yet): kafkajs fetches from the group's commit, so the first record fetched is
      // where it starts; only the metadata's skips are missed (duplicates, never a loss).
      progress = new PartitionProgress('-1', null);
      this.progress.set(key, progress);
    }
    let handed = this.handed.get(key);
    if (handed === undefined) this.handed.set(key, (handed = new Set()));
    const records: InboundRecord[] = [];
    let expected = this.fetchedTo.get(key) ?? BigInt(progress.next);
    let leadingUnknown = this.positionUnknown.delete(key);
    if (!leadingUnknown && !this.fetchedFromExpected(batch, expected, handed)) {
      // Records this stream holds lie between where it expects the partition and where
      // kafkajs fetched it: not a gap in the log. Fetch it again from there.
      leadingUnknown = true;
      if (!this.refetching.has(key)) {
        this.refetching.add(key);
        this.logger.warn({ topic: batch.topic, partition: batch.partition, expected: expected.toString(), fetchedOffset: fetchedOffsetOf(batch) }, 'partition fetched from past records still in flight; fetching it again from the first of them');
      }
      this.consumer?.seek({ topic: batch.topic, partition: batch.partition, offset: expected.toString() });
    } else {
      this.refetching.delete(key);
    }
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      if (!leadingUnknown) this.skipGap(progress, expected, offset);
      leadingUnknown = false;
      expected = offset + 1n;
      if (progress.isFinished(message.offset) || handed.has(message.offset)) continue;
      handed.add(message.offset);
      records.push({
        topic: batch.topic,
        partition: batch.partition,
        offset: message.offset,
        key: message.key,
        value: message.value,
        headers: message.headers as RecordHeaders | undefined,
        timestamp: message.timestamp,
      });
    }
    // NOTE: kafkajs leaves control records (and aborted ones) out of `messages`; their
    // offsets count as finished, or the commit would stop before them for good.
    const end = BigInt(batch.lastOffset()) + 1n;
    this.skipGap(progress, expected, end);
    this.fetchedTo.set(key, end);
    if (progress.changeCount !== this.committedChanges.get(key)) this.markDirty(key);
    if (records.length > 0) {
      this.lastRecordsAt = Date.now();
      this.handler.accept(records);
    }
    payload.resolveOffset(batch.lastOffset());
  }

  /**
   * Whether a batch's leading gap (from `expected` to its first record) holds no record:
   * kafkajs fetched it from no later than `expected`, or, fetched from later (a position
   * the log no longer held, reset by kafkajs), no record handed over lies in the gap.
   * NOTE: a second runner beside the stream's own (crash-restart.ts) fetched from its own
   * position, and its batches could make records in flight look like a gap.
   */
  private fetchedFromExpected(batch: EachBatchPayload['batch'], expected: bigint, handed: ReadonlySet<string>): boolean {
    const fetchedOffset = fetchedOffsetOf(batch);
    if (fetchedOffset === undefined || BigInt(fetchedOffset) <= expected) return true;
    const first = BigInt(batch.messages[0]?.offset ?? fetchedOffset);
    for (const offset of handed) {
      const o = BigInt(offset);
      if (o >= expected && o < first) return false;
    }
    return true;
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

  commitsStalled(): boolean {
    if (this.dirty.size === 0) return false; // nothing finished waits for a commit
    return commitsStalledAt(Date.now(), { commitOutSince: this.commitOut?.since, overdueAfterMs: commitOverdueMs(this.commitAnswerMs), failing: this.commitFailing, waitingSince: this.waitingSince });
  }

  private markDirty(key: string): void {
    if (this.dirty.size === 0) {
      // Nothing was dirty: every completion so far is committed.
      this.waitingSince = Date.now();
      this.committedTicket = this.lastTicket;
    }
    this.dirty.add(key);
    this.scheduleCommit();
  }

  /**
   * NOTE: commits follow completions as closely as the broker allows: a SIGKILL redoes
   * what finished but was not committed yet, so that window is kept to about one commit
   * round trip (a commit starts `commitDelayMs` after a completion when none is under
   * way, else right after the one under way is answered) instead of a fixed period.
   * Nothing finished, no timer: an idle stream costs nothing.
   */
  private scheduleCommit(delayMs = commitDelay(this.lastCommitPartitions, this.settings.commitDelayMs)): void {
    if (this.commitTimer !== undefined || this.committing !== undefined || this.stopping) return;
    if (this.dirty.size === 0 || !this.member) return; // the join schedules the next
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      this.commitTick();
    }, delayMs);
  }

  private commitTick(): void {
    if (this.committing !== undefined || this.dirty.size === 0 || !this.member) return;
    let retryMs: number | undefined;
    const current: Promise<void> = this.commitDirty()
      .catch((error: unknown) => {
        this.commitFailed(error);
        retryMs = this.settings.commitEveryMs;
      })
      .finally(() => {
        if (this.committing === current) this.committing = undefined;
        const hurry = this.hurry;
        this.hurry = false;
        this.scheduleCommit(retryMs ?? (hurry ? 0 : undefined));
        this.wakeCommitWaiters();
      });
    this.committing = current;
  }

  /** One commit of every partition that moved. */
  private async commitDirty(): Promise<void> {
    const consumer = this.consumer;
    if (consumer === undefined || !this.running) return;
    const snapshotAt = Date.now();
    const snapshotTicket = this.lastTicket;
    const changes = new Map<string, number>();
    const offsets = [...this.dirty].flatMap((key) => {
      const progress = this.progress.get(key);
      if (progress === undefined || !this.assignment.has(key)) {
        this.dirty.delete(key); // not ours any more: nothing of it to commit
        return [];
      }
      changes.set(key, progress.changeCount);
      const { topic, partition } = splitKey(key);
      return [{ topic, partition, ...progress.commitPoint() }];
    });
    if (offsets.length === 0) return;
    this.lastCommitPartitions = offsets.length;
    const acknowledged = this.acknowledgedCommits;
    const slices: Promise<void>[] = [];
    for (let i = 0; i < offsets.length; i += PARTITIONS_PER_COMMIT) slices.push(consumer.commitOffsets(offsets.slice(i, i + PARTITIONS_PER_COMMIT)));
    const out = { since: snapshotAt };
    this.commitOut = out;
    // NOTE: every slice settles before the round ends (allSettled, not all): a slice still
    // retrying inside kafkajs after another failed would land after the next round's
    // commit and move its partitions back to older offsets.
    const settled = await Promise.allSettled(slices);
    if (this.commitOut === out) this.commitOut = undefined;
    const failed = settled.find((result) => result.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    this.commitAnswerMs = 0.8 * this.commitAnswerMs + 0.2 * (Date.now() - snapshotAt);
    // NOTE: kafkajs's commitOffsets returns without a word when its runner is not running
    // (crashed and restarting after a broker restart): only the broker's answers count,
    // one per slice, or the partitions would be taken for committed and never committed again.
    if (this.acknowledgedCommits - acknowledged < slices.length) throw Object.assign(new Error(`offsets of group ${this.settings.groupId} not committed: the consumer is not running`), { retriable: true });
    for (const [key, count] of changes) {
      this.committedChanges.set(key, count);
      if (this.progress.get(key)?.changeCount === count) this.dirty.delete(key);
    }
    // What is still dirty finished after the snapshot this commit took.
    this.waitingSince = this.dirty.size > 0 ? snapshotAt : undefined;
    this.committedTicket = Math.max(this.committedTicket, snapshotTicket);
    this.commitFailing = false;
    if (this.lastCommitProblem !== undefined) {
      this.logger.info({ groupId: this.settings.groupId }, 'offsets committed again');
      this.lastCommitProblem = undefined;
    }
  }

  private commitFailed(error: unknown): void {
    this.commitFailing = true;
    // NOTE: a commit refused because the group rebalances is no error: the partitions
    // stay dirty and are committed in the next generation, or the next owner redoes at
    // most what was in flight (the metadata of the last commit lists the rest).
    const problem = error instanceof Error ? error.message : String(error);
    if (isGenerationLost(error)) {
      this.logger.debug({ err: error }, 'commit refused by a rebalance; committing again once rejoined');
    } else if (problem !== this.lastCommitProblem) {
      this.logger.warn({ err: error, groupId: this.settings.groupId }, 'could not commit finished offsets; trying again');
    }
    this.lastCommitProblem = problem;
  }

  /** Before leaving: commit what finished, until done while still a member (commit.ts). */
  private async flush(): Promise<void> {
    clearTimeout(this.commitTimer);
    this.commitTimer = undefined;
    if (this.dirty.size === 0 || !this.member) return;
    // NOTE: marked as the commit under way, so that no commit round starts beside it (commitSoon, a timer).
    const flushing = commitUntilDone(() => this.commitDirty(), {
      stillOwned: () => this.member && this.running,
      logger: this.logger,
      what: `group ${this.settings.groupId}`,
    }).catch((error: unknown) => this.commitFailed(error));
    this.committing = flushing;
    await flushing;
    if (this.committing === flushing) this.committing = undefined;
  }
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

/**
 * The wait of a stream's next fetch (see KafkaPartitionStream.fetchWaitMs): the room
 * wait while a partition is paused until its lane has room (`resumeTimes` holds
 * undefined); the idle wait once nothing was fetched for `idleAfterMs` and every paused
 * partition is due to resume later than that wait from now; else `maxWaitTimeInMs`.
 */
export function fetchWait(
  settings: Pick<PartitionStreamSettings, 'maxWaitTimeInMs' | 'idleWaitTimeInMs' | 'idleAfterMs' | 'roomWaitTimeInMs'>,
  state: { now: number; lastRecordsAt: number; resumeTimes: Iterable<number | undefined> },
): number {
  const { maxWaitTimeInMs, idleWaitTimeInMs, idleAfterMs = DEFAULT_IDLE_AFTER_MS, roomWaitTimeInMs = maxWaitTimeInMs } = settings;
  const { now } = state;
  const idle = idleWaitTimeInMs !== undefined && idleWaitTimeInMs > maxWaitTimeInMs && now - state.lastRecordsAt >= idleAfterMs;
  let wait = idle ? idleWaitTimeInMs : maxWaitTimeInMs;
  for (const resumeAt of state.resumeTimes) {
    if (resumeAt === undefined) return Math.min(roomWaitTimeInMs, maxWaitTimeInMs);
    if (resumeAt - now < wait) wait = maxWaitTimeInMs;
  }
  return wait;
}

/**
 * How long the next commit waits after the first completion it covers: `baseMs` (5 ms by
 * default), or 0.1 ms per partition the last commit carried, up to 100 ms (or the base).
 * NOTE: a commit costs in proportion to its partitions (kafkajs groups them by topic in
 * time square to the topics, the broker writes one offset record each), and at 1,000 busy
 * destinations every commit names about 1,000: one right after the other took a tenth of
 * the deliverer's CPU per event (destinations bench). Spacing them as they grow keeps that
 * cost per partition bounded, and the redo after a SIGKILL within about 100 ms of
 * completions (docs/webhooks.md#delivery-and-retries); few partitions still commit within a few milliseconds.
 */
export function commitDelay(lastCommitPartitions: number, baseMs = 5): number {
  return Math.max(baseMs, Math.min(COMMIT_DELAY_CAP_MS, lastCommitPartitions / 10));
}

const COMMIT_DELAY_CAP_MS = 100;

/**
 * The offset kafkajs fetched a batch from.
 * NOTE: kafkajs's Batch has it (batch.js) but its types leave it out.
 */
function fetchedOffsetOf(batch: EachBatchPayload['batch']): string | undefined {
  const { fetchedOffset } = batch as { fetchedOffset?: unknown };
  return typeof fetchedOffset === 'string' ? fetchedOffset : undefined;
}

/** A group's commits of these partitions: in one request where the admin can, else per topic. */
function readCommits(admin: KafkaAdmin, groupId: string, assigned: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: GroupOffset[] }[]> {
  if (admin.committedOffsetsOf !== undefined) return admin.committedOffsetsOf(groupId, assigned);
  return admin.committedOffsets(
    groupId,
    assigned.map((a) => a.topic),
  );
}

/** `work` on each item, at most `limit` at once; the first failure rejects (the others finish). */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
