// What the gateway writes for one request (pure): the accepted calls for `calls`, the
// rejected ones (or the whole refused body) for `calls.invalid`, all with the same
// headers, and an estimate of the write's size for the send coalescer.
import type { InvalidReason } from '../calls/index.js';
import { HEADER } from '../kafka/index.js';
import type { IHeaders, Message, TopicMessages, TopicNames } from '../kafka/index.js';
import { invalidRecord } from '../kafka/invalid-record.js';
import type { AcceptedCall, RejectedCall } from './ingest.js';

/** Per-record bytes added to a body's size to estimate its write: the gateway's fields, key, headers. */
export const RECORD_OVERHEAD_ESTIMATE = 256;

/**
 * The headers of the records of one request, in `calls` and (with an `error` added)
 * in `calls.invalid`. One object for every call of the request, values as bytes:
 * kafkajs would otherwise convert the same strings once per record.
 */
export function recordHeaders(sourceId: string, traceparent: string | undefined): IHeaders {
  const headers: IHeaders = { [HEADER.sourceId]: Buffer.from(sourceId) };
  if (traceparent !== undefined) headers[HEADER.traceparent] = Buffer.from(traceparent);
  return headers;
}

/** A request's write: its valid calls to `calls`, its invalid ones to `calls.invalid`; and its size estimate. */
export function requestWrite(
  topics: TopicNames,
  request: { accepted: readonly AcceptedCall[]; rejected: readonly RejectedCall[]; body: Buffer; headers: IHeaders; timestamp: string },
): { topicMessages: TopicMessages[]; bytes: number } {
  const { accepted, rejected, body, headers, timestamp } = request;
  const topicMessages: TopicMessages[] = [];
  if (accepted.length > 0) {
    topicMessages.push({
      topic: topics.calls,
      messages: accepted.map((call): Message => ({ key: call.key, value: call.value, headers, timestamp })),
    });
  }
  if (rejected.length > 0) {
    topicMessages.push({ topic: topics.callsInvalid, messages: invalidMessages(rejected, body, headers, timestamp) });
  }
  // The decompressed body bounds the values' size, plus what the gateway adds per record.
  const bytes = body.length + (accepted.length + rejected.length) * RECORD_OVERHEAD_ESTIMATE;
  return { topicMessages, bytes };
}

/** A whole request body refused before its calls were read, as one `calls.invalid` record. */
export function refusedBodyWrite(
  topics: TopicNames,
  refused: { body: Buffer; key: string | null; headers: IHeaders; receivedAtMs: number; reason: InvalidReason; message: string },
): { topicMessages: TopicMessages[]; bytes: number } {
  const record = { key: refused.key, value: refused.body, headers: refused.headers, timestamp: String(refused.receivedAtMs) };
  return {
    topicMessages: [{ topic: topics.callsInvalid, messages: [invalidRecord(record, `${refused.reason}: ${refused.message}`)] }],
    bytes: refused.body.length + RECORD_OVERHEAD_ESTIMATE,
  };
}

/**
 * One `calls.invalid` record per rejected call. A call that cannot be re-serialized
 * (nested deeper than JSON.stringify goes) is kept through one record of the whole
 * request body instead, however many such calls it holds.
 */
function invalidMessages(rejected: readonly RejectedCall[], body: Buffer, headers: IHeaders, timestamp: string): Message[] {
  const messages: Message[] = [];
  const unserializable: RejectedCall[] = [];
  for (const call of rejected) {
    if (call.value === undefined) {
      unserializable.push(call);
      continue;
    }
    messages.push(invalidRecord({ key: call.key, value: call.value, headers, timestamp }, `${call.reason}: ${call.message}`));
  }
  if (unserializable.length > 0) {
    const which = unserializable.map((call) => call.index).join(', ');
    const first = unserializable[0]!;
    messages.push(
      invalidRecord(
        { key: null, value: body, headers, timestamp },
        `${first.reason}: the whole request is kept because calls at batch index ${which} cannot be re-serialized: ${first.message}`,
      ),
    );
  }
  return messages;
}
