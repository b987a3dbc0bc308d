// The @platformatic/kafka side of the port: the connection options every producer,
// consumer, admin client and Wire made on it shares, and the conversion of the records
// it writes. Only src/kafka/ imports it.
import { compatibilityPartitioner } from '@platformatic/kafka';
import type { BaseOptions, MessageToProduce, SASLOptions } from '@platformatic/kafka';
import type { KafkaSettings } from './client.js';
import type { OutboundRecord, TopicRecords } from './records.js';

const SASL_MECHANISMS = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512' } as const;

/**
 * Retry waits: 200 ms doubling up to 1 s, 32 retries (about 30 s in all, what kafkajs's had):
 * a restarted broker is found within a second (docs/benchmarks.md#figures-behind-the-code).
 */
const RETRIES = 32;
const MAX_RETRY_MS = 1_000;
export function clientRetryDelay(_client: unknown, _operation: string, attempt: number): number {
  return Math.min(MAX_RETRY_MS, 200 * 2 ** Math.max(0, attempt - 1));
}

/**
 * The connection options of a client on `settings`: a 5 s connect timeout, the request
 * timeout, the retries above, TLS and SASL mapped onto this client's names.
 *
 * NOTE: `maxInflights: 1`: one request in flight per broker connection, so that a
 * retried produce request cannot overtake a later one (the producer is not idempotent:
 * producer.ts says why).
 */
export function platformaticOptions(settings: KafkaSettings, clientId: string, requestTimeoutMs = 30_000): BaseOptions {
  const options: BaseOptions = {
    clientId,
    bootstrapBrokers: [...settings.brokers],
    connectTimeout: 5_000,
    timeout: requestTimeoutMs,
    requestTimeout: requestTimeoutMs,
    retries: RETRIES,
    retryDelay: clientRetryDelay,
    maxInflights: 1,
    autocreateTopics: false,
  };
  if (settings.ssl !== undefined && settings.ssl !== false) options.tls = settings.ssl === true ? {} : (settings.ssl as NonNullable<BaseOptions['tls']>);
  if (settings.sasl !== undefined) {
    const sasl: SASLOptions = { mechanism: SASL_MECHANISMS[settings.sasl.mechanism], username: settings.sasl.username, password: settings.sasl.password };
    options.sasl = sasl;
  }
  return options;
}

function toBuffer(data: Buffer | string): Buffer {
  return typeof data === 'string' ? Buffer.from(data) : data;
}

/** Header names as bytes, made once: a few names (docs/kafka.md's) go out on every record. */
const headerNames = new Map<string, Buffer>();
/** Past this many distinct names, a new one is encoded per use rather than kept. */
const MAX_CACHED_HEADER_NAMES = 256;

function headerName(name: string): Buffer {
  let bytes = headerNames.get(name);
  if (bytes === undefined) {
    bytes = Buffer.from(name);
    if (headerNames.size < MAX_CACHED_HEADER_NAMES) headerNames.set(name, bytes);
  }
  return bytes;
}

/** Sets a record's fields onto `message` in this client's shape. */
function setFields(message: MessageToProduce, record: OutboundRecord): MessageToProduce {
  if (record.key !== undefined && record.key !== null) message.key = toBuffer(record.key);
  if (record.value !== null) message.value = toBuffer(record.value);
  if (record.partition !== undefined) message.partition = record.partition;
  if (record.timestamp !== undefined) message.timestamp = BigInt(record.timestamp);
  if (record.headers !== undefined) {
    const headers = new Map<Buffer, Buffer>();
    for (const name in record.headers) {
      const value = record.headers[name];
      if (value === undefined) continue;
      if (Array.isArray(value)) throw new TypeError(`header ${name} of a record for ${message.topic} has several values; the Kafka port writes one value per header name`);
      headers.set(headerName(name), toBuffer(value));
    }
    message.headers = headers;
  }
  return message;
}

/**
 * A record to write, in this client's shape (bytes in, bytes out: no serializers).
 *
 * NOTE: this client keeps headers in a Map, one value per name; a repeated header
 * (an array) is refused rather than silently cut to one value. No role writes one.
 */
export function toPlatformaticMessage(topic: string, record: OutboundRecord): MessageToProduce {
  return setFields({ topic }, record);
}

/**
 * The records of one send in this client's shape, in order.
 *
 * NOTE: the router adds the same record object to every destination's topic; in a send
 * to several topics it is converted once, its parts and key hash shared by the copies
 * (this client only reads them), not once per topic. A send to one topic (the gateway's)
 * converts each record directly: there the lookup only costs (`npm run bench -- gateway`).
 */
export function toPlatformaticMessages(records: readonly TopicRecords[]): MessageToProduce[] {
  const messages: MessageToProduce[] = [];
  if (records.length === 1) {
    const { topic, messages: outbound } = records[0]!;
    for (const record of outbound) messages.push(toPlatformaticMessage(topic, record));
    return messages;
  }
  const converted = new Map<OutboundRecord, MessageToProduce>();
  for (const { topic, messages: outbound } of records) {
    for (const record of outbound) {
      let first = converted.get(record);
      if (first === undefined) {
        first = toPlatformaticMessage(topic, record);
        // NOTE: the key's hash too, once: this client takes a number as the partition
        // before the topic's partition count (it divides by it), so every copy lands
        // where the producer's compatibilityPartitioner would put it, hashed once.
        if (first.partition === undefined && first.key !== undefined) first.partition = compatibilityPartitioner(first, first.key);
        converted.set(record, first);
        messages.push(first);
      } else {
        messages.push({ topic, key: first.key, value: first.value, headers: first.headers, partition: first.partition, timestamp: first.timestamp });
      }
    }
  }
  return messages;
}
