import type { Kafka, Producer } from '../kafka/client.js';
import { createProducer } from '../kafka/client.js';
import { topicNames } from '../kafka/topics.js';
import type { DeletionHandler } from './deletions.js';

/**
 * Writes admin-API deletion requests to `<prefix>deletions`, keyed by userId,
 * as `{"userId", "sourceIds"?, "requestedAt"}` (DESIGN §4). The router acts on them.
 */
export function createDeletionRequester(kafka: Kafka, topicPrefix: () => string): {
  handle: DeletionHandler;
  stop(): Promise<void>;
} {
  let producer: Producer | undefined;
  let connecting: Promise<void> | undefined;
  const ready = async (): Promise<Producer> => {
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
      await out.send({ topic: topicNames(topicPrefix()).deletions, acks: -1, messages: [{ key: request.userId, value }] });
    },
    async stop() {
      if (producer) await producer.disconnect();
    },
  };
}
