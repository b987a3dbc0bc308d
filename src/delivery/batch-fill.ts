// The batch a lane fills (`settings.batch`, docs/webhooks.md#batches): the events it
// holds, whether another may join, and when it goes. Pure, the clock passed in: the lane
// (destination-lane.ts) offers it events, keeps the timer that closes it at `maxWait`, and
// sends it on one permit once it is closed.
import type { BatchConfig } from '../config/schema.js';
import { fitsIn, isFull } from './batch.js';
import type { BatchFill } from './batch.js';

export type BatchLimits = Pick<BatchConfig, 'maxEvents' | 'maxBytes' | 'maxWaitMs'> & Partial<Pick<BatchConfig, 'format'>>;

export class OpenBatch<E> {
  private members: E[] = [];
  private fill: BatchFill = { events: 0, bodyBytes: 0 };
  private isClosed = false;
  private firstAtMs: number | undefined;

  /** `bytesOf`: the body bytes of an event. */
  constructor(private readonly bytesOf: (entry: E) => number) {}

  /** Its events, oldest first. */
  get entries(): readonly E[] {
    return this.members;
  }

  /** Takes no more events: it was full, one did not fit, or its `maxWait` passed; it waits for a permit. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Adds `entry` if it fits (at `nowMs`); closes the batch when it does not, or once full. */
  join(entry: E, limits: BatchLimits, nowMs: number): boolean {
    const bytes = this.bytesOf(entry);
    if (!fitsIn(this.fill, bytes, limits)) {
      this.isClosed = true;
      return false;
    }
    this.members.push(entry);
    this.firstAtMs ??= nowMs;
    this.fill.events += 1;
    this.fill.bodyBytes += bytes;
    if (isFull(this.fill, limits)) this.isClosed = true;
    return true;
  }

  /** Its `maxWait` passed: it goes as it is. */
  close(): void {
    this.isClosed = true;
  }

  /** Whether it waits for more events: some joined, it is open and not full. */
  waitsForMore(limits: BatchLimits): boolean {
    return this.members.length > 0 && !this.isClosed && !isFull(this.fill, limits);
  }

  /** When it goes, full or not: `maxWait` after its first event (undefined while none joined). */
  closesAtMs(limits: BatchLimits): number | undefined {
    return this.firstAtMs === undefined ? undefined : this.firstAtMs + limits.maxWaitMs;
  }

  /** Takes out the events `gone` says went (a revoked partition's); returns them. */
  drop(gone: (entry: E) => boolean): E[] {
    const dropped = this.members.filter(gone);
    if (dropped.length === 0) return dropped;
    this.members = this.members.filter((entry) => !gone(entry));
    this.fill = { events: this.members.length, bodyBytes: this.members.reduce((sum, entry) => sum + this.bytesOf(entry), 0) };
    return dropped;
  }
}
