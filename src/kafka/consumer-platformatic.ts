// The port's consumer runtime on @platformatic/kafka (consumer.ts picks it for the
// router's and the audiences' consumers). That client hands out one stream of messages
// and heartbeats in the background; the batches, their commits and what survives a
// rebalance are ours:
//
// - records are queued per partition as they arrive; a partition whose queue is not
//   empty and has no batch running gets one (all it has queued, up to a cap), with up
//   to `partitionsConsumedConcurrently` partitions at once, each in offset order;
// - the stream is paused while too many records wait, so memory stays bounded;
// - a (re)join starts every assigned partition again from its last commit, else from
//   the start `fromBeginning` names: the queues are emptied, the batches in hand are
//   no longer owned (they finish, and commit nothing: duplicates, no loss), and the
//   stream is replaced by a new one, whose positions come only from the commits (see
//   renewStream for why the old one cannot be kept);
// - a group that commits nothing (`commit: none`) has no positions to go back to: on a
//   rejoin its stream carries on, and so do the queues of the partitions it keeps;
// - a batch's commit names the record after its last one marked done (offset + 1), and
//   is retried until done while the partition is ours (commit.ts); the commits of
//   batches that finish while a commit request is in flight leave together in the next
//   (commit-merger.ts);
// - a failed batch (or a failed stream) ends the stream; after a pause a new one reads
//   again from the commits, as kafkajs's restart after a crash does.
// docs/architecture.md#two-kafka-clients-behind-the-port says the same for users.
import { Consumer } from '@platformatic/kafka';
import type { GroupAssignment, Message, MessagesStream } from '@platformatic/kafka';
import type { Logger } from 'pino';
import { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS } from './client.js';
import type { KafkaClient } from './client.js';
import { commitUntilDone } from './commit.js';
import { CommitMerger } from './commit-merger.js';
import { ForeignAssignment, foreignTopics } from './foreign-assignment.js';
import type { BatchHandler, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from './consumer-contract.js';
import { fromPlatformaticMessage, platformaticOptions } from './platformatic-client.js';

/** Records waiting (all partitions) above which the stream pauses; it resumes below half. */
const MAX_QUEUED_RECORDS = 10_000;
/** The most records one batch takes. */
const MAX_BATCH_RECORDS = 5_000;
/** The first wait before a new stream after a failure; doubles up to the max. */
const RESTART_DELAY_MS = 300;
const MAX_RESTART_DELAY_MS = 10_000;

interface PartitionQueue {
  topic: string;
  partition: number;
  messages: Message[];
  running: boolean;
}

const keyOf = (topic: string, partition: number): string => `${topic}:${partition}`;

type Stream = MessagesStream<Buffer, Buffer, Buffer, Buffer>;

/** Starts a group member on `settings.topics` on @platformatic/kafka; resolves once its stream runs. */
export async function startPlatformaticConsumer(
  client: KafkaClient,
  settings: ConsumerSettings,
  handler: BatchHandler,
  events: ConsumerEvents,
  logger: Logger,
): Promise<RunningConsumer> {
  const consumer = new Consumer({
    ...platformaticOptions(client.settings, client.clientId),
    groupId: settings.groupId,
    sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS,
    heartbeatInterval: CONSUMER_HEARTBEAT_INTERVAL_MS,
    autocommit: false,
    ...(settings.maxBytesPerPartition !== undefined ? { maxBytesPerPartition: settings.maxBytesPerPartition } : {}),
    ...(settings.maxBytes !== undefined ? { maxBytes: settings.maxBytes } : {}),
    ...(settings.maxWaitTimeInMs !== undefined ? { maxWaitTime: settings.maxWaitTimeInMs } : {}),
    ...(settings.minBytes !== undefined ? { minBytes: settings.minBytes } : {}),
  });
  const runtime = new StreamRuntime(consumer, settings, handler, events, logger);
  try {
    await runtime.open();
  } catch (error) {
    // The caller gets no handle to stop it with: leave nothing connected behind.
    await consumer.close(true).catch(() => undefined);
    throw error;
  }
  return {
    assignmentProblem: () => runtime.foreign.notReady(),
    stop: () => runtime.stop(),
    async disconnect() {
      await runtime.stop();
      await consumer.close();
    },
  };
}

class StreamRuntime {
  /** The stream read from; records of any other (an older one, closing) are ignored. */
  private stream: Stream | undefined;
  /** Older streams being closed; stop() waits for them (the client leaves no group while one reads). */
  private readonly retiring = new Set<Promise<void>>();
  private readonly queues = new Map<string, PartitionQueue>();
  private assigned = new Set<string>();
  /** Bumped on every (re)join (that reads again from the commits) and stream restart: a batch of an older epoch is not owned any more. */
  private epoch = 0;
  private joins = 0;
  private queued = 0;
  private running = 0;
  private paused = false;
  private scheduled = false;
  private stopping = false;
  private restartDelayMs = RESTART_DELAY_MS;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly idle = new Set<() => void>();
  private readonly concurrency: number;
  /** The commits of batches that finish close together, as one request (commit-merger.ts). */
  private readonly commits: CommitMerger;
  readonly foreign: ForeignAssignment;

  constructor(
    private readonly consumer: Consumer,
    private readonly settings: ConsumerSettings,
    private readonly handler: BatchHandler,
    private readonly events: ConsumerEvents,
    private readonly logger: Logger,
  ) {
    this.concurrency = Math.max(1, settings.partitionsConsumedConcurrently ?? 1);
    this.foreign = new ForeignAssignment(settings.groupId, logger);
    this.commits = new CommitMerger(async (offsets) => {
      await consumer.commit({ offsets });
    });
    consumer.on('consumer:group:join', (payload) => this.onJoin(payload.memberId, payload.assignments ?? consumer.assignments ?? []));
  }

  async open(): Promise<void> {
    const stream = await this.consumer.consume({
      topics: [...this.settings.topics],
      mode: 'committed',
      fallbackMode: this.settings.fromBeginning ? 'earliest' : 'latest',
      autocommit: false,
      sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS,
      heartbeatInterval: CONSUMER_HEARTBEAT_INTERVAL_MS,
    });
    if (this.stopping) {
      this.retire(stream);
      return;
    }
    this.stream = stream;
    // NOTE: the first join happened inside consume(), before this listener could see it.
    if (this.joins === 0 && this.consumer.memberId !== null) this.onJoin(this.consumer.memberId, this.consumer.assignments ?? []);
    stream.on('data', (message: Message) => {
      if (stream === this.stream) this.onMessage(message);
    });
    stream.on('error', (error: Error) => this.onStreamError(stream, error));
    const { onFetch } = this.events;
    if (onFetch) {
      stream.on('fetch', () => {
        if (stream === this.stream) onFetch();
      });
    }
  }

  /**
   * NOTE: this client takes whatever the group's leader assigns, topics it does not
   * subscribe to included (a leader of another deployment sharing the group id assigns
   * its own topics): those partitions are left out here, never consumed nor committed.
   */
  private onJoin(memberId: string, assignments: readonly GroupAssignment[]): void {
    this.joins += 1;
    const subscribed = new Set(this.settings.topics);
    const own = assignments.filter((a) => subscribed.has(a.topic));
    this.foreign.joined(foreignTopics(assignments.map((a) => a.topic), subscribed));
    this.assigned = new Set(own.flatMap((a) => a.partitions.map((p) => keyOf(a.topic, p))));
    this.restartDelayMs = RESTART_DELAY_MS;
    if (this.settings.commit.kind === 'none') {
      this.dropUnassigned();
    } else {
      this.epoch += 1;
      this.dropQueued();
      if (this.stream !== undefined && !this.stopping) this.renewStream();
    }
    this.events.onJoin?.(Object.fromEntries(own.map((a) => [a.topic, [...a.partitions]])), memberId);
  }

  /**
   * Replaces the stream after a rejoin, so that every assigned partition is read again
   * from its commit (else from where `fromBeginning` says).
   *
   * NOTE: the stream of @platformatic/kafka (2.12) refreshes its positions from the
   * commits on a join, but keeping it loses records (platformatic/kafka#223, #267): a
   * fetch in flight at the join is not cancelled, and when its answer comes after the
   * refresh it moves the partition's position past it, over the records between the
   * commit and that answer, which were dropped from the queue here; and a partition
   * with no commit yet keeps its position, past its dropped records. A new stream has
   * no fetch in flight, and takes its positions from the commits alone.
   * NOTE: the new stream is asked for before the old one closes: the client counts the
   * streams reading each topic, and a consume() that finds none joins the group again
   * (a rejoin per rejoin). consume() on a member that is in the group and reads these
   * topics only makes a stream: no join, the heartbeats go on.
   */
  private renewStream(): void {
    const old = this.stream;
    this.stream = undefined;
    this.paused = false;
    const renewed = this.open();
    if (old !== undefined) this.retire(old);
    renewed.catch((error: unknown) => this.fail(error));
  }

  /** Closes a stream no longer read from; stop() waits until it is closed. */
  private retire(stream: Stream): void {
    const closing = stream.close().catch((error: unknown) => this.logger.debug({ err: error }, 'closing a replaced consumer stream failed'));
    this.retiring.add(closing);
    void closing.finally(() => this.retiring.delete(closing));
  }

  private dropQueued(): void {
    for (const queue of this.queues.values()) queue.messages = [];
    this.queued = 0;
    this.resumeIfRoom();
  }

  /** A group that commits nothing keeps its stream (and its positions) on a rejoin: only the partitions it lost are dropped. */
  private dropUnassigned(): void {
    for (const [key, queue] of this.queues) {
      if (this.assigned.has(key)) continue;
      this.queued -= queue.messages.length;
      queue.messages = [];
    }
    this.resumeIfRoom();
  }

  private onMessage(message: Message): void {
    if (this.stopping) return;
    const key = keyOf(message.topic, message.partition);
    if (!this.assigned.has(key)) return;
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic: message.topic, partition: message.partition, messages: [], running: false };
      this.queues.set(key, queue);
    }
    const last = queue.messages.at(-1);
    if (last !== undefined && message.offset <= last.offset) {
      // NOTE: not expected from one stream (a rejoin replaces it, renewStream): a guard
      // that keeps one copy of each record, in offset order, should the client read a
      // partition again from an earlier position.
      const kept = queue.messages.filter((m) => m.offset < message.offset);
      this.queued -= queue.messages.length - kept.length;
      queue.messages = kept;
    }
    queue.messages.push(message);
    this.queued += 1;
    if (this.queued >= MAX_QUEUED_RECORDS && !this.paused) {
      this.paused = true;
      this.stream?.pause();
    }
    // NOTE: the records of one fetch arrive one after the other in the same tick; start
    // batches only once they are all queued, so that a batch takes them together.
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.schedule();
      });
    }
  }

  private resumeIfRoom(): void {
    if (this.paused && this.queued < MAX_QUEUED_RECORDS / 2 && !this.stopping) {
      this.paused = false;
      this.stream?.resume();
    }
  }

  private schedule(): void {
    if (this.stopping) return;
    for (const queue of this.queues.values()) {
      if (this.running >= this.concurrency) return;
      if (queue.running || queue.messages.length === 0) continue;
      const taken = queue.messages.length <= MAX_BATCH_RECORDS ? queue.messages : queue.messages.slice(0, MAX_BATCH_RECORDS);
      queue.messages = taken === queue.messages ? [] : queue.messages.slice(MAX_BATCH_RECORDS);
      this.queued -= taken.length;
      this.resumeIfRoom();
      queue.running = true;
      this.running += 1;
      void this.runBatch(queue, taken).finally(() => {
        queue.running = false;
        // Round robin: the partition just served goes last, so the others' turn comes first.
        const key = keyOf(queue.topic, queue.partition);
        if (this.queues.get(key) === queue) {
          this.queues.delete(key);
          this.queues.set(key, queue);
        }
        this.running -= 1;
        if (this.running === 0) for (const wake of this.idle) wake();
        this.schedule();
      });
    }
  }

  private owned(epoch: number, key: string): boolean {
    return !this.stopping && this.epoch === epoch && this.assigned.has(key);
  }

  private async runBatch(queue: PartitionQueue, messages: Message[]): Promise<void> {
    const { topic, partition } = queue;
    const key = keyOf(topic, partition);
    const epoch = this.epoch;
    const records = messages.map(fromPlatformaticMessage);
    // NOTE: the index of the last record marked done, found by its offset string; the
    // search starts there (marks move forward), so a batch costs no lookup table.
    let doneIndex = -1;
    const indexOf = (offset: string): number => {
      for (let i = doneIndex + 1; i < records.length; i++) if (records[i]!.offset === offset) return i;
      for (let i = Math.min(doneIndex, records.length - 1); i >= 0; i--) if (records[i]!.offset === offset) return i;
      return -1;
    };
    const view: RecordBatch = {
      topic,
      partition,
      records,
      // NOTE: this client heartbeats on its own timer; marking done only records the offset.
      markDone: async (offset) => {
        const index = indexOf(offset);
        if (index >= 0) doneIndex = index;
      },
      stillOwned: () => this.owned(epoch, key),
    };
    try {
      await this.handler(view);
    } catch (error) {
      this.fail(error);
      return;
    }
    const done = doneIndex >= 0 ? messages[doneIndex] : undefined;
    this.requeueNotDone(queue, messages, done, epoch);
    // NOTE: not owned() here: a batch that finishes after stop() began still commits (stop waits for it).
    const stillOurs = () => this.epoch === epoch && this.assigned.has(key);
    if (this.settings.commit.kind === 'none' || done === undefined || !stillOurs()) return;
    try {
      await commitUntilDone(() => this.commits.commit({ topic, partition, offset: done.offset + 1n, leaderEpoch: done.leaderEpoch }), {
        stillOwned: stillOurs,
        logger: this.logger,
        what: `${topic} partition ${partition}`,
      });
    } catch (error) {
      // A lost generation: this client rejoins by itself and reads again from the last commit.
      this.logger.debug({ err: error, topic, partition }, 'commit refused (the group moved on); the partition is read again from its last commit');
    }
  }

  /**
   * The records of a batch after the last one marked done go back to the front of the
   * partition's queue: the next batch starts with them (as kafkajs fetches again from the
   * first record not resolved). Not when the partition moved on: it is read again from
   * its last commit then.
   */
  private requeueNotDone(queue: PartitionQueue, messages: readonly Message[], done: Message | undefined, epoch: number): void {
    if (this.stopping || this.epoch !== epoch) return;
    const rest = done === undefined ? messages : messages.filter((m) => m.offset > done.offset);
    if (rest.length === 0) return;
    const first = queue.messages[0];
    const kept = first === undefined ? rest : rest.filter((m) => m.offset < first.offset);
    queue.messages = [...kept, ...queue.messages];
    this.queued += kept.length;
  }

  private onStreamError(stream: Stream, error: Error): void {
    if (stream !== this.stream) return;
    this.fail(error);
  }

  /**
   * A batch or the stream failed: report it, drop what is queued, and read again from
   * the last commits with a new stream after a pause. An authentication failure stops
   * the consumer for good (waiting would not help).
   */
  private fail(error: unknown): void {
    if (this.stopping) return;
    const failure = error instanceof Error ? error : new Error(String(error));
    const restart = (failure as { code?: unknown }).code !== 'PLT_KFK_AUTHENTICATION';
    this.epoch += 1;
    this.dropQueued();
    const old = this.stream;
    this.stream = undefined;
    if (old !== undefined) this.retire(old);
    this.events.onCrash?.(failure, restart);
    if (!restart || this.restartTimer !== undefined) return;
    const delay = this.restartDelayMs;
    this.restartDelayMs = Math.min(MAX_RESTART_DELAY_MS, delay * 2);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.stopping) return;
      this.epoch += 1;
      this.open().catch((reopenError: unknown) => this.fail(reopenError));
    }, delay);
  }

  /** Stops fetching; resolves once the batches in hand are finished (and committed). */
  async stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      clearTimeout(this.restartTimer);
      this.stream?.pause();
      for (const queue of this.queues.values()) queue.messages = [];
      this.queued = 0;
    }
    while (this.running > 0) await new Promise<void>((resolve) => this.idle.add(resolve)).finally(() => this.idle.clear());
    const stream = this.stream;
    this.stream = undefined;
    if (stream !== undefined) {
      await stream.close().catch((error: unknown) => this.logger.debug({ err: error }, 'closing the consumer stream failed'));
      this.events.onStop?.();
    }
    await Promise.all(this.retiring);
  }
}
