import { createProducer } from '../kafka/index.js';
import type { KafkaClient, RecordProducer } from '../kafka/index.js';
import type { DeletionHandler } from './deletions.js';
import { topicNames } from '../runtime/topics.js';

/**
 * Writes admin-API deletion requests to `<prefix>deletions`, keyed by userId,
 * as `{"userId", "sourceIds"?, "requestedAt"}` (docs/kafka.md). The router acts on them.
 */
export function createDeletionRequester(kafka: KafkaClient, topicPrefix: () => string): {
  handle: DeletionHandler;
  stop(): Promise<void>;
} {
  let producer: RecordProducer | undefined;
  let connecting: Promise<void> | undefined;
  const ready = async (): Promise<RecordProducer> => {
    if (!producer) {
      producer = createProducer(kafka);
      connecting = producer.connect();
    }
    await connecting;
    return producer;
  };
  return {
    async handle(request) {
      const out = await ready();
      const value = JSON.stringify({
        userId: request.userId,
        ...(request.sourceIds ? { sourceIds: request.sourceIds } : {}),
        requestedAt: new Date().toISOString(),
      });
      await out.send([{ topic: topicNames(topicPrefix()).deletions, messages: [{ key: request.userId, value }] }]);
    },
    async stop() {
      if (producer) await producer.disconnect();
    },
  };
}
