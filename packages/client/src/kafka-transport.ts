/**
 * Straight into the `calls` topic, as the gateway writes it: key userId else
 * anonymousId, header `source-id`, value the call JSON (never the write key).
 *
 * NOTE: kafkajs is an optional peer dependency, loaded on the first send (a dynamic
 * import), so applications that only use HTTP neither install nor load it. Its types
 * are used here only inside function bodies, so the package's declarations never
 * mention kafkajs either.
 */
import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'node:tls';
import type * as Kafkajs from 'kafkajs';
import type { KafkaConfig, Producer } from 'kafkajs';
import { MAX_CALL_BYTES } from './call-model.js';
import type { DebugLog } from './debug.js';
import { AnalyticsConfigError } from './errors.js';
import type { BatchLimits, QueuedCall, SendResult, Transport } from './transport.js';

/** SASL settings, as kafkajs takes them (its built-in mechanisms). */
export type KafkaSaslOptions =
  | { mechanism: 'plain'; username: string; password: string }
  | { mechanism: 'scram-sha-256'; username: string; password: string }
  | { mechanism: 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'aws'; authorizationIdentity: string; accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | { mechanism: 'oauthbearer'; oauthBearerProvider: () => Promise<{ value: string }> };

export interface KafkaTransportOptions {
  /** Bootstrap brokers, `host:port`. */
  brokers: string[];
  /** The router's calls topic: `<topicPrefix>calls`. Default `switchyard.calls`. */
  topic?: string;
  /** The source these calls belong to (a source id in the router's config), sent as header `source-id`. */
  sourceId: string;
  /** Default `switchyard-client`. */
  clientId?: string;
  /** TLS to the brokers: `true`, or Node's TLS options (ca, cert, key, …). */
  ssl?: boolean | ConnectionOptions;
  sasl?: KafkaSaslOptions;
}

export const DEFAULT_CALLS_TOPIC = 'switchyard.calls';

/** The source-id header name of DESIGN §4. */
const SOURCE_ID_HEADER = 'source-id';

/**
 * NOTE: the broker refuses a record batch over `message.max.bytes` (1 MB by default);
 * 500 KB of calls with a generous per-record allowance stays well under it.
 */
const MAX_BATCH_BYTES = 500 * 1024;
const MAX_BATCH_CALLS = 2_500;
/** Record framing (lengths, offsets delta, timestamp delta, attributes) and the header name. */
const PER_RECORD_BYTES = 32 + SOURCE_ID_HEADER.length;

export function createKafkaTransport(options: KafkaTransportOptions, log: DebugLog): Transport {
  const topic = options.topic ?? DEFAULT_CALLS_TOPIC;
  const sourceIdBytes = Buffer.byteLength(options.sourceId, 'utf8');
  const limits: BatchLimits = {
    // The router's own limit on a record value: the call JSON is stored as sent.
    maxCallBytes: MAX_CALL_BYTES,
    maxCalls: MAX_BATCH_CALLS,
    maxBytes: MAX_BATCH_BYTES,
    overheadBytes: 61, // the record batch header
    callBytes: (call) => call.bytes + Buffer.byteLength(call.key, 'utf8') + sourceIdBytes + PER_RECORD_BYTES,
  };
  // NOTE: the dispatcher sends one batch at a time, so connecting needs no lock.
  let producer: Producer | undefined;
  let closed = false;

  async function connect(): Promise<Producer> {
    const { Kafka, Partitioners } = await loadKafkajs();
    const config: KafkaConfig = {
      clientId: options.clientId ?? 'switchyard-client',
      brokers: options.brokers,
      // kafkajs logs to the console by default; here its lines join the DEBUG=analytics log.
      logCreator: () => (entry) => {
        const error = typeof entry.log.error === 'string' ? `: ${entry.log.error}` : '';
        log(`kafkajs ${entry.label}: ${entry.log.message}${error}`);
      },
    };
    if (options.ssl !== undefined) config.ssl = options.ssl;
    if (options.sasl !== undefined) config.sasl = options.sasl;
    // NOTE: the producer the daemon's roles use (src/kafka/client.ts createProducer, which
    // says why it is not idempotent): acks=all on each send, one request in flight, no topic
    // auto-creation, and the gateway's partitioner, so that a user's calls land in the same
    // partition whichever way they came in.
    const created = new Kafka(config).producer({
      idempotent: false,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    try {
      await created.connect();
    } catch (err) {
      await created.disconnect().catch(() => undefined);
      throw err;
    }
    log(`connected to Kafka (${options.brokers.join(',')})`);
    return created;
  }

  return {
    description: `Kafka topic ${topic}`,
    limits,
    async send(batch: readonly QueuedCall[]): Promise<SendResult> {
      if (closed) return { kind: 'failure', reason: 'the Kafka transport is closed' };
      try {
        producer ??= await connect();
        await producer.send({
          topic,
          acks: -1,
          messages: batch.map((call) => ({
            key: call.key,
            value: call.json,
            headers: { [SOURCE_ID_HEADER]: options.sourceId },
          })),
        });
        return { kind: 'success' };
      } catch (err) {
        if (err instanceof AnalyticsConfigError) return { kind: 'failure', reason: err.message, cause: err };
        return classifyKafkaError(err, topic);
      }
    },
    async close(): Promise<void> {
      closed = true;
      const current = producer;
      producer = undefined;
      await current?.disconnect();
    },
  };
}

const KAFKAJS_MISSING =
  'the Kafka transport needs the kafkajs package (version 2), which is not installed: ' +
  'run `npm install kafkajs` in your application, or send over HTTP with endpoint instead of kafka';

/**
 * Throws AnalyticsConfigError when kafkajs cannot be found from here, so that
 * `new Analytics(…, { kafka })` fails at once instead of at the first send.
 */
export function checkKafkajsInstalled(): void {
  try {
    createRequire(import.meta.url).resolve('kafkajs');
  } catch {
    throw new AnalyticsConfigError(KAFKAJS_MISSING);
  }
}

async function loadKafkajs(): Promise<typeof Kafkajs> {
  try {
    return await import('kafkajs');
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code === 'ERR_MODULE_NOT_FOUND') throw new AnalyticsConfigError(KAFKAJS_MISSING);
    throw err;
  }
}

interface KafkaLikeError {
  name?: unknown;
  message?: unknown;
  retriable?: unknown;
  type?: unknown;
  cause?: unknown;
}

/**
 * Retryable unless the broker said something no retry can fix (a protocol error kafkajs
 * marks non-retriable, such as MESSAGE_TOO_LARGE or TOPIC_AUTHORIZATION_FAILED, or
 * failed SASL authentication): a broker that is down, restarting or electing a leader
 * comes back.
 */
export function classifyKafkaError(err: unknown, topic: string): SendResult {
  let reason = `Kafka: ${describeKafkaError(err)}`;
  for (let current: unknown = err, depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const e = current as KafkaLikeError;
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') {
      reason += ` (topic ${topic} does not exist: start the router, which creates it, or set kafka.topic to "<topicPrefix>calls")`;
    }
    if (e.name === 'KafkaJSProtocolError' && e.retriable === false) return { kind: 'failure', reason, cause: err };
    if (e.name === 'KafkaJSSASLAuthenticationError') return { kind: 'failure', reason, cause: err };
    current = e.cause === current ? undefined : e.cause;
  }
  return { kind: 'retryable', reason, cause: err };
}

function describeKafkaError(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const e = err as KafkaLikeError;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const type = typeof e.type === 'string' ? ` (${e.type})` : '';
  const cause = e.cause as KafkaLikeError | undefined;
  const causeText =
    cause !== undefined && cause !== null && typeof cause.message === 'string' && cause.message !== message
      ? `: ${cause.message}`
      : '';
  return `${message}${type}${causeText}`;
}
