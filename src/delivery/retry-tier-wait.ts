// Where a retry waits for its due time. A retry-tier message carries `due-at`
// (envelope.ts); its tier's partition is paused until the head message is due, while the
// destination's other partitions and topics go on. Within a tier, due times stay
// roughly in order (retry-schedule.ts), so the head is the one to wait for.
import type { DestinationTopics } from './destination-topics.js';
import type { Envelope } from './envelope.js';

export class RetryTierWait {
  private readonly tierTopics: ReadonlySet<string>;

  constructor(
    topics: DestinationTopics,
    private readonly maxRetryWindowMs: number,
  ) {
    this.tierTopics = new Set(topics.retries.map((r) => r.topic));
  }

  /**
   * How long the record must still wait: 0 when `topic` is not a retry tier or the
   * record is due. The lane holds the partition that long (paused, its head queued),
   * while the destination's other partitions and topics go on.
   */
  /**
   * Whether the event's retry window has ended (it was attempted, and `maxRetryWindow`
   * has passed since): its next failure, even without a request, is its dead letter
   * (retry-schedule.ts `planNextStep`).
   */
  windowEnded(envelope: Envelope, nowMs: number): boolean {
    return envelope.firstAttemptAtMs !== undefined && nowMs >= envelope.firstAttemptAtMs + this.maxRetryWindowMs;
  }

  waitMs(topic: string, envelope: Envelope): number {
    if (!this.tierTopics.has(topic)) return 0;
    // NOTE: a due time is capped so that a wrong header cannot park a partition for longer than a window.
    return Math.max(0, Math.min((envelope.dueAtMs ?? 0) - Date.now(), this.maxRetryWindowMs));
  }
}
