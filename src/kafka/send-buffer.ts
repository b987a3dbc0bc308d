// Which records go out together: the port's ONE size cap for a send, and the buffer
// every writer fills within it (the router per batch, the producer when it merges or
// splits sends). Pure bookkeeping: the producer does the sending.
import type { OutboundRecord, TopicRecords } from './records.js';

/**
 * The most bytes one send puts into one topic.
 *
 * NOTE: a produce request carries a partition's records in one batch, and the broker
 * refuses one over `message.max.bytes` (1 MiB by default) with RECORD_TOO_LARGE, retried
 * forever. Capping the topic caps each of its partitions; the margin covers the framing
 * `recordBytes` leaves out.
 */
export const MAX_TOPIC_BYTES_PER_SEND = 900_000;

interface TopicBucket {
  messages: OutboundRecord[];
  bytes: number;
}

/** Records waiting to be sent in one send, grouped by topic, within a byte budget per topic. */
export class SendBuffer {
  private readonly topics = new Map<string, TopicBucket>();
  private records = 0;

  constructor(private readonly maxBytesPerTopic: number = MAX_TOPIC_BYTES_PER_SEND) {}

  get size(): number {
    return this.records;
  }

  /**
   * Whether a record of `bytes` fits into `topic` now. A topic with nothing in it
   * takes any record, so one oversized record still goes out (alone) rather than
   * never: the broker's answer for it is then an error worth seeing.
   */
  fits(topic: string, bytes: number): boolean {
    const bucket = this.topics.get(topic);
    return bucket === undefined || bucket.messages.length === 0 || bucket.bytes + bytes <= this.maxBytesPerTopic;
  }

  add(topic: string, message: OutboundRecord, bytes: number): void {
    let bucket = this.topics.get(topic);
    if (bucket === undefined) {
      bucket = { messages: [], bytes: 0 };
      this.topics.set(topic, bucket);
    }
    bucket.messages.push(message);
    bucket.bytes += bytes;
    this.records += 1;
  }

  topicRecords(): TopicRecords[] {
    const out: TopicRecords[] = [];
    for (const [topic, bucket] of this.topics) {
      if (bucket.messages.length > 0) out.push({ topic, messages: bucket.messages, bytes: bucket.bytes });
    }
    return out;
  }

  clear(): void {
    this.topics.clear();
    this.records = 0;
  }
}
