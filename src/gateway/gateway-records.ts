// What the gateway writes for one request (pure): the accepted calls for `calls`, the
// rejected ones (or the whole refused body) for `calls.invalid`, all with the same headers.
import type { InvalidReason } from '../calls/index.js';
import type { OutboundRecord, RecordHeaders, TopicRecords } from '../kafka/index.js';
import type { AcceptedCall, RejectedCall } from './ingest.js';
import type { TopicNames } from '../runtime/topics.js';
import { HEADER } from '../runtime/headers.js';
import { invalidRecord } from '../runtime/invalid-record.js';

/**
 * The headers of the records of one request, in `calls` and (with an `error` added)
 * in `calls.invalid`. One object for every call of the request, values as bytes:
 * the port (src/kafka/platformatic-client.ts) would otherwise turn the same strings into
 * bytes once per record.
 */
export function recordHeaders(sourceId: string, traceparent: string | undefined): RecordHeaders {
  const headers: RecordHeaders = { [HEADER.sourceId]: Buffer.from(sourceId) };
  if (traceparent !== undefined) headers[HEADER.traceparent] = Buffer.from(traceparent);
  return headers;
}

/** A request's write: its valid calls to `calls`, its invalid ones to `calls.invalid`. */
export function requestWrite(
  topics: TopicNames,
  request: { accepted: readonly AcceptedCall[]; rejected: readonly RejectedCall[]; body: Buffer; headers: RecordHeaders; timestamp: string },
): TopicRecords[] {
  const { accepted, rejected, body, headers, timestamp } = request;
  const topicMessages: TopicRecords[] = [];
  if (accepted.length > 0) {
    topicMessages.push({
      topic: topics.calls,
      messages: accepted.map((call): OutboundRecord => ({ key: call.key, value: call.value, headers, timestamp })),
    });
  }
  if (rejected.length > 0) {
    topicMessages.push({ topic: topics.callsInvalid, messages: invalidMessages(rejected, body, headers, timestamp) });
  }
  return topicMessages;
}

/** A whole request body refused before its calls were read, as one `calls.invalid` record. */
export function refusedBodyWrite(
  topics: TopicNames,
  refused: { body: Buffer; key: string | null; headers: RecordHeaders; receivedAtMs: number; reason: InvalidReason; message: string },
): TopicRecords[] {
  const record = { key: refused.key, value: refused.body, headers: refused.headers, timestamp: String(refused.receivedAtMs) };
  return [{ topic: topics.callsInvalid, messages: [invalidRecord(record, `${refused.reason}: ${refused.message}`)] }];
}

/**
 * One `calls.invalid` record per rejected call. A call that cannot be re-serialized
 * (nested deeper than JSON.stringify goes) is kept through one record of the whole
 * request body instead, however many such calls it holds.
 */
function invalidMessages(rejected: readonly RejectedCall[], body: Buffer, headers: RecordHeaders, timestamp: string): OutboundRecord[] {
  const messages: OutboundRecord[] = [];
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
