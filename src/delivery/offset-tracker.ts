// Offset bookkeeping for many messages of one partition in flight at once. Pure (no
// I/O): the deliverer starts messages in offset order, they finish in any order, and
// only the offsets below the oldest unfinished message may be committed.

/**
 * The highest offset such that it and every offset before it (of those started)
 * finished, or undefined when the oldest started message is still unfinished.
 * `started` is ascending; `finished` holds offsets from it.
 *
 * This is the rule; {@link OffsetTracker} applies it incrementally, in O(1) amortized
 * per message, for the hot path.
 */
export function lastContiguousFinished(started: readonly string[], finished: ReadonlySet<string>): string | undefined {
  let last: string | undefined;
  for (const offset of started) {
    if (!finished.has(offset)) break;
    last = offset;
  }
  return last;
}

/**
 * One batch of one partition: `start` each message in offset order, `finish` it (by the
 * returned ticket) when its outcome is safely written, and resolve up to
 * `resolvable()`: kafkajs commits the offset after it, so a crash redelivers exactly
 * the unfinished messages and the finished ones after them.
 */
export class OffsetTracker {
  private readonly offsets: string[] = [];
  private readonly done: boolean[] = [];
  /** Index of the oldest unfinished message (or offsets.length). */
  private head = 0;
  private finishedCount = 0;

  /** Registers the next message; offsets must ascend. Returns its ticket for `finish`. */
  start(offset: string): number {
    const previous = this.offsets[this.offsets.length - 1];
    if (previous !== undefined && !ascends(previous, offset)) {
      throw new RangeError(`OffsetTracker: offset ${offset} started after ${previous}; start messages in offset order`);
    }
    this.offsets.push(offset);
    this.done.push(false);
    return this.offsets.length - 1;
  }

  finish(ticket: number): void {
    if (ticket < 0 || ticket >= this.done.length) throw new RangeError(`OffsetTracker: unknown ticket ${ticket}`);
    if (this.done[ticket]) return;
    this.done[ticket] = true;
    this.finishedCount += 1;
    while (this.head < this.done.length && this.done[this.head]) this.head += 1;
  }

  /** The offset to resolve (it and all before it finished), or undefined. */
  resolvable(): string | undefined {
    return this.head === 0 ? undefined : this.offsets[this.head - 1];
  }

  /** Messages started and not finished. */
  get inFlight(): number {
    return this.offsets.length - this.finishedCount;
  }
}

/** Whether offset `b` comes after `a`: kafkajs gives offsets as decimal strings without leading zeros. */
function ascends(a: string, b: string): boolean {
  return b.length > a.length || (b.length === a.length && b > a);
}
