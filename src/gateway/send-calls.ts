/**
 * The gateway's writes to Kafka, answered as an outcome the request handler turns
 * into 200 or 503.
 *
 * The merging of concurrent requests' writes into fewer produce requests is the
 * port's producer's one batching policy (src/kafka/producer.ts): up to
 * `maxConcurrentSends` sends at once, the writes that arrive meanwhile leave
 * together when one finishes; at low load every write leaves at the end of the event
 * loop's turn it was made in, with the others made in that turn.
 *
 * NOTE: each write still resolves only after the send that carried it was acknowledged
 * (acks=all), so "200 after the ack" holds. A merged send that fails fails every
 * write in it; some of its records may have been stored, and the clients' retries then
 * make duplicates (allowed). A write that times out while still waiting is taken
 * out and never sent, so that 503 means "not written".
 */
import type { RecordProducer, TopicRecords } from '../kafka/index.js';

export { SendTimeoutError } from '../kafka/index.js';

export type SendOutcome = { ok: true } | { ok: false; error: unknown };

/** Writes `records`; the outcome, or a failure after `timeoutMs` if Kafka has not acknowledged by then. */
export async function sendCalls(producer: RecordProducer, records: TopicRecords[], timeoutMs: number): Promise<SendOutcome> {
  try {
    await producer.send(records, { timeoutMs });
    return { ok: true };
  } catch (error) {
    return { ok: false, error };
  }
}
