// Which Kafka client library a KafkaClient runs on (client.ts), and the switch the CLI reads.

/** The two Kafka clients the port runs on. */
export type KafkaClientKind = 'kafkajs' | 'platformatic';

/** The environment variable that forces one client for every role that can use either. */
export const KAFKA_CLIENT_ENV = 'SWITCHYARD_KAFKA_CLIENT';

/**
 * The client kind the environment asks for: `SWITCHYARD_KAFKA_CLIENT=kafkajs` puts every
 * role back on kafkajs (the way back if the new client misbehaves somewhere); unset or
 * `platformatic` is the default. The CLI (the composition root) passes its environment.
 */
export function kafkaClientKindFromEnv(env: Readonly<Record<string, string | undefined>>): KafkaClientKind {
  const value = env[KAFKA_CLIENT_ENV]?.trim().toLowerCase();
  if (value === undefined || value === '' || value === 'platformatic') return 'platformatic';
  if (value === 'kafkajs') return 'kafkajs';
  throw new TypeError(`${KAFKA_CLIENT_ENV}=${env[KAFKA_CLIENT_ENV]} is not a Kafka client Switchyard knows; use kafkajs or platformatic (the default)`);
}
