/** Kafka header names of DESIGN §4. */
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
} as const;

export type RawHeaders = Record<string, Buffer | string | (Buffer | string)[] | undefined>;

/** One header as a string; kafkajs gives Buffers (or arrays when repeated). */
export function headerText(headers: RawHeaders | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (value === undefined) return undefined;
  const first = Array.isArray(value) ? value[0] : value;
  if (first === undefined) return undefined;
  return typeof first === 'string' ? first : first.toString('utf8');
}
