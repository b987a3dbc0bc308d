// The one module that owns the kafkajs client: the rest of src/kafka/ builds the port
// (records, producer, consumer runtime, admin, topology) on it, and roles see only the
// port's own types. The port also runs on @platformatic/kafka (platformatic-client.ts):
// which client a KafkaClient's producers and consumers use is decided here, once.
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import type { Consumer, ConsumerConfig, KafkaConfig, LogEntry, Producer, SASLOptions } from 'kafkajs';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { applyIdleTimerFix } from './idle-timer-fix.js';
import { applyTopicLookupFix } from './topic-lookup-fix.js';
import { applyJoinFix } from './join-fix.js';
import { applyHeaderDecodeFix } from './header-decode-fix.js';
import { applyFetchSessions } from './fetch-sessions.js';
import { createKafkaLogLevels } from './log-levels.js';
import type { LogTarget } from './log-levels.js';
import { DEFAULT_KAFKA_CLIENT } from './client-kind.js';
import type { KafkaClientKind } from './client-kind.js';

export type KafkaSettings = Config['kafka'];

function toKafkaLevel(level: logLevel): LogTarget {
  switch (level) {
    case logLevel.ERROR:
    case logLevel.NOTHING:
      return 'error';
    case logLevel.WARN:
      return 'warn';
    case logLevel.INFO:
      return 'info';
    default:
      return 'debug';
  }
}

/**
 * kafkajs log lines as pino JSON, at the level log-levels.ts decides: its transient
 * start-up errors at debug unless they last, INFO chatter at debug. kafkajs's own
 * `timestamp` and `logger` fields are dropped (pino has the time; `component` says who).
 */
function pinoLogCreator(logger: Logger) {
  return () => {
    const levelOf = createKafkaLogLevels();
    return ({ namespace, level, log }: LogEntry) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = log as LogEntry['log'] & { logger?: unknown };
      const error = typeof extra.error === 'string' ? extra.error : undefined;
      const decision = levelOf({ namespace, level: toKafkaLevel(level), message, error }, Date.now());
      const fields = decision.lasting ? { namespace, ...extra, lastingMs: decision.lasting.ms, occurrences: decision.lasting.occurrences } : { namespace, ...extra };
      logger[decision.level]({ kafka: fields }, message);
    };
  };
}

/**
 * How long a consumer group waits for a member that stopped heartbeating before it
 * hands that member's partitions to the others.
 *
 * NOTE: kafkajs's default is 30 s, so after a SIGKILL (or an OOM kill) the router's or
 * a destination's partitions stalled for 30 s: the replacement cannot join until the
 * dead member's session expires (found by the chaos harness). 10 s with a heartbeat
 * every 3 s keeps that stall short and still rides out a couple of lost heartbeats
 * (the broker's floor, group.min.session.timeout.ms, is 6 s by default). Long batches
 * heartbeat from inside them: the consumer runtime (consumer.ts) does so after each
 * markDone (the router's after each send) and every second while a batch runs.
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 10_000;
export const CONSUMER_HEARTBEAT_INTERVAL_MS = 3_000;

/** kafkajs's client with Switchyard's consumer defaults; a consumer's own settings still win. */
class SwitchyardKafka extends Kafka {
  override consumer(config: ConsumerConfig): Consumer {
    return super.consumer({ sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS, heartbeatInterval: CONSUMER_HEARTBEAT_INTERVAL_MS, ...config });
  }
}

/**
 * A connection configuration to the cluster (no connection of its own): what the
 * composition root hands every role, from which the port makes producers, consumers
 * and admin clients. Opaque outside src/kafka/.
 */
export interface KafkaClient {
  readonly settings: KafkaSettings;
  readonly logger: Logger;
  /** The client id its connections announce. */
  readonly clientId: string;
  /**
   * The client library its producers and the router's and audiences' consumers run on.
   * The admin client, the deliverer's consumer (it holds partitions, which only kafkajs
   * can) and the scans of replay and read-to-end stay on kafkajs whatever this says.
   */
  readonly kind: KafkaClientKind;
}

export interface CreateKafkaOptions {
  /** Appended to the configured client id (`<clientId>-<suffix>`). */
  clientIdSuffix?: string;
  /** Which client library; default DEFAULT_KAFKA_CLIENT (@platformatic/kafka) (the CLI takes SWITCHYARD_KAFKA_CLIENT: kafkaClientKindFromEnv). */
  kind?: KafkaClientKind;
}

const kafkajsClients = new WeakMap<KafkaClient, Kafka>();

export function createKafka(settings: KafkaSettings, logger: Logger, options: CreateKafkaOptions = {}): KafkaClient {
  applyIdleTimerFix();
  applyTopicLookupFix();
  applyJoinFix();
  applyHeaderDecodeFix();
  applyFetchSessions();
  const clientId = options.clientIdSuffix ? `${settings.clientId}-${options.clientIdSuffix}` : settings.clientId;
  const config: KafkaConfig = {
    clientId,
    brokers: settings.brokers,
    logLevel: logLevel.WARN,
    logCreator: pinoLogCreator(logger.child({ component: 'kafkajs' })),
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { initialRetryTime: 200, retries: 8, maxRetryTime: 10_000 },
  };
  if (settings.ssl !== undefined) config.ssl = settings.ssl as KafkaConfig['ssl'];
  if (settings.sasl !== undefined) config.sasl = settings.sasl as SASLOptions;
  const client: KafkaClient = { settings, logger, clientId, kind: options.kind ?? DEFAULT_KAFKA_CLIENT };
  kafkajsClients.set(client, new SwitchyardKafka(config));
  return client;
}

/** Whether `error` comes from the Kafka client (its messages say what failed, not where). */
export function isKafkaClientError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return error.name.startsWith('KafkaJS') || (typeof code === 'string' && code.startsWith('PLT_KFK_'));
}

/** The kafkajs client behind `client` (inside src/kafka/ only). */
export function kafkajsOf(client: KafkaClient): Kafka {
  const kafka = kafkajsClients.get(client);
  if (kafka === undefined) throw new TypeError('not a KafkaClient made by createKafka()');
  return kafka;
}

/**
 * What every role writes with (sends use acks=all): one request in flight per broker, so
 * that a retried request cannot overtake a later one, and NOT idempotent.
 *
 * NOTE: kafkajs's idempotent producer can acknowledge records it never wrote. When a
 * produce request fails after the broker stored it (a broker restart cuts the
 * connection before the answer), kafkajs rolls its sequence numbers back, and the next
 * request — another concurrent send, or the retry of this one with its null-key records
 * spread over the partitions anew — reuses them for other records; the broker takes it
 * for a duplicate of the stored batch, answers success, and writes nothing. The chaos
 * harness lost acknowledged calls that way, and a producer also got stuck on
 * OUT_OF_ORDER_SEQUENCE_NUMBER for good after a restart (test/integration/
 * producer-broker-restart.test.ts). Without idempotence a retry can only write a record
 * twice, which the contract allows (receivers dedupe on messageId); it never loses one.
 * One request in flight is what the idempotent producer did anyway (kafkajs holds a
 * lock per broker around each produce request).
 */
export function createKafkajsProducer(client: KafkaClient | Kafka): Producer {
  const kafka = client instanceof Kafka ? client : kafkajsOf(client);
  return kafka.producer({
    idempotent: false,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

