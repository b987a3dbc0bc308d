// The one module that owns kafkajs: every other module uses the types and
// factories re-exported here, so a later swap of client library stays local.
import { Kafka, logLevel, CompressionTypes, Partitioners } from 'kafkajs';
import type { KafkaConfig, LogEntry, SASLOptions } from 'kafkajs';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export type {
  Admin,
  Consumer,
  EachBatchPayload,
  EachMessagePayload,
  IHeaders,
  KafkaMessage,
  Message,
  Producer,
  RecordMetadata,
  TopicMessages,
  Batch,
} from 'kafkajs';
export { CompressionTypes };

export type KafkaSettings = Config['kafka'];

function toKafkaLevel(level: logLevel): 'error' | 'warn' | 'info' | 'debug' {
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
 * kafkajs log lines as pino JSON. INFO chatter (joins, rebalances) becomes debug.
 * NOTE: kafkajs logs every broker error response at ERROR, including the ones it
 * retries by itself (a leader moving right after topic creation, a coordinator
 * loading); those become warnings. A failure that outlives kafkajs's retries reaches
 * our code as an exception and is logged there with what it means.
 */
function pinoLogCreator(logger: Logger) {
  return () =>
    ({ level, log }: LogEntry) => {
      const { message, ...extra } = log;
      let target = toKafkaLevel(level);
      if (target === 'info') target = 'debug';
      if (target === 'error' && message.startsWith('[Connection] Response')) target = 'warn';
      // We bound producer retries on purpose (a send must fail, not hang forever);
      // callers resend, so the "may invalidate EoS" warning says nothing actionable.
      if (message.startsWith('Limiting retries for the idempotent producer')) target = 'debug';
      logger[target]({ kafka: extra }, message);
    };
}

export function createKafka(settings: KafkaSettings, logger: Logger, clientIdSuffix?: string): Kafka {
  const config: KafkaConfig = {
    clientId: clientIdSuffix ? `${settings.clientId}-${clientIdSuffix}` : settings.clientId,
    brokers: settings.brokers,
    logLevel: logLevel.WARN,
    logCreator: pinoLogCreator(logger.child({ component: 'kafkajs' })),
    connectionTimeout: 5_000,
    requestTimeout: 30_000,
    retry: { initialRetryTime: 200, retries: 8, maxRetryTime: 10_000 },
  };
  if (settings.ssl !== undefined) config.ssl = settings.ssl as KafkaConfig['ssl'];
  if (settings.sasl !== undefined) config.sasl = settings.sasl as SASLOptions;
  return new Kafka(config);
}

/** An idempotent producer with acks=all: what every role writes with. */
export function createProducer(kafka: Kafka) {
  return kafka.producer({
    idempotent: true,
    maxInFlightRequests: 5,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
}

export { Kafka };
