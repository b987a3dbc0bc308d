// NOTE: transitional (issue 45). What the kafkajs consumers of the port (consumer.ts,
// partition-stream.ts, scan-topic.ts, read-to-end.ts, key-scan.ts) still build on until
// the consumer engine replaces them; it goes with them, and kafkajs with it. Nothing
// else in src/ uses kafkajs: the producer, the admin side and the raw protocol calls
// (wire.ts) run on @platformatic/kafka.
import { Kafka, logLevel } from 'kafkajs';
import type { Consumer, ConsumerConfig, KafkaConfig, LogEntry, SASLOptions } from 'kafkajs';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { applyFetchSessions } from './fetch-sessions.js';
import { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS } from './group-session.js';
import { applyJoinFix } from './join-fix.js';
import { createKafkaLogLevels } from './log-levels.js';
import type { LogTarget } from './log-levels.js';

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

/** kafkajs's client with Switchyard's consumer defaults (group-session.ts says why); a consumer's own settings still win. */
class SwitchyardKafka extends Kafka {
  override consumer(config: ConsumerConfig): Consumer {
    return super.consumer({ sessionTimeout: CONSUMER_SESSION_TIMEOUT_MS, heartbeatInterval: CONSUMER_HEARTBEAT_INTERVAL_MS, ...config });
  }
}

/** What of a KafkaClient (client.ts) the kafkajs client is made from (client.ts re-exports kafkajsOf: no import back). */
interface ClientSettings {
  readonly settings: Config['kafka'];
  readonly logger: Logger;
  readonly clientId: string;
}

const kafkajsClients = new WeakMap<ClientSettings, Kafka>();

/** The kafkajs client behind `client`, made on first use (inside src/kafka/ only, for the kafkajs consumers). */
export function kafkajsOf(client: ClientSettings): Kafka {
  let kafka = kafkajsClients.get(client);
  if (kafka !== undefined) return kafka;
  applyJoinFix();
  applyFetchSessions();
  const { settings } = client;
  const config: KafkaConfig = {
    clientId: client.clientId,
    brokers: settings.brokers,
    logLevel: logLevel.WARN,
    logCreator: pinoLogCreator(client.logger.child({ component: 'kafkajs' })),
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { initialRetryTime: 200, retries: 8, maxRetryTime: 10_000 },
  };
  if (settings.ssl !== undefined) config.ssl = settings.ssl as KafkaConfig['ssl'];
  if (settings.sasl !== undefined) config.sasl = settings.sasl as SASLOptions;
  kafka = new SwitchyardKafka(config);
  kafkajsClients.set(client, kafka);
  return kafka;
}

/**
 * kafkajs's own cluster factory (brokers, metadata, leaders: what its admin and consumers
 * are built on), or undefined in another kafkajs than the pinned 2.2.4, which keeps it
 * behind a private symbol. Used by the key reads of key-scan.ts.
 */
export function clusterFactoryOf(kafka: Kafka): (<C>(options: { allowAutoTopicCreation: boolean; metadataMaxAge: number }) => C) | undefined {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  if (symbol === undefined) return undefined;
  const createCluster = (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof createCluster !== 'function') return undefined;
  return <C>(options: { allowAutoTopicCreation: boolean; metadataMaxAge: number }) => (createCluster as (options: object) => C)(options);
}
