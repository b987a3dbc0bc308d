// What a failed produce says, for a Kafka destination's attempt (src/delivery/kafka-sender.ts):
// whether the broker refused the records themselves (no later try can write them), and
// the broker's error names for people.
import { errorChain, errorTypes } from '../kafka/index.js';

/** Broker answers that refuse the record itself: too large, or not a record the topic takes. */
const RECORD_REFUSED = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TIMESTAMP']);

/** Whether the broker refused the records themselves (another try writes nothing either). */
export function isRecordRefused(error: unknown): boolean {
  return errorTypes(error).some((type) => RECORD_REFUSED.has(type));
}

/** The failure for a dead letter's `error`: the broker's error names when it answered, else the deepest message. */
export function describeProduceError(error: unknown): string {
  const types = [...new Set(errorTypes(error))];
  const messages = errorChain(error)
    .map((e) => (e instanceof Error ? e.message : ''))
    .filter((m) => m !== '');
  const message = messages.at(-1) ?? String(error);
  return types.length > 0 ? `${types.join(', ')}: ${message}` : message;
}
