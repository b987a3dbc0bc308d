// A verbatim copy of src/delivery/destination-lane.ts as it was before it was carved into parts (main a887d93),
// imports pointed at src/: the reference the carved lane is compared with (test/unit/delivery/lane-differential.test.ts).
// Frozen on purpose: a change of the lane's behaviour made on purpose ends this reference; delete both files then.

// One destination's deliveries in the deliverer's one consumer (the port's partition
// stream): the records of its topics wait in per-partition FIFO queues, bounded in
// total, and run with at most `concurrencyPerDestination` requests in flight. Isolation
// is structural: a destination whose URLs all hang fills only its own permits and its
// own queue, and when that queue is full only its own partitions are paused; the fetch
// loop and every other lane go on.
//
// The delivery flow, file by file: destination-lane.ts (queue, due time, circuits,
// rate limit, permits, pause/resume) → deliver-event.ts (sign, send to the URLs, count)
// → retry-or-dead-letter.ts (a failure written to a retry tier or the dead letters) →
// the lane's account in the stream's commit ledger (src/delivery/commit-ledger.ts:
// committed within about one commit round trip, out of order).
//
// Two modes a destination may set (docs/webhooks.md#batches, #per-user-order):
// - `batch`: the lane fills one open batch from its queues (round robin) and sends it
//   as one request on one permit when full, or `maxWait` after its first event.
// - `ordering: user`: an event whose user (the record key) has one under way is parked
//   (user-order.ts) instead of started; when that one is done, the next parked one is
//   `ready`. A failed event's next attempt waits in the lane (`held`), not in a retry
//   tier, and stays unfinished with its user's later events: the partition's commit
//   stays below them, so whoever owns the partition next keeps the order.
import type { Logger } from 'pino';
import type { InboundRecord } from '../../src/kafka/index.js';
import { partitionKey } from '../../src/kafka/index.js';
import type { CommitAccount } from '../../src/delivery/commit-account.js';
import { fitsIn, isFull } from '../../src/delivery/batch.js';
import type { BatchFill } from '../../src/delivery/batch.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from '../../src/delivery/deliver-event.js';
import type { PreparedDestination } from '../../src/delivery/destination-settings.js';
import { readEnvelope } from '../../src/delivery/envelope.js';
import type { Envelope } from '../../src/delivery/envelope.js';
import { EndOfTurn } from '../../src/delivery/end-of-turn.js';
import type { RatePace } from '../../src/delivery/rate-pace.js';
import { isHeldRetry } from '../../src/delivery/retry-or-dead-letter.js';
import type { RetryTierWait } from '../../src/delivery/retry-tier-wait.js';
import { Semaphore } from '../../src/delivery/semaphore.js';
import { countBits } from '../../src/delivery/url-circuits.js';
import type { Admitted, UrlCircuits } from '../../src/delivery/url-circuits.js';
import { UserOrder } from '../../src/delivery/user-order.js';

/** The stream's side a lane uses (src/delivery/partition-stream.ts): the fetch of its partitions. */
export interface LaneStream {
  pause(topic: string, partition: number, resumeAt?: number): void;
  resume(topic: string, partition: number): void;
  /** A record handed over that this lane will not finish: to be fetched again. */
  release(topic: string, partition: number, offset: string): void;
}

export interface LaneParts {
  destinationId: string;
  /** `delivery.concurrencyPerDestination`: requests in flight at most. */
  concurrency: number;
  /** Records queued (fetched, not started) at most before the lane's partitions are paused. */
  queueBound: number;
  /** The destination's current settings; undefined once it left the config. */
  settings: () => PreparedDestination | undefined;
  circuits: UrlCircuits;
  pace: RatePace;
  tierWait: RetryTierWait;
  events: {
    deliver(job: DeliveryJob): Promise<DeliveryResult | void>;
    deliverBatch(job: BatchJob): Promise<PromiseSettledResult<DeliveryResult>[]>;
  };
  stream: LaneStream;
  /**
   * The lane's account in the stream's commit ledger, made with laneUncommittedBound:
   * where its deliveries finish, and whether it may start more.
   */
  commits: CommitAccount;
  logger: Logger;
  /** After a failed retry or dead-letter write, how long before the event is attempted again. */
  writeRetryMs?: number;
  /** Where the lane's pumps after a delivery ended are run, shared by every lane of a deliverer (end-of-turn.ts); one of its own if absent. */
  endOfTurn?: EndOfTurn;
}

interface Queued {
  record: InboundRecord;
  envelope: Envelope;
}

interface PartitionQueue {
  topic: string;
  partition: number;
  items: Queued[];
  /** Index of the head in `items` (shifted lazily). */
  head: number;
  /** Paused because the lane is full. */
  full: boolean;
  /** Its head waits for its due time (a retry not due, a failed write): the timer that starts it. */
  dueTimer: NodeJS.Timeout | undefined;
  /** Offsets running now. */
  running: Set<string>;
  /** Its records parked behind an earlier event of their user (ordered destinations). */
  parked: number;
}

/** A record taken, or about to be taken, off its partition's queue; `user`: its record key. */
interface Entry {
  queue: PartitionQueue;
  item: Queued;
  user: string;
}

/** The batch being filled: its events, their size, and the timer that closes it at `maxWait`. */
interface OpenBatch {
  entries: Entry[];
  fill: BatchFill;
  timer: NodeJS.Timeout | undefined;
  /** Takes no more events: full, or its `maxWait` passed; it waits for a permit. */
  closed: boolean;
}

/** A request that waits for its rate-limit tokens (reserved already). */
interface Paced {
  /** Its events (one, or a batch's), taken off their queues and counted as running. */
  entries: Entry[];
  admitted: Admitted;
  weight: number;
  timer: NodeJS.Timeout;
  send(settings: PreparedDestination, admitted: Admitted, weight: number): void;
}

/** An ordered destination's failed event waiting in the lane for its next attempt. */
interface Held {
  entry: Entry;
  timer: NodeJS.Timeout;
}

const DEFAULT_WRITE_RETRY_MS = 1_000;

/** How many records a lane may queue: several rounds of its permits, at least a few fetches' worth. */
export function laneQueueBound(concurrency: number): number {
  return Math.max(8 * concurrency, 512);
}

/**
 * How many of its deliveries a lane may have finished and not yet committed before it
 * starts no more: four times its permits, at least 512. A commit is asked for early at half.
 * NOTE: a SIGKILL redoes what finished since the last commit, on top of what was in
 * flight. A lane working off a backlog finishes thousands a second: seen in the chaos
 * harness, one such lane redid thousands of deliveries after a broker stop and a
 * SIGKILL, all finished in the second before commits were found stalled
 * (COMMIT_STALL_MS). The bound must still let a busy lane run through a commit's round
 * trip: at twice its permits a lane at full speed waited for commits most of the time
 * (deliver bench at 0 ms; figures: docs/benchmarks.md#figures-behind-the-code).
 */
export function laneUncommittedBound(concurrency: number): number {
  return Math.max(512, 4 * concurrency);
}

/**
 * Whether a lane with `queued` records should pause (at or over the bound) or resume
 * (at or below three quarters of it) its partitions; in between it keeps them as they are.
 *
 * NOTE: a resumed partition is fetched only once the fetch under way returns (the
 * deliverer's fetch waits only 50 ms while a lane is full, roomFetchWaitMs): the three
 * quarters it keeps queued are what it works on meanwhile.
 */
export function fullness(queued: number, bound: number): 'pause' | 'resume' | 'keep' {
  if (queued >= bound) return 'pause';
  if (queued <= Math.floor((bound * 3) / 4)) return 'resume';
  return 'keep';
}

export class DestinationLane {
  private readonly queues = new Map<string, PartitionQueue>();
  private readonly slots: Semaphore;
  private readonly inFlight = new Set<Promise<void>>();
  private queued = 0;
  private paced: Paced | undefined;
  private stopping = false;
  private cursor = 0;
  private readonly endOfTurn: EndOfTurn;
  /** Ordered destinations: whose event is under way, and what waits behind it. */
  private readonly order = new UserOrder<Entry>();
  /** Events whose turn came (a parked one whose predecessor is done, a held retry now due), oldest first; they start before the queues. */
  private ready: Entry[] = [];
  private readonly held = new Set<Held>();
  private open: OpenBatch | undefined;
  /** Every URL's circuit is open: nothing starts, the partitions are paused, and this timer pumps when one may let a request through. */
  private circuitWait: NodeJS.Timeout | undefined;

  constructor(private readonly parts: LaneParts) {
    this.slots = new Semaphore(parts.concurrency);
    this.endOfTurn = parts.endOfTurn ?? new EndOfTurn();
  }

  /** Records fetched for this lane (one partition, offset order): queued, started as permits allow. */
  accept(records: readonly InboundRecord[]): void {
    const first = records[0];
    if (first === undefined || this.stopping) return;
    const queue = this.queueOf(first.topic, first.partition);
    for (const record of records) queue.items.push({ record, envelope: readEnvelope(record.headers, record.timestamp) });
    this.queued += records.length;
    if (this.circuitWait !== undefined) this.parts.stream.pause(queue.topic, queue.partition);
    this.pump();
    if (fullness(this.queued, this.parts.queueBound) === 'pause') this.pauseFull();
  }

  /**
   * The partition is not ours any more: drop what waits (queued, parked, held for a
   * retry: none of it finished, so the next owner reads it again); the offsets still
   * running are returned.
   */
  revoke(topic: string, partition: number): string[] {
    const key = partitionKey(topic, partition);
    const queue = this.queues.get(key);
    if (queue === undefined) return [];
    this.dropQueued(queue);
    if (this.paced?.entries.some((entry) => entry.queue === queue)) this.cancelPaced();
    for (const entry of this.order.forget((event) => event.queue === queue)) {
      entry.queue.parked -= 1;
      if (entry.queue === queue) continue;
      // Parked (from another partition, a retry tier's) behind an event that went with the partition: in turn again.
      if (this.order.mayStart(entry.user)) {
        this.order.started(entry);
        this.ready.push(entry);
      } else {
        this.order.park(entry);
        entry.queue.parked += 1;
      }
    }
    if (this.ready.length > 0) this.schedulePump();
    const open = this.open;
    if (open !== undefined) {
      // NOTE: not sent yet, so not running: the stream hands them over again, to whichever lane takes the partition.
      const leaving = open.entries.filter((entry) => entry.queue === queue);
      for (const { item } of leaving) queue.running.delete(item.record.offset);
      open.entries = open.entries.filter((entry) => entry.queue !== queue);
      open.fill = { events: open.entries.length, bodyBytes: open.entries.reduce((sum, { item }) => sum + (item.record.value?.length ?? 0), 0) };
    }
    this.ready = this.ready.filter((entry) => entry.queue !== queue);
    for (const held of this.held) {
      if (held.entry.queue !== queue) continue;
      clearTimeout(held.timer);
      this.held.delete(held);
    }
    this.queues.delete(key);
    return [...queue.running];
  }

  /** Records queued and not started. */
  get queuedCount(): number {
    return this.queued;
  }

  get runningCount(): number {
    return this.inFlight.size;
  }

  /** Records of an ordered destination parked behind an earlier event of their user. */
  get parkedCount(): number {
    return this.order.parked;
  }

  /** Whether every URL's circuit is open, so that the lane holds its events (docs/webhooks.md#circuit-breaker). */
  get waitingForCircuits(): boolean {
    return this.circuitWait !== undefined;
  }

  /** The destination's settings changed (a reload): what waited on the old URLs' circuits may go now. */
  wake(): void {
    this.schedulePump();
  }

  /** Starts nothing new, drops the queues, waits for the requests in flight (bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.circuitWait);
    this.circuitWait = undefined;
    this.parts.commits.close();
    this.cancelPaced();
    for (const queue of this.queues.values()) this.dropQueued(queue);
    this.order.forget(() => true);
    this.ready = [];
    for (const held of this.held) clearTimeout(held.timer);
    this.held.clear();
    if (this.open !== undefined) clearTimeout(this.open.timer);
    this.open = undefined;
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private queueOf(topic: string, partition: number): PartitionQueue {
    const key = partitionKey(topic, partition);
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, items: [], head: 0, full: false, dueTimer: undefined, running: new Set(), parked: 0 };
      this.queues.set(key, queue);
    }
    return queue;
  }

  private dropQueued(queue: PartitionQueue): void {
    this.queued -= queue.items.length - queue.head;
    queue.items = [];
    queue.head = 0;
    clearTimeout(queue.dueTimer);
    queue.dueTimer = undefined;
  }

  private readonly schedulePump = (): void => {
    this.endOfTurn.run(this.pump);
  };

  /**
   * Starts what may start while permits last: events whose turn came first, then the
   * queues' heads, one partition after the other (round robin, so no partition of the
   * lane starves another); with `batch`, into one open batch at a time.
   */
  private readonly pump = (): void => {
    if (this.stopping || this.paced !== undefined) return;
    const settings = this.parts.settings();
    if (settings === undefined) return; // left the config: this lane is being stopped
    const now = Date.now();
    const openUntil = this.parts.circuits.allOpenUntil(settings, now);
    if (openUntil !== undefined) {
      this.waitForCircuits(openUntil - now);
      this.startEndedWindows(settings, now);
      return;
    }
    if (this.circuitWait !== undefined) this.endCircuitWait();
    if (settings.batch === undefined) this.pumpEvents(settings);
    else this.pumpBatches(settings);
    this.resumeIfRoom();
  };

  private pumpEvents(settings: PreparedDestination): void {
    const open = this.open;
    if (open !== undefined) {
      // `batch` was taken out of the config with a batch open: its events go one by one, first.
      clearTimeout(open.timer);
      this.open = undefined;
      for (const { queue, item } of open.entries) queue.running.delete(item.record.offset);
      this.ready.unshift(...open.entries);
    }
    while (this.ready.length > 0) {
      if (!this.request(settings, [this.ready[0]!])) return;
    }
    this.offerHeads(settings, (head) => this.request(settings, [head]));
  }

  /**
   * With every URL open: the events whose retry window ended go on (each to its dead
   * letter, no request), the heads of their partitions first; the rest wait. NOTE: a
   * batching destination's events wait together, window ended or not, for the probes.
   */
  private startEndedWindows(settings: PreparedDestination, now: number): void {
    if (settings.batch !== undefined) return;
    const ended = (entry: Entry) => this.parts.tierWait.windowEnded(entry.item.envelope, now);
    while (this.ready[0] !== undefined && ended(this.ready[0])) {
      if (!this.request(settings, [this.ready[0]])) return;
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

  /**
   * Fills the open batch (events whose turn came, then the queues' heads) and sends it
   * when full; one not full waits `maxWait` after its first event for more.
   */
  private pumpBatches(settings: PreparedDestination): void {
    const limits = settings.batch!;
    for (;;) {
      const open = this.open ?? (this.open = { entries: [], fill: { events: 0, bodyBytes: 0 }, timer: undefined, closed: false });
      if (!open.closed) this.fillBatch(open, settings);
      if (open.entries.length === 0) {
        this.open = undefined;
        return;
      }
      if (!open.closed && !isFull(open.fill, limits)) {
        // Nothing more to take now: the batch waits for more, at most maxWait after its first event.
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

  /** Takes events into `open` until it is full or nothing may join now. */
  private fillBatch(open: OpenBatch, settings: PreparedDestination): void {
    const limits = settings.batch!;
    while (this.ready.length > 0) {
      if (!this.join(open, this.ready[0]!, limits)) return;
      this.ready.shift();
    }
    this.offerHeads(
      settings,
      (head) => {
        if (!this.join(open, head, limits)) return false;
        this.takeHead(head.queue);
        return true;
      },
      () => !open.closed,
    );
  }

  /**
   * Offers the queues' heads that may start to `take`, one partition after the other
   * (round robin, so no partition of the lane starves another), until `take` declines
   * one (that queue keeps its turn), `more` says stop, or no queue has a head that may
   * start.
   */
  private offerHeads(settings: PreparedDestination, take: (head: Entry) => boolean, more: () => boolean = () => true): void {
    const queues = [...this.queues.values()];
    let idle = 0;
    while (idle < queues.length && this.queued > 0 && more()) {
      const queue = queues[this.cursor++ % queues.length]!;
      const head = this.headOf(queue, settings);
      if (head === 'parked') {
        idle = 0;
        continue;
      }
      if (head === undefined) {
        idle += 1;
        continue;
      }
      if (!take(head)) {
        this.cursor -= 1;
        return;
      }
      idle = 0;
    }
  }

  /** Adds `entry` to `open` if it fits (it is then under way); closes the batch when it does not, or when it is full. */
  private join(open: OpenBatch, entry: Entry, limits: NonNullable<PreparedDestination['batch']>): boolean {
    const bytes = entry.item.record.value?.length ?? 0;
    if (!fitsIn(open.fill, bytes, limits)) {
      open.closed = true;
      return false;
    }
    open.entries.push(entry);
    if (entry.user !== '') this.order.started(entry);
    open.fill.events += 1;
    open.fill.bodyBytes += bytes;
    entry.queue.running.add(entry.item.record.offset);
    if (isFull(open.fill, limits)) open.closed = true;
    return true;
  }

  /**
   * The head of `queue` if it may start: undefined when there is none, it is not due
   * yet (the partition waits) or its partition waits; 'parked' when it was taken off to
   * wait behind its user's earlier event (ordered destinations).
   */
  private headOf(queue: PartitionQueue, settings: PreparedDestination): Entry | 'parked' | undefined {
    const item = queue.items[queue.head];
    if (item === undefined || queue.dueTimer !== undefined) return undefined;
    const waitMs = this.parts.tierWait.waitMs(item.record.topic, item.envelope);
    if (waitMs > 0) {
      this.waitUntilDue(queue, waitMs);
      return undefined;
    }
    if (!settings.ordered) return { queue, item, user: '' };
    const entry: Entry = { queue, item, user: userOf(item.record) };
    if (this.order.mayStart(entry.user)) return entry;
    this.takeHead(queue);
    this.order.park(entry);
    queue.parked += 1;
    // NOTE: parked records are held in memory; a partition with many parked waits (paused) until some go.
    if (queue.parked >= this.parts.queueBound && !queue.full) {
      queue.full = true;
      this.parts.stream.pause(queue.topic, queue.partition);
    }
    return 'parked';
  }

  private takeHead(queue: PartitionQueue): void {
    queue.head += 1;
    if (queue.head === queue.items.length) {
      queue.items = [];
      queue.head = 0;
    } else if (queue.head > 1024) {
      queue.items = queue.items.slice(queue.head);
      queue.head = 0;
    }
    this.queued -= 1;
  }

  /**
   * One request for `entries` (one event, or a batch), if it may go: commits keep up, a
   * permit is free, the rate limit has a token (else it waits for it, holding the
   * lane). Takes single events off their source; false when the lane is blocked.
   */
  private request(settings: PreparedDestination, entries: Entry[]): boolean {
    // NOTE: every permit taken is the usual case of a busy lane's pump (a batch filled
    // while its one request is out): nothing below could start it, and a permit freed pumps again.
    if (this.slots.inUse === this.slots.capacity) return false;
    if (this.waitsForCommit()) return false;
    const { circuits, pace } = this.parts;
    const now = Date.now();
    // NOTE: an event whose retry window ended goes on with every URL open: no request,
    // its dead letter (with the circuit's last failure) instead of waiting for a probe.
    const openUntil = circuits.allOpenUntil(settings, now);
    if (openUntil !== undefined && !entries.every(({ item }) => this.parts.tierWait.windowEnded(item.envelope, now))) {
      this.waitForCircuits(openUntil - now);
      return false;
    }
    // NOTE: a URL whose circuit is open gets no request, so it takes no permit and no token.
    const admitted = circuits.admit(settings, now);
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    if (!this.slots.tryAcquire(weight)) {
      circuits.abandon(admitted, now);
      // A permit frees when a delivery ends, which pumps again.
      return false;
    }
    const batch = settings.batch !== undefined;
    if (batch) {
      clearTimeout(this.open?.timer);
      this.open = undefined;
    } else {
      const [entry] = entries;
      if (this.ready[0] === entry) this.ready.shift();
      else this.takeHead(entry!.queue);
      entry!.queue.running.add(entry!.item.record.offset);
      if (entry!.user !== '') this.order.started(entry!);
    }
    const send = batch ? (s: PreparedDestination, a: Admitted, w: number) => this.startBatch(entries, s, a, w) : (s: PreparedDestination, a: Admitted, w: number) => this.startEvent(entries[0]!, s, a, w);
    // NOTE: waiting for a token holds only this lane (its next request, tokens reserved).
    const paceMs = pace.reserve(settings, requests, now);
    if (paceMs > 0) {
      this.paced = { entries, admitted, weight, send, timer: setTimeout(() => this.startPaced(), paceMs) };
      return false;
    }
    send(settings, admitted, weight);
    return true;
  }

  /**
   * Every URL's circuit is open: the lane attempts nothing and writes nothing (no
   * `circuit_open` attempt, no retry-tier record; only the dead letters of events whose
   * window ended) until one may let a request through;
   * its partitions are paused meanwhile, so it fetches no more than it holds. NOTE: the
   * probe's own end pumps the lane too (endTask), so a probe that settles early ends the wait early.
   */
  private waitForCircuits(ms: number): void {
    if (this.circuitWait === undefined) {
      const resumeAt = Date.now() + ms;
      for (const queue of this.queues.values()) this.parts.stream.pause(queue.topic, queue.partition, resumeAt);
    }
    clearTimeout(this.circuitWait);
    this.circuitWait = setTimeout(this.pumpAfterCircuitWait, Math.max(1, ms));
  }

  private readonly pumpAfterCircuitWait = (): void => {
    this.pump();
  };

  /** A URL lets requests through again: the partitions the wait paused fetch again (unless full or waiting for a due time). */
  private endCircuitWait(): void {
    clearTimeout(this.circuitWait);
    this.circuitWait = undefined;
    for (const queue of this.queues.values()) {
      if (!queue.full && queue.dueTimer === undefined) this.parts.stream.resume(queue.topic, queue.partition);
    }
  }

  /**
   * NOTE: a delivery finished but not committed is delivered again after a SIGKILL.
   * While commits fail (the broker away), or once this lane has many such, starting
   * more would only add to that: the lane waits until its account opens again.
   */
  private waitsForCommit(): boolean {
    const { commits } = this.parts;
    if (commits.mayStart()) return false;
    commits.whenOpen(this.schedulePump);
    return true;
  }

  private startPaced(): void {
    const paced = this.paced;
    this.paced = undefined;
    if (paced === undefined) return;
    const settings = this.parts.settings();
    if (this.stopping || settings === undefined) {
      this.parts.circuits.abandon(paced.admitted, Date.now());
      this.slots.release(paced.weight);
      for (const { queue, item } of paced.entries) queue.running.delete(item.record.offset);
    } else {
      paced.send(settings, paced.admitted, paced.weight);
    }
    this.pump();
  }

  private cancelPaced(): void {
    const paced = this.paced;
    if (paced === undefined) return;
    this.paced = undefined;
    clearTimeout(paced.timer);
    this.parts.circuits.abandon(paced.admitted, Date.now());
    this.slots.release(paced.weight);
    // NOTE: not sent, so not running: first in turn again (a revoked partition's are dropped from `ready` by revoke).
    for (const { queue, item } of paced.entries) queue.running.delete(item.record.offset);
    this.ready.unshift(...paced.entries);
  }

  /** Delivers one event; its offset is done once its outcome is safe in Kafka. */
  private startEvent(entry: Entry, settings: PreparedDestination, admitted: Admitted, weight: number): void {
    const { record, envelope } = entry.item;
    const task: Promise<void> = this.parts.events.deliver({ record, envelope, settings, admitted, hold: settings.ordered }).then(
      (result) => {
        this.endTask(task, [entry], weight);
        this.settle(entry, result);
      },
      (error: unknown) => {
        this.endTask(task, [entry], weight);
        this.writeFailed(entry, error);
      },
    );
    this.inFlight.add(task);
  }

  /** Delivers a batch in one request; each event's offset is done once its own outcome is safe in Kafka. */
  private startBatch(entries: Entry[], settings: PreparedDestination, admitted: Admitted, weight: number): void {
    const events = entries.map(({ item }) => item);
    const task: Promise<void> = this.parts.events.deliverBatch({ events, settings, admitted, hold: settings.ordered }).then(
      (outcomes) => {
        this.endTask(task, entries, weight);
        outcomes.forEach((outcome, i) => {
          if (outcome.status === 'fulfilled') this.settle(entries[i]!, outcome.value);
          else this.writeFailed(entries[i]!, outcome.reason);
        });
      },
      (error: unknown) => {
        this.endTask(task, entries, weight);
        for (const entry of entries) this.writeFailed(entry, error);
      },
    );
    this.inFlight.add(task);
  }

  private endTask(task: Promise<void>, entries: readonly Entry[], weight: number): void {
    this.inFlight.delete(task);
    for (const { queue, item } of entries) queue.running.delete(item.record.offset);
    this.slots.release(weight);
    this.schedulePump();
  }

  /** An event's attempt ended: finished (delivered, retry or dead letter written), or held in the lane for its next attempt. */
  private settle(entry: Entry, result: DeliveryResult | void): void {
    if (isHeldRetry(result)) {
      const { queue, item } = entry;
      if (this.stopping || this.queues.get(partitionKey(queue.topic, queue.partition)) !== queue) {
        // The partition went while it was in flight: not finished, so the stream fetches it again for whoever owns it.
        this.parts.stream.release(item.record.topic, item.record.partition, item.record.offset);
        return;
      }
      this.holdUntil(entry, { ...entry.item, envelope: result.held }, (result.held.dueAtMs ?? Date.now()) - Date.now());
      return;
    }
    const { record } = entry.item;
    this.parts.commits.finish(record.topic, record.partition, record.offset);
    this.userDone(entry);
  }

  /** The user's event is done: their next parked one, if any, is ready. */
  private userDone(entry: Entry): void {
    if (entry.user === '') return;
    const next = this.order.done(entry.user);
    if (next === undefined) return;
    next.queue.parked -= 1;
    this.ready.push(next);
  }

  /**
   * An ordered destination's event waits in the lane for its next attempt, unfinished,
   * its user's later events parked behind it; then it is ready again.
   */
  private holdUntil(entry: Entry, item: Queued, ms: number): void {
    const held: Held = {
      entry,
      timer: setTimeout(() => {
        this.held.delete(held);
        if (this.stopping) return;
        this.ready.push({ ...entry, item });
        this.pump();
      }, Math.max(0, ms)),
    };
    this.held.add(held);
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
    this.parts.logger.error(
      { err: error, topic: record.topic, partition: record.partition, offset: record.offset },
      'could not write a retry or dead letter to Kafka; the event will be attempted again',
    );
    if (this.stopping || this.queues.get(partitionKey(queue.topic, queue.partition)) !== queue) {
      this.parts.stream.release(record.topic, record.partition, record.offset);
      return;
    }
    const writeRetryMs = this.parts.writeRetryMs ?? DEFAULT_WRITE_RETRY_MS;
    if (this.order.holds(entry.user)) {
      this.holdUntil(entry, item, writeRetryMs);
      return;
    }
    queue.items.splice(queue.head, 0, item);
    this.queued += 1;
    this.waitUntilDue(queue, writeRetryMs);
  }

  /** The partition's head waits `ms`: the partition is paused (nothing more fetched) and a timer starts it. */
  private waitUntilDue(queue: PartitionQueue, ms: number): void {
    clearTimeout(queue.dueTimer);
    this.parts.stream.pause(queue.topic, queue.partition, Date.now() + ms);
    queue.dueTimer = setTimeout(() => {
      queue.dueTimer = undefined;
      if (this.stopping) return;
      if (!queue.full && this.circuitWait === undefined) this.parts.stream.resume(queue.topic, queue.partition);
      this.pump();
    }, ms);
  }

  /** The lane is full: pause its partitions that have records waiting (the others fetch nothing for it anyway). */
  private pauseFull(): void {
    for (const queue of this.queues.values()) {
      if (queue.full || queue.items.length === queue.head) continue;
      queue.full = true;
      this.parts.stream.pause(queue.topic, queue.partition);
    }
  }

  private resumeIfRoom(): void {
    if (fullness(this.queued, this.parts.queueBound) !== 'resume') return;
    for (const queue of this.queues.values()) {
      if (!queue.full || queue.parked >= this.parts.queueBound) continue;
      queue.full = false;
      if (queue.dueTimer === undefined && this.circuitWait === undefined) this.parts.stream.resume(queue.topic, queue.partition);
    }
  }
}

/** The user of a record: its key (the userId, else the anonymousId); a record without one is a user of its own. */
function userOf(record: InboundRecord): string {
  return record.key === null ? `\u0000${record.topic}/${record.partition}@${record.offset}` : record.key.toString('latin1');
}
