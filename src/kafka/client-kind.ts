// Which Kafka client library a KafkaClient runs on (client.ts), and the switch the CLI reads.

/** The two Kafka clients the port runs on. */
export type KafkaClientKind = 'kafkajs' | 'platformatic';

/** The environment variable that forces one client for every role that can use either. */
export const KAFKA_CLIENT_ENV = 'SWITCHYARD_KAFKA_CLIENT';

/**
 * The client when nothing asks for another.
 *
 * NOTE: kafkajs, not @platformatic/kafka, because the new client did not pass the gate
 * (issue 14: adopt it for a role only where the full chaos profile passes). In the full
 * profile (seed 20261126) @platformatic/kafka 2.12's producer threw an uncaught
 * TypeError from a socket callback while the broker restarted ("Cannot read properties
 * of undefined (reading 'partitionsCount')" in its #performSend: the metadata it got
 * back lacked the topic), and the router exited. Nothing was lost, but a daemon must not
 * crash on a broker restart. Upstream: platformatic/kafka#109 (the same TypeError, closed
 * without a fix for want of a repro) and #69 (its twin on `.leader`, open). `SWITCHYARD_KAFKA_CLIENT=platformatic` runs it for trials.
 */
export const DEFAULT_KAFKA_CLIENT: KafkaClientKind = 'kafkajs';

/**
 * The client kind the environment asks for: `SWITCHYARD_KAFKA_CLIENT=platformatic` or
 * `kafkajs`; unset is DEFAULT_KAFKA_CLIENT. The CLI (the composition root) passes its environment.
 */
export function kafkaClientKindFromEnv(env: Readonly<Record<string, string | undefined>>): KafkaClientKind {
  const value = env[KAFKA_CLIENT_ENV]?.trim().toLowerCase();
  if (value === undefined || value === '') return DEFAULT_KAFKA_CLIENT;
  if (value === 'platformatic' || value === 'kafkajs') return value;
  throw new TypeError(`${KAFKA_CLIENT_ENV}=${env[KAFKA_CLIENT_ENV]} is not a Kafka client Switchyard knows; use kafkajs (the default) or platformatic`);
}
