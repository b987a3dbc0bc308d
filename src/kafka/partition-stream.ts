// The port's second consumer kind: fetching decoupled from completion. Where
// consumer.ts hands the role a batch and waits for it, a partition stream hands the
// records over at once (the role queues them), fetches on, and lets the role say when
// each record finished, in any order, in its commit ledger (commit-ledger.ts: progress,
// commit rounds, tickets, the stall rule). The stream keeps the rest: the group
// membership and the assignment (each partition's progress read from its last commit
// and metadata, so a member that takes a partition over skips what finished and a
// crash redoes only what was in flight), the fetch, the hand-over, and the pause and
// resume of single partitions (a full queue, a retry not yet due) without stopping the
// fetch loop.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { Logger } from 'pino';
import type { KafkaAdmin } from './admin.js';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import { CommitLedger, partitionKey as keyOf, splitPartitionKey as splitKey } from './commit-ledger.js';
import { Rejoiner } from './crash-restart.js';
import { ForeignAssignment, foreignTopics } from './foreign-assignment.js';
import { fetchWait } from './fetch-wait.js';
import type { FetchWaitSettings } from './fetch-wait.js';
import { LegacyCarry, readCommits } from './legacy-carry.js';
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

/** How long the hand-over of a fetch keeps the event loop before it lets I/O run (handOverTurn). */
const HAND_OVER_TURN_MS = 10;

export interface PartitionStreamSettings extends FetchWaitSettings {
  groupId: string;
  /** Where the committed offsets and their metadata are read on each assignment. */
  admin: KafkaAdmin;
  /** After a commit failed (a rebalance, a broker away), how long before the next try (commit-ledger.ts). */
  commitEveryMs: number;
  /**
   * How long a commit waits after the first completion it covers, at the least (default
   * 5 ms): the completions of that moment go in one request. The next commit starts once
   * the broker answered this one, so finished work waits about one commit round trip;
   * longer, up to 100 ms, after commits of many partitions (commitDelay, commit-ledger.ts).
   */
  commitDelayMs?: number;
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
  /** Where the role says what finished, and learns whether commits keep up (commit-ledger.ts). */
  readonly ledger: CommitLedger;
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
  /** Commits what finished (until done while still a member), then leaves the group. */
  stop(): Promise<void>;
}

export function createPartitionStream(client: KafkaClient, settings: PartitionStreamSettings, handler: StreamHandler, events: StreamEvents, logger: Logger): PartitionStream {
  return new KafkaPartitionStream(client, settings, handler, events, logger);
}

class KafkaPartitionStream implements PartitionStream {
  readonly ledger: CommitLedger;
  private consumer: Consumer | undefined;
  private topics: readonly string[] = [];
  /** Partitions of the current assignment (their progress is in the ledger once loaded). */
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
  /** Paused partitions, with when the role expects to resume each (undefined: any moment). */
  private readonly paused = new Map<string, number | undefined>();
  /**
   * The keys each topic has had in `handed` or `paused`: revokeTopic reads one topic's.
   * NOTE: a scan of every key per topic instead cost the square of the topics when every
   * lane stopped (a shutdown, a reload changing every destination): about 0.8 s at 1,000
   * destinations and the default four tiers.
   */
  private readonly keysOfTopic = new Map<string, Set<string>>();
  /** When the hand-over last let I/O run (performance.now()): see handOverTurn. */
  private turnStartedAt = 0;
  /** When a fetch last brought records (epoch ms): the fetch wait is short until `idleAfterMs` later. */
  private lastRecordsAt = Date.now();
  /** The assignment's commits being read; batches wait for it. */
  private loading: Promise<void> = Promise.resolve();
  private member = false;
  private running = false;
  /** The consumer crashed and has not run since: the rejoiner's next try runs it. */
  private awaitingRejoin = false;
  private stopping = false;
  private crashed: Error | undefined;
  private changing: Promise<void> = Promise.resolve();
  /** Counts joins: a commit read for an older one is stale. */
  private generation = 0;
  /** Commits the broker acknowledged (kafkajs's COMMIT_OFFSETS event). */
  private acknowledgedCommits = 0;
  private readonly rejoiner: Rejoiner;
  private readonly foreign: ForeignAssignment;
  /** Topics of the join under way that kafkajs dropped from the assignment (not subscribed). */
  private unsubscribed: string[] = [];
  /** Starts partitions this group never committed from an older group's commit (legacy-carry.ts). */
  private readonly legacy: LegacyCarry | undefined;

  constructor(
    private readonly client: KafkaClient,
    private readonly settings: PartitionStreamSettings,
    private readonly handler: StreamHandler,
    private readonly events: StreamEvents,
    private readonly logger: Logger,
  ) {
    this.rejoiner = new Rejoiner(() => this.rejoin(), logger, `consumer group ${settings.groupId}`);
    this.foreign = new ForeignAssignment(settings.groupId, logger);
    const { legacyGroupOf } = settings;
    this.legacy = legacyGroupOf === undefined ? undefined : new LegacyCarry({ groupId: settings.groupId, admin: settings.admin, legacyGroupOf }, logger);
    const { groupId, commitEveryMs, commitDelayMs } = settings;
    this.ledger = new CommitLedger(
      { groupId, commitEveryMs, ...(commitDelayMs !== undefined ? { commitDelayMs } : {}), onFinish: (key, offset) => this.handed.get(key)?.delete(offset) },
      {
        isMember: () => this.member,
        canSend: () => this.consumer !== undefined && this.running,
        isAssigned: (key) => this.assignment.has(key),
        send: (offsets) => this.consumer!.commitOffsets(offsets),
        acknowledged: () => this.acknowledgedCommits,
      },
      logger,
    );
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
    if (topics.length === 0) {
      this.topics = []; // kafkajs runs no consumer without topics: out of the group until given some
      return;
    }
    await this.run(topics);
  }

  pause(topic: string, partition: number, resumeAt?: number): void {
    const key = keyOf(topic, partition);
    const known = this.paused.has(key);
    this.paused.set(key, resumeAt);
    this.remember(topic, key);
    if (known) return;
    if (this.running) this.pauseOrResume(() => this.consumer?.pause([{ topic, partitions: [partition] }]));
  }

  resume(topic: string, partition: number): void {
    if (!this.paused.delete(keyOf(topic, partition))) return;
    if (this.running) this.pauseOrResume(() => this.consumer?.resume([{ topic, partitions: [partition] }]));
  }

  /** A pause or resume for kafkajs; refused while its group is being made (the next join applies `paused`). */
  private pauseOrResume(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.logger.debug({ err: error }, 'pause or resume before the consumer group was made; applied at the join');
    }
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
      if (!this.handed.has(key)) continue;
      const at = splitKey(key);
      this.handed.set(key, new Set(this.handler.revoke(topic, at.partition)));
      this.fetchedTo.delete(key);
      // NOTE: kafkajs fetches on after what was dropped until the next join goes back to
      // the commit: a batch before then must not make the dropped offsets look like a gap.
      this.positionUnknown.add(key);
    }
    // NOTE: the pauses were the dropped lane's (full, a retry not due); the lane that
    // takes the topic over decides afresh, and a pause left behind would stall it for good.
    for (const key of keys) if (this.paused.has(key)) this.resume(topic, splitKey(key).partition);
  }

  release(topic: string, partition: number, offset: string): void {
    const key = keyOf(topic, partition);
    if (!this.handed.get(key)?.delete(offset)) return;
    const progress = this.ledger.progressAt(key);
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
    this.ledger.stop();
    return this.serially(async () => {
      await this.leave();
      await this.consumer?.disconnect();
      this.consumer = undefined;
    });
  }

  /** Commits what finished (until done while a member), then stops fetching and leaves the group. */
  private async leave(): Promise<void> {
    if (!this.running) return;
    await this.ledger.flush();
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
    this.awaitingRejoin = false;
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
      if (consumer === undefined || !this.running || this.stopping || !this.awaitingRejoin) return;
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
      this.awaitingRejoin = true;
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
      this.pauseOrResume(() => consumer?.pause([{ topic, partitions: [partition] }]));
    }
    const generation = ++this.generation;
    this.loading = this.loadUntilDone(memberAssignment, generation).then(() => {
      if (generation !== this.generation) return;
      this.member = true;
      this.ledger.joined();
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
    this.ledger.forget(key);
    this.fetchedTo.delete(key);
    this.handed.set(key, new Set(this.handler.revoke(topic, partition)));
    this.remember(topic, key);
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
        const known = this.ledger.progressAt(key);
        if (known !== undefined) {
          // Still ours from before the rejoin: ours is newer, unless another member moved it on meanwhile.
          if (BigInt(offset) >= 0n) {
            const other = new PartitionProgress(offset, metadata);
            known.startAt(other.next);
          }
          continue;
        }
        this.ledger.track(key, new PartitionProgress(offset, metadata));
        if (BigInt(offset) < 0n) fresh.push({ topic, partition });
      }
    }
    await this.legacy?.carry(fresh, {
      stillWanted: (key) => this.ledger.progressAt(key) !== undefined,
      carry: ({ topic, partition, offset, metadata }) => {
        const key = keyOf(topic, partition);
        this.ledger.track(key, new PartitionProgress(offset, metadata));
        this.ledger.markDirty(key);
        this.consumer?.seek({ topic, partition, offset });
      },
    });
  }

  /** Hands the batch's new records to the role at once and lets kafkajs fetch on. */
  private async onBatch(payload: EachBatchPayload): Promise<void> {
    await this.loading;
    const { batch } = payload;
    if (payload.isStale() || !this.running) return;
    const key = keyOf(batch.topic, batch.partition);
    if (!this.assignment.has(key)) return;
    let progress = this.ledger.progressAt(key);
    if (progress === undefined) {
      // NOTE: the commit read had no entry for it (a topic whose metadata was not known
      // yet): kafkajs fetches from the group's commit, so the first record fetched is
      // where it starts; only the metadata's skips are missed (duplicates, never a loss).
      progress = new PartitionProgress('-1', null);
      this.ledger.track(key, progress);
    }
    let handed = this.handed.get(key);
    if (handed === undefined) {
      this.handed.set(key, (handed = new Set()));
      this.remember(batch.topic, key);
    }
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
    this.ledger.moved(key);
    if (records.length > 0) {
      this.lastRecordsAt = Date.now();
      this.handler.accept(records);
    }
    payload.resolveOffset(batch.lastOffset());
    await this.handOverTurn();
  }

  /**
   * Lets I/O run once the hand-over has kept the event loop HAND_OVER_TURN_MS.
   * NOTE: kafkajs hands a fetch's batches over one after the other without leaving the
   * turn (onBatch resolves at once), and one fetch brings up to 10 MB: at 1,000
   * destinations about 700 partitions' worth, about 200 ms of hand-over (more on a busy
   * machine). Until it ended, no request the lanes started could open its connection,
   * no answer was read and nothing was committed; the receivers then got it all at once
   * (docs/architecture.md#measured-figures-behind-the-code).
   */
  private async handOverTurn(): Promise<void> {
    if (performance.now() - this.turnStartedAt < HAND_OVER_TURN_MS) return;
    await nextTurn();
    this.turnStartedAt = performance.now();
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
}

/**
 * The offset kafkajs fetched a batch from.
 * NOTE: kafkajs's Batch has it (batch.js) but its types leave it out.
 */
function fetchedOffsetOf(batch: EachBatchPayload['batch']): string | undefined {
  const { fetchedOffset } = batch as { fetchedOffset?: unknown };
  return typeof fetchedOffset === 'string' ? fetchedOffset : undefined;
}
