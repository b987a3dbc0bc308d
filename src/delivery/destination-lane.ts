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
// the lane's account in the stream's commit ledger (src/kafka/commit-ledger.ts:
// committed within about one commit round trip, out of order).
import type { Logger } from 'pino';
import type { InboundRecord, LedgerAccount } from '../kafka/index.js';
import type { DeliveryJob } from './deliver-event.js';
import type { PreparedDestination } from './destination-settings.js';
import { readEnvelope } from './envelope.js';
import type { Envelope } from './envelope.js';
import { EndOfTurn } from './end-of-turn.js';
import type { RatePace } from './rate-pace.js';
import type { RetryTierWait } from './retry-tier-wait.js';
import { Semaphore } from './semaphore.js';
import { countBits } from './url-circuits.js';
import type { Admitted, UrlCircuits } from './url-circuits.js';

/** The stream's side a lane uses (src/kafka/partition-stream.ts): the fetch of its partitions. */
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
  events: { deliver(job: DeliveryJob): Promise<unknown> };
  stream: LaneStream;
  /**
   * The lane's account in the stream's commit ledger, made with laneUncommittedBound:
   * where its deliveries finish, and whether it may start more.
   */
  commits: LedgerAccount;
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
}

/** A head record that waits for its rate-limit tokens (reserved already). */
interface Paced {
  queue: PartitionQueue;
  admitted: Admitted;
  weight: number;
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
 * (deliver bench at 0 ms; figures: docs/architecture.md#measured-figures-behind-the-code).
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
    this.pump();
    if (fullness(this.queued, this.parts.queueBound) === 'pause') this.pauseFull();
  }

  /** The partition is not ours any more: drop what waits; the offsets still running are returned. */
  revoke(topic: string, partition: number): string[] {
    const key = `${partition}:${topic}`;
    const queue = this.queues.get(key);
    if (queue === undefined) return [];
    this.dropQueued(queue);
    if (this.paced?.queue === queue) this.cancelPaced();
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

  /** Starts nothing new, drops the queues, waits for the requests in flight (bounded by the timeout). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.parts.commits.close();
    this.cancelPaced();
    for (const queue of this.queues.values()) this.dropQueued(queue);
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private queueOf(topic: string, partition: number): PartitionQueue {
    const key = `${partition}:${topic}`;
    let queue = this.queues.get(key);
    if (queue === undefined) {
      queue = { topic, partition, items: [], head: 0, full: false, dueTimer: undefined, running: new Set() };
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
   * Starts queued records while permits last, one partition after the other (round
   * robin, so no partition of the lane starves another).
   */
  private readonly pump = (): void => {
    if (this.stopping || this.paced !== undefined) return;
    const queues = [...this.queues.values()];
    let idle = 0;
    while (idle < queues.length && this.queued > 0) {
      const queue = queues[this.cursor++ % queues.length]!;
      const outcome = this.startHead(queue);
      if (outcome === 'blocked') {
        this.cursor -= 1; // the queue that could not start keeps its turn
        break;
      }
      idle = outcome === 'started' ? 0 : idle + 1;
    }
    this.resumeIfRoom();
  };

  /** Starts the head of `queue` if it may go: 'blocked' stops the whole lane (permits, rate limit). */
  private startHead(queue: PartitionQueue): 'started' | 'skip' | 'blocked' {
    const item = queue.items[queue.head];
    if (item === undefined || queue.dueTimer !== undefined) return 'skip';
    if (this.waitsForCommit()) return 'blocked';
    const waitMs = this.parts.tierWait.waitMs(item.record.topic, item.envelope);
    if (waitMs > 0) {
      this.waitUntilDue(queue, waitMs);
      return 'skip';
    }
    const settings = this.parts.settings();
    if (settings === undefined) return 'blocked'; // left the config: this lane is being stopped
    const { circuits, pace } = this.parts;
    const now = Date.now();
    // NOTE: a URL whose circuit is open gets no request, so it takes no permit and no token.
    const admitted = circuits.admit(settings, now);
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    if (!this.slots.tryAcquire(weight)) {
      circuits.abandon(admitted, now);
      // A permit frees when a delivery ends, which pumps again.
      return 'blocked';
    }
    // NOTE: waiting for a token holds only this lane (its head record, tokens reserved).
    const paceMs = pace.reserve(settings, requests, now);
    if (paceMs > 0) {
      this.paced = { queue, admitted, weight, timer: setTimeout(() => this.startPaced(), paceMs) };
      return 'blocked';
    }
    this.startItem(queue, settings, admitted, weight);
    return 'started';
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
    if (this.stopping || settings === undefined || paced.queue.items[paced.queue.head] === undefined) {
      this.parts.circuits.abandon(paced.admitted, Date.now());
      this.slots.release(paced.weight);
    } else {
      this.startItem(paced.queue, settings, paced.admitted, paced.weight);
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
  }

  /** Takes the head off its queue and delivers it; its offset is done once its outcome is safe in Kafka. */
  private startItem(queue: PartitionQueue, settings: PreparedDestination, admitted: Admitted, weight: number): void {
    const item = queue.items[queue.head]!;
    queue.head += 1;
    if (queue.head === queue.items.length) {
      queue.items = [];
      queue.head = 0;
    } else if (queue.head > 1024) {
      queue.items = queue.items.slice(queue.head);
      queue.head = 0;
    }
    this.queued -= 1;
    const { record } = item;
    queue.running.add(record.offset);
    const task: Promise<void> = this.parts.events.deliver({ record, envelope: item.envelope, settings, admitted }).then(
      () => {
        this.finishTask(task, queue, record, weight);
        this.parts.commits.finish(record.topic, record.partition, record.offset);
      },
      (error: unknown) => {
        this.finishTask(task, queue, record, weight);
        this.writeFailed(queue, item, error);
      },
    );
    this.inFlight.add(task);
  }

  private finishTask(task: Promise<void>, queue: PartitionQueue, record: InboundRecord, weight: number): void {
    this.inFlight.delete(task);
    queue.running.delete(record.offset);
    this.slots.release(weight);
    this.schedulePump();
  }

  /**
   * NOTE: a retry or dead letter that could not be written leaves its record unfinished
   * (never committed) and back at the head of its partition's queue, attempted again
   * after a pause: a duplicate request at worst, never a loss, never a crash.
   */
  private writeFailed(queue: PartitionQueue, item: Queued, error: unknown): void {
    const { record } = item;
    this.parts.logger.error(
      { err: error, topic: record.topic, partition: record.partition, offset: record.offset },
      'could not write a retry or dead letter to Kafka; the event will be attempted again',
    );
    if (this.stopping || this.queues.get(`${queue.partition}:${queue.topic}`) !== queue) {
      this.parts.stream.release(record.topic, record.partition, record.offset);
      return;
    }
    queue.items.splice(queue.head, 0, item);
    this.queued += 1;
    this.waitUntilDue(queue, this.parts.writeRetryMs ?? DEFAULT_WRITE_RETRY_MS);
  }

  /** The partition's head waits `ms`: the partition is paused (nothing more fetched) and a timer starts it. */
  private waitUntilDue(queue: PartitionQueue, ms: number): void {
    clearTimeout(queue.dueTimer);
    this.parts.stream.pause(queue.topic, queue.partition, Date.now() + ms);
    queue.dueTimer = setTimeout(() => {
      queue.dueTimer = undefined;
      if (this.stopping) return;
      if (!queue.full) this.parts.stream.resume(queue.topic, queue.partition);
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
      if (!queue.full) continue;
      queue.full = false;
      if (queue.dueTimer === undefined) this.parts.stream.resume(queue.topic, queue.partition);
    }
  }
}
