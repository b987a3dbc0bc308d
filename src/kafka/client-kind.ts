// Which Kafka client library a KafkaClient runs on (client.ts), and the switch the CLI reads.

/** The two Kafka clients the port runs on. */
export type KafkaClientKind = 'kafkajs' | 'platformatic';

/** The environment variable that forces one client for every role that can use either. */
export const KAFKA_CLIENT_ENV = 'SWITCHYARD_KAFKA_CLIENT';

/**
 * The client when nothing asks for another.
 *
 * NOTE: @platformatic/kafka (issue 14), for every producer and for the router's and the
 * audiences' consumers; the deliverer's consumer is kafkajs either way (partition-stream.ts:
 * this client cannot pause one partition). It passed the full chaos profile (lost 0, no
 * crash) once platformatic-send-guard.ts turned its producer's crash on a metadata answer
 * without the topic (a broker restarting; upstream platformatic/kafka#109 and #69) into a
 * retriable send error. The full test suite's failures under it (`deletion-sources`) were
 * the test's own: deletions requested within the seen-follower's margin of the last call.
 * `SWITCHYARD_KAFKA_CLIENT=kafkajs` puts every role back on kafkajs.
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
