/**
 * Straight into the `calls` topic, as the gateway writes it: key userId else
 * anonymousId, header `source-id`, value the call JSON (never the write key).
 *
 * NOTE: the Kafka client is an optional peer dependency, loaded on the first send (a
 * dynamic import), so applications that only use HTTP neither install nor load one:
 * kafkajs when it is installed, else @platformatic/kafka (Node 22.22+; plain and scram
 * logins only). NOTE: kafkajs first when both are installed, because this package runs
 * on Node 20 and @platformatic/kafka 2 needs 22.22+. In the daemon's chaos suite
 * @platformatic/kafka 2.12 threw from a socket callback (an uncaught TypeError in its
 * producer's metadata handling) during a broker restart; the daemon's check of the
 * metadata before each send is made here too (send-guard.ts, this package's copy of
 * it). Their types are used here only inside function bodies, so the package's
 * declarations never mention either.
 */
import { createRequire } from 'node:module';
import type { ConnectionOptions } from 'node:tls';
import type * as Platformatic from '@platformatic/kafka';
import type * as Kafkajs from 'kafkajs';
import type { KafkaConfig, Producer } from 'kafkajs';
import { MAX_CALL_BYTES } from './call-model.js';
import type { DebugLog } from './debug.js';
import { AnalyticsConfigError } from './errors.js';
import { LIBRARY_METADATA_MAX_AGE_MS, checkSendMetadata } from './send-guard.js';
import type { BatchLimits, QueuedCall, SendResult, Transport } from './transport.js';

/** SASL settings, as kafkajs takes them (its built-in mechanisms; @platformatic/kafka is used for plain and scram only). */
export type KafkaSaslOptions =
  | { mechanism: 'plain'; username: string; password: string }
  | { mechanism: 'scram-sha-256'; username: string; password: string }
  | { mechanism: 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'aws'; authorizationIdentity: string; accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | { mechanism: 'oauthbearer'; oauthBearerProvider: () => Promise<{ value: string }> };

/**
 * Node's TLS options (`tls.connect`), as the Kafka client takes them: the usual ones named,
 * any other passed on as given. NOTE: written out rather than imported from `node:tls`,
 * so that the package's declarations type-check in a project without `@types/node` that
 * only sends over HTTP (checked by test/integration/client-package.test.ts). A Buffer is
 * a Uint8Array.
 */
export interface KafkaTlsOptions {
  ca?: string | Uint8Array | (string | Uint8Array)[];
  cert?: string | Uint8Array | (string | Uint8Array)[];
  key?: string | Uint8Array | (string | Uint8Array)[];
  passphrase?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
  [option: string]: unknown;
}

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
  ssl?: boolean | KafkaTlsOptions;
  sasl?: KafkaSaslOptions;
}

export const DEFAULT_CALLS_TOPIC = 'switchyard.calls';

/** The source-id header name of docs/kafka.md. */
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
  let sender: CallSender | undefined;
  let closed = false;

  return {
    description: `Kafka topic ${topic}`,
    limits,
    async send(batch: readonly QueuedCall[]): Promise<SendResult> {
      if (closed) return { kind: 'failure', reason: 'the Kafka transport is closed' };
      try {
        sender ??= await connectSender(options, topic, log);
        await sender.send(batch);
        return { kind: 'success' };
      } catch (err) {
        if (err instanceof AnalyticsConfigError) return { kind: 'failure', reason: err.message, cause: err };
        return classifyKafkaError(err, topic);
      }
    },
    async close(): Promise<void> {
      closed = true;
      const current = sender;
      sender = undefined;
      await current?.close();
    },
  };
}

/** A connected producer of calls, on one client or the other. */
interface CallSender {
  send(batch: readonly QueuedCall[]): Promise<void>;
  close(): Promise<void>;
}

async function connectSender(options: KafkaTransportOptions, topic: string, log: DebugLog): Promise<CallSender> {
  const mechanism = options.sasl?.mechanism;
  const platformaticFits = mechanism === undefined || mechanism === 'plain' || mechanism.startsWith('scram-');
  const platformatic = platformaticFits && !resolvable('kafkajs') ? await loadPlatformatic() : undefined;
  const sender = platformatic !== undefined ? await connectPlatformatic(platformatic, options, topic) : await connectKafkajs(options, topic, log);
  log(`connected to Kafka (${options.brokers.join(',')}) with ${platformatic !== undefined ? '@platformatic/kafka' : 'kafkajs'}`);
  return sender;
}

// NOTE: the producer the daemon's roles use (src/kafka/client.ts and producer.ts in the
// daemon, which say why it is not idempotent): acks=all on each send, one request in
// flight, no topic auto-creation, and the gateway's partitioner (murmur2 as kafkajs and
// the Java client hash keys), so that a user's calls land in the same partition
// whichever way they came in.

async function connectPlatformatic(lib: typeof Platformatic, options: KafkaTransportOptions, topic: string): Promise<CallSender> {
  const sasl = options.sasl as Extract<KafkaSaslOptions, { username: string }> | undefined;
  const producer = new lib.Producer({
    clientId: options.clientId ?? 'switchyard-client',
    bootstrapBrokers: options.brokers,
    acks: -1,
    idempotent: false,
    maxInflights: 1,
    autocreateTopics: false,
    partitioner: lib.compatibilityPartitioner,
    metadataMaxAge: LIBRARY_METADATA_MAX_AGE_MS,
    ...(options.ssl !== undefined && options.ssl !== false ? { tls: options.ssl === true ? {} : (options.ssl as ConnectionOptions) } : {}),
    ...(sasl !== undefined ? { sasl: { mechanism: sasl.mechanism.toUpperCase() as 'PLAIN', username: sasl.username, password: sasl.password } } : {}),
  });
  try {
    await producer.metadata({ topics: [] });
  } catch (err) {
    await producer.close(true).catch(() => undefined);
    throw err;
  }
  const header = Buffer.from(SOURCE_ID_HEADER);
  const sourceId = Buffer.from(options.sourceId);
  return {
    async send(batch) {
      // A metadata answer without the topic's leaders (a broker restarting) fails the send,
      // to be retried, instead of throwing inside the client (send-guard.ts).
      await checkSendMetadata(producer, [topic]);
      await producer.send({
        messages: batch.map((call) => ({ topic, key: Buffer.from(call.key), value: Buffer.from(call.json), headers: new Map([[header, sourceId]]) })),
      });
    },
    close: () => producer.close(),
  };
}

async function connectKafkajs(options: KafkaTransportOptions, topic: string, log: DebugLog): Promise<CallSender> {
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
  if (options.ssl !== undefined) config.ssl = options.ssl as boolean | ConnectionOptions;
  if (options.sasl !== undefined) config.sasl = options.sasl;
  const created: Producer = new Kafka(config).producer({
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
  return {
    async send(batch) {
      await created.send({
        topic,
        acks: -1,
        messages: batch.map((call) => ({ key: call.key, value: call.json, headers: { [SOURCE_ID_HEADER]: options.sourceId } })),
      });
    },
    close: () => created.disconnect(),
  };
}

const KAFKAJS_MISSING =
  'the Kafka transport needs a Kafka client, and neither @platformatic/kafka (Node 22.22+) nor kafkajs (version 2) is installed: ' +
  'run `npm install @platformatic/kafka` (or `npm install kafkajs`) in your application, or send over HTTP with endpoint instead of kafka';

function resolvable(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Throws AnalyticsConfigError when no Kafka client can be found from here, so that
 * `new Analytics(…, { kafka })` fails at once instead of at the first send.
 */
export function checkKafkajsInstalled(): void {
  if (!resolvable('@platformatic/kafka') && !resolvable('kafkajs')) throw new AnalyticsConfigError(KAFKAJS_MISSING);
}

/** @platformatic/kafka, or undefined when it is not installed. */
async function loadPlatformatic(): Promise<typeof Platformatic | undefined> {
  if (!resolvable('@platformatic/kafka')) return undefined;
  return import('@platformatic/kafka');
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
  /** @platformatic/kafka: the error code, the broker's error name, whether a retry may help, the errors it aggregates. */
  code?: unknown;
  apiId?: unknown;
  canRetry?: unknown;
  errors?: unknown;
}

/** The error and what it wraps (causes, aggregated errors), a few levels deep. */
function errorChain(err: unknown): KafkaLikeError[] {
  const found: KafkaLikeError[] = [];
  const walk = (e: unknown, depth: number): void => {
    if (typeof e !== 'object' || e === null || depth > 5 || found.length > 50 || found.includes(e)) return;
    found.push(e);
    walk((e as KafkaLikeError).cause, depth + 1);
    const inner = (e as KafkaLikeError).errors;
    if (Array.isArray(inner)) for (const item of inner) walk(item, depth + 1);
  };
  walk(err, 0);
  return found;
}

/**
 * Retryable unless the broker said something no retry can fix (a protocol error kafkajs
 * marks non-retriable, such as MESSAGE_TOO_LARGE or TOPIC_AUTHORIZATION_FAILED, or
 * failed SASL authentication): a broker that is down, restarting or electing a leader
 * comes back.
 */
export function classifyKafkaError(err: unknown, topic: string): SendResult {
  let reason = `Kafka: ${describeKafkaError(err)}`;
  const chain = errorChain(err);
  // NOTE: @platformatic/kafka reports a missing topic as a user error of its own
  // ("Unknown topic <name>."), found in its metadata answer; its message is all it has.
  const missingTopic = (e: KafkaLikeError) =>
    e.type === 'UNKNOWN_TOPIC_OR_PARTITION' || e.apiId === 'UNKNOWN_TOPIC_OR_PARTITION' || (e.code === 'PLT_KFK_USER' && typeof e.message === 'string' && e.message.startsWith('Unknown topic '));
  if (chain.some(missingTopic)) {
    reason += ` (topic ${topic} does not exist: start the router, which creates it, or set kafka.topic to "<topicPrefix>calls")`;
  }
  for (const e of chain) {
    if (e.name === 'KafkaJSProtocolError' && e.retriable === false) return { kind: 'failure', reason, cause: err };
    if (e.name === 'KafkaJSSASLAuthenticationError') return { kind: 'failure', reason, cause: err };
    if (e.code === 'PLT_KFK_PROTOCOL' && e.canRetry === false) return { kind: 'failure', reason, cause: err };
    if (e.code === 'PLT_KFK_AUTHENTICATION') return { kind: 'failure', reason, cause: err };
  }
  return { kind: 'retryable', reason, cause: err };
}

function describeKafkaError(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const e = err as KafkaLikeError;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const typeName = typeof e.type === 'string' ? e.type : errorChain(err).find((c) => typeof c.apiId === 'string')?.apiId;
  const type = typeof typeName === 'string' ? ` (${typeName})` : '';
  const cause = e.cause as KafkaLikeError | undefined;
  const causeText =
    cause !== undefined && cause !== null && typeof cause.message === 'string' && cause.message !== message
      ? `: ${cause.message}`
      : '';
  return `${message}${type}${causeText}`;
}
