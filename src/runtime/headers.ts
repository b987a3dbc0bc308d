// The headers of Switchyard's records (docs/kafka.md#headers): their names, their
// readers, and the one writer of a fresh delivery's.
import type { RecordHeaders } from '../kafka/index.js';

/** Kafka header names of docs/kafka.md. */
export const HEADER = {
  sourceId: 'source-id',
  messageId: 'message-id',
  attempt: 'attempt',
  firstAttemptAt: 'first-attempt-at',
  lastAttemptAt: 'last-attempt-at',
  traceparent: 'traceparent',
  error: 'error',
  // Internal: when a retry-tier message may be attempted again (epoch ms).
  dueAt: 'due-at',
  // Internal: when the call was received (epoch ms), for the end-to-end histogram.
  receivedAt: 'received-at',
  // The call's type, on the delivery records of calls routed to a Kafka destination (its records carry it on).
  type: 'type',
} as const;

/** A header value as written: the producer takes either; a Buffer made once is not encoded again per record. */
export type HeaderValue = Buffer | string;

/** One header as a string; records read give text where the value is UTF-8, else Buffers (arrays when repeated). */
export function headerText(headers: RecordHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (value === undefined) return undefined;
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : first.toString('utf8');
}

/** The first value of a header as it came (Buffer or string), for passing it on unchanged. */
export function headerValue(headers: RecordHeaders | undefined, name: string): HeaderValue | undefined {
  const value = headers?.[name];
  return Array.isArray(value) ? value[0] : value;
}

/** What a delivery that no one has attempted yet says about itself (docs/kafka.md). */
export interface FreshDelivery<V extends HeaderValue> {
  sourceId: V;
  messageId: V;
  /** Epoch ms, only when the record timestamp cannot carry the receipt time. */
  receivedAt?: V | undefined;
  traceparent?: V | undefined;
  /** The call's type (`track`…): only for calls routed to a Kafka destination (docs/kafka.md#a-topic-as-a-destination). */
  type?: V | undefined;
}

// NOTE: Buffers made once for the router's hot path: it sends the same headers object
// once per destination, and a string value would be encoded again for each.
const ATTEMPT_ZERO = Buffer.from('0');
const NOT_ATTEMPTED = Buffer.alloc(0);

/**
 * The one writer of fresh delivery headers: `attempt` 0 and an empty
 * `first-attempt-at` (the deliverer fills it on the first attempt), for every
 * record written to `deliveries.<id>`: by the router (calls, deletions), by the
 * audiences (identifies, deletes), and by a replay of dead letters.
 *
 * Given the fields, the headers are in the order `source-id`, `message-id`,
 * `attempt`, `first-attempt-at`, `received-at`, `traceparent`, `type` (absent ones left out);
 * `attempt` and `first-attempt-at` are Buffers when the message-id is one, else
 * strings. Given `carried` (a replayed dead letter's headers without its stage
 * headers), those come first, unchanged, and the delivery starts afresh after them.
 */
export function freshDeliveryHeaders(fields: FreshDelivery<string>): Record<string, string>;
export function freshDeliveryHeaders(fields: FreshDelivery<HeaderValue>): Record<string, HeaderValue>;
export function freshDeliveryHeaders(fields: { carried: RecordHeaders }): RecordHeaders;
export function freshDeliveryHeaders(fields: FreshDelivery<HeaderValue> | { carried: RecordHeaders }): RecordHeaders {
  if ('carried' in fields) return { ...fields.carried, [HEADER.attempt]: '0', [HEADER.firstAttemptAt]: '' };
  const asBytes = typeof fields.messageId !== 'string';
  const headers: Record<string, HeaderValue> = {
    [HEADER.sourceId]: fields.sourceId,
    [HEADER.messageId]: fields.messageId,
    [HEADER.attempt]: asBytes ? ATTEMPT_ZERO : '0',
    [HEADER.firstAttemptAt]: asBytes ? NOT_ATTEMPTED : '',
  };
  if (fields.receivedAt !== undefined) headers[HEADER.receivedAt] = fields.receivedAt;
  if (fields.traceparent !== undefined) headers[HEADER.traceparent] = fields.traceparent;
  if (fields.type !== undefined) headers[HEADER.type] = fields.type;
  return headers;
}
