// Which of a destination lane's partitions are fetched (destination-lane.ts). A partition
// is paused while the lane is full (its queued records at the bound, or the partition's
// parked ones), while its head waits for its due time (a retry not due, a failed write),
// and while every URL's circuit is open; it is resumed once none of these holds. The
// waits with an end (a due time, the circuits' cool-down) keep the timer that pumps the
// lane then.
import { fullness } from './lane-bounds.js';
import type { LaneStream, PartitionQueue, Queued } from './lane-parts.js';
import type { LaneQueues } from './lane-queues.js';
import type { RetryTierWait } from './retry-tier-wait.js';

export class LaneFetch {
  /** Paused because the lane is full. */
  private readonly full = new Set<PartitionQueue>();
  /** Heads waiting for their due time: the timers that start them. */
  private readonly due = new Map<PartitionQueue, NodeJS.Timeout>();
  /** Every URL's circuit is open: the timer that pumps when one may let a request through. */
  private circuitWait: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly stream: LaneStream,
    private readonly tierWait: Pick<RetryTierWait, 'waitMs'>,
    private readonly queues: LaneQueues,
    private readonly bound: number,
    private readonly pump: () => void,
  ) {}

  get waitingForCircuits(): boolean {
    return this.circuitWait !== undefined;
  }

  /** Whether the partition waits for its head's due time (`item`: a retry not due yet makes it wait: paused, a timer starts it). */
  headWaits(queue: PartitionQueue, item: Queued): boolean {
    if (this.due.has(queue)) return true;
    const waitMs = this.tierWait.waitMs(item.record.topic, item.envelope);
    if (waitMs > 0) this.waitUntilDue(queue, waitMs);
    return waitMs > 0;
  }

  /** Records came for `queue`: it fetches no more while the circuits wait. */
  accepted(queue: PartitionQueue): void {
    if (this.circuitWait !== undefined) this.stream.pause(queue.topic, queue.partition);
  }

  /** If the lane is full: pause its partitions that have records waiting (the others fetch nothing for it anyway). */
  pauseIfFull(): void {
    if (fullness(this.queues.queued, this.bound) !== 'pause') return;
    for (const queue of this.queues.values()) {
      if (this.full.has(queue) || queue.items.length === queue.head) continue;
      this.pauseFull(queue);
    }
  }

  /** NOTE: parked records are held in memory; a partition with many parked waits (paused) until some go. */
  parked(queue: PartitionQueue): void {
    if (queue.parked >= this.bound && !this.full.has(queue)) this.pauseFull(queue);
  }

  /** At three quarters of the bound: the full partitions fetch again (unless waiting for a due time or the circuits). */
  resumeIfRoom(): void {
    if (fullness(this.queues.queued, this.bound) !== 'resume') return;
    for (const queue of this.queues.values()) {
      if (!this.full.has(queue) || queue.parked >= this.bound) continue;
      this.full.delete(queue);
      if (!this.due.has(queue) && this.circuitWait === undefined) this.stream.resume(queue.topic, queue.partition);
    }
  }

  /**
   * Every URL's circuit is open for `ms`: the lane's partitions are paused meanwhile, so
   * it fetches no more than it holds, and the lane is pumped then. NOTE: the probe's own
   * end pumps the lane too, so a probe that settles early ends the wait early.
   */
  waitForCircuits(ms: number): void {
    if (this.circuitWait === undefined) {
      const resumeAt = Date.now() + ms;
      for (const queue of this.queues.values()) this.stream.pause(queue.topic, queue.partition, resumeAt);
    }
    clearTimeout(this.circuitWait);
    this.circuitWait = setTimeout(this.pump, Math.max(1, ms));
  }

  /** A URL lets requests through: if the circuits were waited for, the partitions the wait paused fetch again (unless full or waiting for a due time). */
  circuitsLetThrough(): void {
    if (this.circuitWait === undefined) return;
    clearTimeout(this.circuitWait);
    this.circuitWait = undefined;
    for (const queue of this.queues.values()) {
      if (!this.full.has(queue) && !this.due.has(queue)) this.stream.resume(queue.topic, queue.partition);
    }
  }

  /** The partition's head waits `ms`: the partition is paused (nothing more fetched) and a timer starts it. */
  waitUntilDue(queue: PartitionQueue, ms: number): void {
    clearTimeout(this.due.get(queue));
    this.stream.pause(queue.topic, queue.partition, Date.now() + ms);
    this.due.set(
      queue,
      setTimeout(() => {
        this.due.delete(queue);
        if (this.stopped) return;
        if (!this.full.has(queue) && this.circuitWait === undefined) this.stream.resume(queue.topic, queue.partition);
        this.pump();
      }, ms),
    );
  }

  /** The partition is not the lane's any more: its wait ends. */
  drop(queue: PartitionQueue): void {
    clearTimeout(this.due.get(queue));
    this.due.delete(queue);
    this.full.delete(queue);
  }

  /** The lane stops: no timer pumps it any more. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.circuitWait);
    this.circuitWait = undefined;
    for (const timer of this.due.values()) clearTimeout(timer);
    this.due.clear();
  }

  private pauseFull(queue: PartitionQueue): void {
    this.full.add(queue);
    this.stream.pause(queue.topic, queue.partition);
  }
}
