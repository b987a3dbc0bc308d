// Which Kafka client library a KafkaClient runs on (client.ts), and the switch the CLI reads.

/** The two Kafka clients the port runs on. */
export type KafkaClientKind = 'kafkajs' | 'platformatic';

/** The environment variable that forces one client for every role that can use either. */
export const KAFKA_CLIENT_ENV = 'SWITCHYARD_KAFKA_CLIENT';

/**
 * The client when nothing asks for another.
 *
 * NOTE: kafkajs, not @platformatic/kafka. The new client passed the chaos half of the
 * gate (issue 14): the full profile with two seeds, lost 0, no crash, duplicates 3.0 %
 * and 2.2 % where kafkajs gave 3.0 % and 3.3 %. It first failed there: during a broker
 * restart @platformatic/kafka 2.12's producer threw an uncaught TypeError from a socket
 * callback (the metadata answer lacked the topic; upstream platformatic/kafka#109 and
 * #69), which platformatic-send-guard.ts now turns into a retriable send error. But
 * with it as the default, the full `npm test` failed twice in two runs (Node 22 and 24)
 * where kafkajs passes: `deletion-sources` waited 60 s in vain for the tombstones the
 * audience processor writes after a deletion (once with one router, once with two),
 * and `deliver-flaky-kill` redid one event more than its bound. The cause is not found.
 * `SWITCHYARD_KAFKA_CLIENT=platformatic` runs it for trials.
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
