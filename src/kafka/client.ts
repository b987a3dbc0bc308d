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

/** kafkajs log lines as pino JSON; INFO chatter (joins, rebalances) becomes debug. */
function pinoLogCreator(logger: Logger) {
  return () =>
    ({ level, log }: LogEntry) => {
      const { message, ...extra } = log;
      const target = toKafkaLevel(level);
      if (target === 'info') logger.debug({ kafka: extra }, message);
      else logger[target]({ kafka: extra }, message);
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
