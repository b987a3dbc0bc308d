// The connection configuration every role is handed (KafkaClient): the port makes its
// producers, consumers and admin clients on @platformatic/kafka from it
// (platformatic-client.ts holds the connection options they share).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export type KafkaSettings = Config['kafka'];

export { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS } from './group-session.js';

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
   * NOTE: transitional (issue 45): always 'platformatic'; consumer.ts still reads it to
   * pick its @platformatic/kafka runtime, until the consumer engine replaces it.
   */
  readonly kind: 'platformatic';
}

export interface CreateKafkaOptions {
  /** Appended to the configured client id (`<clientId>-<suffix>`). */
  clientIdSuffix?: string;
}

export function createKafka(settings: KafkaSettings, logger: Logger, options: CreateKafkaOptions = {}): KafkaClient {
  const clientId = options.clientIdSuffix ? `${settings.clientId}-${options.clientIdSuffix}` : settings.clientId;
  return { settings, logger, clientId, kind: 'platformatic' };
}

/** Whether `error` comes from the Kafka client (its messages say what failed, not where). */
export function isKafkaClientError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // NOTE: KafkaJS* names and KafkaAnswerError (wire.ts) too while the kafkajs consumers remain (kafkajs-legacy.ts).
  return error.name.startsWith('KafkaJS') || error.name === 'KafkaAnswerError' || (typeof code === 'string' && code.startsWith('PLT_KFK_'));
}

// NOTE: transitional (issue 45): the kafkajs consumers import it from here; it goes with them.
export { kafkajsOf } from './kafkajs-legacy.js';
