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
}

export interface CreateKafkaOptions {
  /** Appended to the configured client id (`<clientId>-<suffix>`). */
  clientIdSuffix?: string;
}

export function createKafka(settings: KafkaSettings, logger: Logger, options: CreateKafkaOptions = {}): KafkaClient {
  const clientId = options.clientIdSuffix ? `${settings.clientId}-${options.clientIdSuffix}` : settings.clientId;
  return { settings, logger, clientId };
}

/** Whether `error` comes from the Kafka client (its messages say what failed, not where). */
export function isKafkaClientError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return error.name === 'KafkaAnswerError' || (typeof code === 'string' && code.startsWith('PLT_KFK_'));
}

