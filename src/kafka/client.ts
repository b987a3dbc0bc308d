// The connection configuration every role is handed (KafkaClient), from which the port
// makes its producers, consumers and admin clients (platformatic-client.ts).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export type KafkaSettings = Config['kafka'];

/** A connection configuration to the cluster (no connection of its own); opaque outside src/kafka/. */
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

/**
 * How long a consumer group waits for a member that stopped heartbeating before it
 * hands that member's partitions to the others, for every consumer of the port.
 *
 * NOTE: with kafkajs's 30 s, a SIGKILL stalled the dead member's partitions for 30 s
 * (chaos harness). 10 s, a heartbeat every 3 s on the membership's own timer, keeps that
 * short and rides out a couple of lost heartbeats (the broker's floor is 6 s).
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 10_000;
export const CONSUMER_HEARTBEAT_INTERVAL_MS = 3_000;
