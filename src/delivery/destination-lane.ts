// One destination's deliveries in the deliverer's one consumer (the port's partition
// stream): per-partition FIFO queues, bounded in total, run with at most
// `concurrencyPerDestination` requests in flight. Isolation is structural: a destination
// whose URLs all hang fills only its own permits and queue, and only its own partitions
// are paused; the fetch loop and every other lane go on.
//
// The delivery flow: destination-lane.ts, the coordinator of its parts (lane-queues.ts:
// queues, per-user order, the one round robin; lane-permits.ts: circuits, permits, rate
// limit; lane-fetch.ts: pause and resume, due times; batch-fill.ts, `batch`;
// held-retries.ts, `ordering: user`'s retries waiting in the lane, unfinished, so whoever
// owns the partition next keeps the order; docs/webhooks.md#batches, #per-user-order) →
// deliver-event.ts (sign, send, count) → retry-or-dead-letter.ts → the lane's account in
// the stream's commit ledger (src/delivery/commit-ledger.ts: committed out of order).
import type { InboundRecord } from '../kafka/index.js';
import { OpenBatch } from './batch-fill.js';
import type { DeliveryResult } from './deliver-event.js';
import type { PreparedDestination } from './destination-settings.js';
import { EndOfTurn } from './end-of-turn.js';
import { refusedByRebalance } from './kafka-transactions.js';
import { readEnvelope } from './envelope.js';
import { HeldRetries, nodeTimers } from './held-retries.js';
import { LaneFetch } from './lane-fetch.js';
import type { Entry, Head, LaneParts, PartitionQueue, Queued } from './lane-parts.js';
import { LanePermits } from './lane-permits.js';
import type { Grant } from './lane-permits.js';
import { LaneQueues } from './lane-queues.js';
import { isHeldRetry } from './retry-or-dead-letter.js';

export { fullness, laneQueueBound, laneUncommittedBound } from './lane-bounds.js';
export type { LaneParts, LaneStream } from './lane-parts.js';

/** One request's events (taken off where they waited, running): one event, or a batch's. */
interface Request {
  entries: readonly Entry[];
  batch: boolean;
}

const DEFAULT_WRITE_RETRY_MS = 1_000;

const bytesOf = (entry: Entry): number => entry.item.record.value?.length ?? 0;

export class DestinationLane {
  private readonly queues = new LaneQueues();
  private readonly permits: LanePermits<Request>;
  private readonly held = new HeldRetries<Entry>(nodeTimers);
  private readonly inFlight = new Set<Promise<void>>();
  private readonly endOfTurn: EndOfTurn;
  private readonly fetch: LaneFetch;
  private open: OpenBatch<Entry> | undefined;
  /** The paced request's timer: it goes when its rate-limit tokens are there. */
  private pacedTimer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly parts: LaneParts) {
    this.permits = new LanePermits(parts.concurrency, parts.circuits, parts.pace);
    this.endOfTurn = parts.endOfTurn ?? new EndOfTurn();
    this.fetch = new LaneFetch(parts.stream, parts.tierWait, this.queues, parts.queueBound, this.pump);
  }

  /** Records fetched for this lane (one partition, offset order): queued, started as permits allow. */
  accept(records: readonly InboundRecord[]): void {
    const first = records[0];
    if (first === undefined || this.stopping) return;
    const queue = this.queues.queueOf(first.topic, first.partition);
    this.queues.push(queue, records.map((record) => ({ record, envelope: readEnvelope(record.headers, record.timestamp) })));
    this.fetch.accepted(queue);
    this.pump();
    this.fetch.pauseIfFull();
  }

  /** The partition is not ours any more: what of it waits goes (none of it finished: the next owner reads it again); returns its offsets still running. */
  revoke(topic: string, partition: number): string[] {
    const queue = this.queues.find(topic, partition);
    if (queue === undefined) return [];
    const gone = (entry: Entry): boolean => entry.queue === queue;
    this.fetch.drop(queue);
    if (this.permits.paced?.entries.some(gone)) this.cancelPaced();
    if (this.queues.remove(queue)) this.schedulePump();
    // NOTE: not sent yet, so not running: the stream hands them over again, to whichever lane takes the partition.
    for (const { item } of this.open?.drop(gone) ?? []) queue.running.delete(item.record.offset);
    this.held.drop(gone);
    return [...queue.running];
  }

  /** Records queued and not started. */
  get queuedCount(): number {
    return this.queues.queued;
  }

  get runningCount(): number {
    return this.inFlight.size;
  }

  /** Records of an ordered destination parked behind an earlier event of their user. */
  get parkedCount(): number {
    return this.queues.parked;
  }

  /** Whether every URL's circuit is open, so that the lane holds its events (docs/webhooks.md#circuit-breaker). */
  get waitingForCircuits(): boolean {
    return this.fetch.waitingForCircuits;
  }

  /** The settings changed (a reload): what waited on the old URLs' circuits may go now. */
  wake(): void {
    this.schedulePump();
  }

  /** Starts nothing new, drops what waits, waits for the requests in flight (bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.fetch.stop();
    this.parts.commits.close();
    this.cancelPaced();
    this.queues.clear();
    this.held.clear();
    clearTimeout(this.open?.timer);
    this.open = undefined;
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private readonly schedulePump = (): void => {
    this.endOfTurn.run(this.pump);
  };

  /** Starts what may start while permits last (lane-queues.ts `offer`); with `batch`, into one open batch at a time. */
  private readonly pump = (): void => {
    if (this.stopping || this.permits.paced !== undefined) return;
    const settings = this.parts.settings();
    if (settings === undefined) return; // left the config: this lane is being stopped
    const now = Date.now();
    const openUntil = this.parts.circuits.allOpenUntil(settings, now);
    if (openUntil !== undefined) {
      this.fetch.waitForCircuits(openUntil - now);
      this.startEndedWindows(settings, now);
      return;
    }
    this.fetch.circuitsLetThrough();
    const headOf = (queue: PartitionQueue): Head => this.headOf(queue, settings);
    if (settings.batch === undefined) {
      const open = this.open;
      if (open !== undefined) {
        // `batch` was taken out of the config with a batch open: its events go one by one, first.
        clearTimeout(open.timer);
        this.open = undefined;
        this.queues.givenBack(open.entries);
      }
      this.queues.offer(headOf, (entry) => this.request(settings, [entry]));
    } else {
      this.pumpBatches(settings, settings.batch, headOf);
    }
    this.fetch.resumeIfRoom();
  };

  /**
   * With every URL open, the events whose retry window ended go on (each to its dead
   * letter, no request): those in turn first, then partition by partition (no round
   * robin). NOTE: a batching destination's events wait together for the probes.
   */
  private startEndedWindows(settings: PreparedDestination, now: number): void {
    if (settings.batch !== undefined) return;
    const ended = (entry: Entry): boolean => this.parts.tierWait.windowEnded(entry.item.envelope, now);
    for (let first = this.queues.firstReady(); first !== undefined && ended(first); first = this.queues.firstReady()) {
      if (!this.request(settings, [first])) return;
    }
    for (const queue of this.queues.values()) {
      for (;;) {
        const head = this.headOf(queue, settings);
        if (head === 'parked') continue;
        if (head === undefined || !ended(head)) break;
        if (!this.request(settings, [head])) return;
      }
    }
  }

  /** Fills the open batch and sends it when closed; one not full waits `maxWait` for more. */
  private pumpBatches(settings: PreparedDestination, limits: NonNullable<PreparedDestination['batch']>, headOf: (queue: PartitionQueue) => Head): void {
    for (;;) {
      const open = (this.open ??= new OpenBatch(bytesOf));
      if (!open.closed) this.queues.offer(headOf, (entry) => this.join(open, entry, limits), () => !open.closed);
      if (open.entries.length === 0) {
        this.open = undefined;
        return;
      }
      if (open.waitsForMore(limits)) {
        // Nothing more to take now: the batch waits for more, at most maxWait after it first did.
        open.timer ??= setTimeout(() => {
          open.timer = undefined;
          open.closed = true;
          this.pump();
        }, limits.maxWaitMs);
        return;
      }
      open.closed = true;
      if (!this.request(settings, open.entries)) return;
    }
  }

  /** `entry` joins the open batch if it fits (it is then under way). */
  private join(open: OpenBatch<Entry>, entry: Entry, limits: NonNullable<PreparedDestination['batch']>): boolean {
    if (!open.join(entry, limits)) return false;
    this.queues.started(entry);
    this.queues.take(entry);
    return true;
  }

  /** The head of `queue` if it may start: undefined when none, or its partition waits (a due time); 'parked': taken off to wait behind its user's earlier event. */
  private headOf(queue: PartitionQueue, settings: PreparedDestination): Head {
    const item = queue.items[queue.head];
    if (item === undefined || this.fetch.headWaits(queue, item)) return undefined;
    const head = this.queues.headOf(queue, item, settings.ordered);
    if (head === 'parked') this.fetch.parked(queue);
    return head;
  }

  /** One request for `entries` (an event, or a closed batch) if commits keep up and a permit is free (paced: it waits for its tokens, holding the lane); false: the lane is blocked. */
  private request(settings: PreparedDestination, entries: readonly Entry[]): boolean {
    // NOTE: every permit taken is the usual case of a busy lane's pump (a batch filled
    // while its one request is out): nothing below could start it, and a permit freed pumps again.
    if (this.permits.allTaken || this.waitsForCommit()) return false;
    const now = Date.now();
    const admission = this.permits.admit(settings, () => entries.every(({ item }) => this.parts.tierWait.windowEnded(item.envelope, now)), now);
    if (admission === 'no-permit') return false; // a permit frees when a delivery ends, which pumps again
    if ('circuitsOpenUntilMs' in admission) {
      this.fetch.waitForCircuits(admission.circuitsOpenUntilMs - now);
      return false;
    }
    const request: Request = { entries, batch: settings.batch !== undefined };
    if (request.batch) {
      clearTimeout(this.open?.timer);
      this.open = undefined;
    } else {
      this.queues.take(entries[0]!);
      this.queues.started(entries[0]!);
    }
    const { grant, paceMs } = admission;
    // NOTE: waiting for a token holds only this lane (its next request, tokens reserved).
    if (paceMs > 0) {
      this.permits.wait(request, grant);
      this.pacedTimer = setTimeout(() => this.startPaced(), paceMs);
      return false;
    }
    this.send(request, settings, grant);
    return true;
  }

  /** NOTE: a delivery finished, not committed, is redone after a SIGKILL: while commits fail, or with many such, the lane waits for its account to open again. */
  private waitsForCommit(): boolean {
    const { commits } = this.parts;
    if (commits.mayStart()) return false;
    commits.whenOpen(this.schedulePump);
    return true;
  }

  /** The paced request's tokens are there: it goes (a lane stopping or a destination gone gives them back, its events not in turn again). */
  private startPaced(): void {
    const paced = this.permits.unpace();
    if (paced === undefined) return;
    const settings = this.parts.settings();
    if (this.stopping || settings === undefined) {
      this.permits.giveBack(paced.grant, Date.now());
      for (const { queue, item } of paced.request.entries) queue.running.delete(item.record.offset);
    } else {
      this.send(paced.request, settings, paced.grant);
    }
    this.pump();
  }

  private cancelPaced(): void {
    const paced = this.permits.unpace();
    if (paced === undefined) return;
    clearTimeout(this.pacedTimer);
    this.permits.giveBack(paced.grant, Date.now());
    // NOTE: not sent, so not running: first in turn again (a revoked partition's are dropped by revoke).
    this.queues.givenBack(paced.request.entries);
  }

  /** Delivers one event, or a batch in one request; each event's offset is done once its own outcome is safe in Kafka. */
  private send({ entries, batch }: Request, settings: PreparedDestination, grant: Grant): void {
    const { admitted } = grant;
    const hold = settings.ordered;
    const failed = (error: unknown): void => {
      this.endTask(task, entries, grant);
      for (const entry of entries) this.writeFailed(entry, error);
    };
    const task: Promise<void> = batch
      ? this.parts.events.deliverBatch({ events: entries.map(({ item }) => item), settings, admitted, hold }).then((outcomes) => {
          this.endTask(task, entries, grant);
          outcomes.forEach((outcome, i) => (outcome.status === 'fulfilled' ? this.settle(entries[i]!, outcome.value) : this.writeFailed(entries[i]!, outcome.reason)));
        }, failed)
      : this.parts.events.deliver({ record: entries[0]!.item.record, envelope: entries[0]!.item.envelope, settings, admitted, hold }).then((result) => {
          this.endTask(task, entries, grant);
          this.settle(entries[0]!, result);
        }, failed);
    this.inFlight.add(task);
  }

  private endTask(task: Promise<void>, entries: readonly Entry[], grant: Grant): void {
    this.inFlight.delete(task);
    for (const { queue, item } of entries) queue.running.delete(item.record.offset);
    this.permits.release(grant);
    this.schedulePump();
  }

  /** An event's attempt ended: finished (delivered, retry or dead letter written), or held in the lane for its next attempt. */
  private settle(entry: Entry, result: DeliveryResult | void): void {
    if (!isHeldRetry(result)) {
      const { record } = entry.item;
      this.parts.commits.finish(record.topic, record.partition, record.offset);
      this.queues.done(entry);
    } else if (!this.givenBack(entry)) {
      this.holdUntil(entry, { ...entry.item, envelope: result.held }, (result.held.dueAtMs ?? Date.now()) - Date.now());
    }
  }

  /** Whether `entry`'s partition went while it was in flight (or the lane stops): not finished, so the stream fetches it again for whoever owns it. */
  private givenBack({ queue, item: { record } }: Entry): boolean {
    if (!this.stopping && this.queues.holds(queue)) return false;
    this.parts.stream.release(record.topic, record.partition, record.offset);
    return true;
  }

  /**
   * NOTE: a retry or dead letter that could not be written leaves its record unfinished
   * (never committed) and back at the head of its partition's queue (an ordered
   * destination's: held in the lane, still ahead of its user's later events), attempted
   * again after a pause: a duplicate request at worst, never a loss, never a crash.
   */
  private writeFailed(entry: Entry, error: unknown): void {
    const { queue, item } = entry;
    const { record } = item;
    // A rebalance (the group moved on, or this member is between generations) is no error: the partition's owner attempts the event.
    const rebalance = refusedByRebalance(error);
    this.parts.logger[rebalance ? 'warn' : 'error'](
      { err: error, topic: record.topic, partition: record.partition, offset: record.offset },
      'could not write a retry or dead letter to Kafka; the event will be attempted again',
    );
    if (this.givenBack(entry)) return;
    const writeRetryMs = this.parts.writeRetryMs ?? DEFAULT_WRITE_RETRY_MS;
    if (this.queues.holdsUser(entry.user)) return this.holdUntil(entry, item, writeRetryMs);
    this.queues.putBack(queue, item);
    this.fetch.waitUntilDue(queue, writeRetryMs);
  }

  /** An ordered destination's event waits in the lane `ms`, unfinished, its user's later events parked behind it; then it is in turn again. */
  private holdUntil(entry: Entry, item: Queued, ms: number): void {
    this.held.hold({ ...entry, item }, ms, (due) => {
      if (this.stopping) return;
      this.queues.inTurn(due);
      this.pump();
    });
  }
}
