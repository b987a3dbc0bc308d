// The dead letters this process wrote since it was last asked, by destination: their count
// and the first message ids of each minute. The lifecycle turns them into one
// `message.dead_lettered` event per destination and minute (docs/operations.md#operational-events).
// Bounded: at most SAMPLE_SIZE ids per destination and minute are kept, whatever the flood.

/** Message ids kept per destination and minute. */
export const SAMPLE_SIZE = 10;

export interface DeadLetterMinute {
  destination: string;
  /** The minute's start, epoch ms. */
  minute: number;
  count: number;
  sample: string[];
}

export class DeadLetterTap {
  private minutes = new Map<string, DeadLetterMinute>();

  /** One event dead-lettered (`messageId` from its header; undefined when it had none). */
  record(destination: string, messageId: string | undefined, nowMs: number = Date.now()): void {
    const minute = nowMs - (nowMs % 60_000);
    const key = `${destination}\u0000${minute}`;
    let entry = this.minutes.get(key);
    if (entry === undefined) {
      entry = { destination, minute, count: 0, sample: [] };
      this.minutes.set(key, entry);
    }
    entry.count += 1;
    if (messageId !== undefined && entry.sample.length < SAMPLE_SIZE) entry.sample.push(messageId);
  }

  /** What was recorded since the last call, and forget it. */
  drain(): DeadLetterMinute[] {
    const drained = [...this.minutes.values()];
    this.minutes = new Map();
    return drained;
  }
}
