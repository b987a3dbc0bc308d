// Which records go out together, and which offsets may be committed after them.
// Pure bookkeeping: the router service does the sending and committing.
import type { IHeaders, Message, TopicMessages } from '../kafka/index.js';

/**
 * The most bytes one send puts into one topic.
 *
 * NOTE: kafkajs sends all records of one partition in one record batch, and the
 * broker refuses a batch over `message.max.bytes` (1 MiB by default) with
 * RECORD_TOO_LARGE, which would be retried forever. A partition gets at most its
 * topic's share, so capping the topic caps every partition, whatever the keys. The
 * margin covers the per-record and per-batch framing that `recordBytes` leaves out.
 */
export const MAX_TOPIC_BYTES_PER_SEND = 900_000;

/** A record's size as the broker counts it, near enough: key, value and headers, plus framing. */
export function recordBytes(key: Buffer | null, value: Buffer | null, headers: IHeaders | undefined): number {
  let size = 24 + (key?.length ?? 0) + (value?.length ?? 0);
  if (headers) {
    for (const name in headers) {
      const header = headers[name];
      const values = Array.isArray(header) ? header : [header];
      for (const v of values) {
        if (v === undefined) continue;
        size += 4 + name.length + (typeof v === 'string' ? Buffer.byteLength(v) : v.length);
      }
    }
  }
  return size;
}

interface TopicBucket {
  messages: Message[];
  bytes: number;
}

/** Records waiting to be sent in one `sendBatch`, grouped by topic, within a byte budget per topic. */
export class OutgoingBatch {
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

  add(topic: string, message: Message, bytes: number): void {
    let bucket = this.topics.get(topic);
    if (bucket === undefined) {
      bucket = { messages: [], bytes: 0 };
      this.topics.set(topic, bucket);
    }
    bucket.messages.push(message);
    bucket.bytes += bytes;
    this.records += 1;
  }

  topicMessages(): TopicMessages[] {
    const out: TopicMessages[] = [];
    for (const [topic, bucket] of this.topics) {
      if (bucket.messages.length > 0) out.push({ topic, messages: bucket.messages });
    }
    return out;
  }

  clear(): void {
    this.topics.clear();
    this.records = 0;
  }
}

/** The offset after `offset` (Kafka commits name the next record to read). */
export function offsetAfter(offset: string): string {
  return (BigInt(offset) + 1n).toString();
}

/**
 * The offset to commit once every record of a batch up to and including
 * `lastDone` is acknowledged downstream.
 *
 * NOTE: when `lastDone` is the batch's last message, commit past the batch's last
 * offset instead, which can be higher: kafkajs filters the control records that
 * transactional producers write (and aborted records) out of `batch.messages`, and
 * a commit that stopped before them would leave the group's lag stuck above zero.
 */
export function commitOffset(lastDone: string, lastMessage: string, batchLastOffset: string): string {
  if (lastDone === lastMessage && BigInt(batchLastOffset) > BigInt(lastDone)) return offsetAfter(batchLastOffset);
  return offsetAfter(lastDone);
}
