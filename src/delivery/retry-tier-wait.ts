// Where a retry waits for its due time. A retry-tier message carries `due-at`
// (envelope.ts); its tier's partition is paused until the head message is due, while the
// destination's other partitions and topics go on. Within a tier, due times stay
// roughly in order (retry-schedule.ts), so the head is the one to wait for.
import type { DestinationTopics } from './destination-topics.js';
import type { Envelope } from './envelope.js';

/** What the port's record batch offers for it: stop fetching this partition for a while. */
export interface PartitionHold {
  holdPartition(ms: number): void;
}

export class RetryTierWait {
  private readonly tierTopics: ReadonlySet<string>;

  constructor(
    topics: DestinationTopics,
    private readonly maxRetryWindowMs: number,
  ) {
    this.tierTopics = new Set(topics.retries.map((r) => r.topic));
  }

  /**
   * When `topic` is a retry tier and its record is not due yet: holds the partition
   * until it is (the port resumes it; a stop cancels the hold) and returns true: the
   * batch ends there, the record stays unstarted and is fetched again once resumed.
   * False when the record may be attempted now; other partitions go on either way.
   */
  holdUntilDue(topic: string, envelope: Envelope, partition: PartitionHold): boolean {
    if (!this.tierTopics.has(topic)) return false;
    // NOTE: a due time is capped so that a wrong header cannot park a partition for longer than a window.
    const waitMs = Math.min((envelope.dueAtMs ?? 0) - Date.now(), this.maxRetryWindowMs);
    if (waitMs <= 0) return false;
    partition.holdPartition(waitMs);
    return true;
  }
}
