// Which Kafka client library a KafkaClient runs on (client.ts), and the switch the CLI reads.

/** The two Kafka clients the port runs on. */
export type KafkaClientKind = 'kafkajs' | 'platformatic';

/** The environment variable that forces one client for every role that can use either. */
export const KAFKA_CLIENT_ENV = 'SWITCHYARD_KAFKA_CLIENT';

/**
 * The client when nothing asks for another: @platformatic/kafka, for the producers and
 * the router's and audiences' consumers (client.ts says what stays on kafkajs).
 *
 * NOTE: adopted after the gate of issue 14, the full chaos profile on this client with
 * two seeds (lost 0, no crash, duplicates 3.0 % and 2.2 % where kafkajs gave 3.0 % and
 * 3.3 %). It first failed that gate: during a broker restart @platformatic/kafka 2.12's
 * producer threw an uncaught TypeError from a socket callback ("Cannot read properties
 * of undefined (reading 'partitionsCount')": the metadata answer lacked the topic) and
 * the router exited; upstream platformatic/kafka#109 (closed without a fix) and #69
 * (its twin on `.leader`, open). platformatic-send-guard.ts now fails such a send with
 * a retriable error instead. `SWITCHYARD_KAFKA_CLIENT=kafkajs` puts every role back on kafkajs.
 */
export const DEFAULT_KAFKA_CLIENT: KafkaClientKind = 'platformatic';

/**
 * The client kind the environment asks for: `SWITCHYARD_KAFKA_CLIENT=platformatic` or
 * `kafkajs`; unset is DEFAULT_KAFKA_CLIENT. The CLI (the composition root) passes its environment.
 */
export function kafkaClientKindFromEnv(env: Readonly<Record<string, string | undefined>>): KafkaClientKind {
  const value = env[KAFKA_CLIENT_ENV]?.trim().toLowerCase();
  if (value === undefined || value === '') return DEFAULT_KAFKA_CLIENT;
  if (value === 'platformatic' || value === 'kafkajs') return value;
  throw new TypeError(`${KAFKA_CLIENT_ENV}=${env[KAFKA_CLIENT_ENV]} is not a Kafka client Switchyard knows; use platformatic (the default) or kafkajs`);
}
