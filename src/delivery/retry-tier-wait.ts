// Where a retry waits for its due time. A retry-tier message carries `due-at`
// (envelope.ts); its tier's partition is paused until the head message is due, while the
// destination's other partitions and topics go on. Within a tier, due times stay
// roughly in order (retry-schedule.ts), so the head is the one to wait for.
import type { DestinationTopics } from './destination-topics.js';
import type { Envelope } from './envelope.js';

/** Pauses the partition being read; returns the function that resumes it. */
export type PausePartition = () => () => void;

export class RetryTierWait {
  private readonly tierTopics: ReadonlySet<string>;
  private readonly holds = new Set<NodeJS.Timeout>();

  constructor(
    topics: DestinationTopics,
    private readonly maxRetryWindowMs: number,
  ) {
    this.tierTopics = new Set(topics.retries.map((r) => r.topic));
  }

  /**
   * When `topic` is a retry tier and its message is not due yet: pauses the partition
   * until it is and returns true (the batch ends there; the message stays unstarted and
   * is fetched again once resumed). False when the message may be attempted now.
   */
  holdUntilDue(topic: string, envelope: Envelope, pause: PausePartition): boolean {
    if (!this.tierTopics.has(topic)) return false;
    // NOTE: a due time is capped so that a wrong header cannot park a partition for longer than a window.
    const waitMs = Math.min((envelope.dueAtMs ?? 0) - Date.now(), this.maxRetryWindowMs);
    if (waitMs <= 0) return false;
    this.hold(pause, waitMs);
    return true;
  }

  /** The worker stops: no paused partition is resumed any more. */
  clear(): void {
    for (const timer of this.holds) clearTimeout(timer);
    this.holds.clear();
  }

  /** Holds a retry partition until its head message is due; other partitions go on. */
  private hold(pause: PausePartition, waitMs: number): void {
    const resume = pause();
    const timer = setTimeout(() => {
      this.holds.delete(timer);
      resume();
    }, waitMs);
    this.holds.add(timer);
  }
}
