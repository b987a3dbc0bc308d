// The connection configuration every role is handed (KafkaClient): the port makes its
// producers, consumers and admin clients on @platformatic/kafka from it
// (platformatic-client.ts holds the connection options they share).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';

export type KafkaSettings = Config['kafka'];

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

/**
 * How long a consumer group waits for a member that stopped heartbeating before it
 * hands that member's partitions to the others, for every consumer of the port.
 *
 * NOTE: kafkajs's default is 30 s, so after a SIGKILL (or an OOM kill) the router's or
 * a destination's partitions stalled for 30 s: the replacement cannot join until the
 * dead member's session expires (found by the chaos harness). 10 s with a heartbeat
 * every 3 s keeps that stall short and still rides out a couple of lost heartbeats
 * (the broker's floor, group.min.session.timeout.ms, is 6 s by default). The membership
 * heartbeats on a timer of its own, whatever the batches do (membership.ts).
 */
export const CONSUMER_SESSION_TIMEOUT_MS = 10_000;
export const CONSUMER_HEARTBEAT_INTERVAL_MS = 3_000;
