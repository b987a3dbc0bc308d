// The batch a lane fills (`settings.batch`, docs/webhooks.md#batches): the events it
// holds, whether another may join, and whether it goes. Pure: the lane
// (destination-lane.ts) offers it events, keeps the timer that closes it `maxWait` after
// it first waited for more (the handle is kept here, with the batch it closes), and sends
// it on one permit once it is closed.
import type { BatchConfig } from '../config/schema.js';
import { fitsIn, isFull } from './batch.js';
import type { BatchFill } from './batch.js';

export type BatchLimits = Pick<BatchConfig, 'maxEvents' | 'maxBytes'> & Partial<Pick<BatchConfig, 'format'>>;

export class OpenBatch<E> {
  private members: E[] = [];
  private fill: BatchFill = { events: 0, bodyBytes: 0 };
  /** Takes no more events: it was full, one did not fit, or its `maxWait` passed; it waits for a permit. */
  closed = false;
  /** The lane's timer that closes it at `maxWait`, once it waited for more. */
  timer: NodeJS.Timeout | undefined;

  /** `bytesOf`: the body bytes of an event. */
  constructor(private readonly bytesOf: (entry: E) => number) {}

  /** Its events, oldest first. */
  get entries(): readonly E[] {
    return this.members;
  }

  /** Adds `entry` if it fits; closes the batch when it does not, or once full. */
  join(entry: E, limits: BatchLimits): boolean {
    const bytes = this.bytesOf(entry);
    if (!fitsIn(this.fill, bytes, limits)) {
      this.closed = true;
      return false;
    }
    this.members.push(entry);
    this.fill.events += 1;
    this.fill.bodyBytes += bytes;
    if (isFull(this.fill, limits)) this.closed = true;
    return true;
  }

  /** Whether it waits for more events: open and not full (the lane asks once some joined). */
  waitsForMore(limits: BatchLimits): boolean {
    return !this.closed && !isFull(this.fill, limits);
  }

  /** Takes out the events `gone` says went (a revoked partition's); returns them. NOTE: its timer, if any, runs on. */
  drop(gone: (entry: E) => boolean): E[] {
    const dropped = this.members.filter(gone);
    this.members = this.members.filter((entry) => !gone(entry));
    this.fill = { events: this.members.length, bodyBytes: this.members.reduce((sum, entry) => sum + this.bytesOf(entry), 0) };
    return dropped;
  }
}
