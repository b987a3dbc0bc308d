import type { Message, Producer, TopicMessages } from '../kafka/index.js';

export interface ProduceBatcher {
  /** Resolves once the broker acknowledged the message (acks=all). */
  send(topic: string, message: Message): Promise<void>;
}

/** More per request gains little and makes one broker hiccup fail more callers at once. */
const MAX_MESSAGES_PER_REQUEST = 1_000;

/**
 * Gathers the retry and dead-letter writes made in the same turn of the event loop into
 * one `sendBatch`: a destination that fails for everything writes one retry per event,
 * and one request per event would make the retry path the bottleneck.
 */
export function createProduceBatcher(producer: Producer): ProduceBatcher {
  type Pending = { topic: string; message: Message; resolve: () => void; reject: (error: unknown) => void };
  let pending: Pending[] = [];
  let scheduled = false;

  const flush = async (): Promise<void> => {
    const batch = pending.slice(0, MAX_MESSAGES_PER_REQUEST);
    pending = pending.slice(batch.length);
    scheduled = pending.length > 0;
    if (scheduled) setImmediate(() => void flush());
    const byTopic = new Map<string, TopicMessages>();
    for (const item of batch) {
      let entry = byTopic.get(item.topic);
      if (!entry) {
        entry = { topic: item.topic, messages: [] };
        byTopic.set(item.topic, entry);
      }
      entry.messages.push(item.message);
    }
    try {
      await producer.sendBatch({ acks: -1, topicMessages: [...byTopic.values()] });
      for (const item of batch) item.resolve();
    } catch (error) {
      for (const item of batch) item.reject(error);
    }
  };

  return {
    send(topic, message) {
      return new Promise<void>((resolve, reject) => {
        pending.push({ topic, message, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          setImmediate(() => void flush());
        }
      });
    },
  };
}
