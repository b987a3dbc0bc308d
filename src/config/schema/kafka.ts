// `kafka` (docs/configuration.md#kafka): the brokers, the client id, the prefix of topic
// names and group ids, topic defaults, TLS and SASL.

import { checkBoolean, checkInt, checkList, checkText, oneOf } from './basic-checks.js';
import { describe, fail, FROM_ENV, isPlainObject, ok, orFromEnv, withInput } from './check.js';
import type { Checked } from './check.js';
import { field, nonEmptyText, secretText, strictObject } from './zod-fields.js';

export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface KafkaConfig {
  brokers: string[];
  clientId: string;
  topicPrefix: string;
  /** Starts every consumer group id; absent: `topicPrefix` (src/runtime/group-ids.ts). */
  groupPrefix?: string;
  partitions: number;
  replicationFactor: number;
  ssl?: boolean | Record<string, unknown>;
  sasl?: { mechanism: SaslMechanism; username: string; password: string };
  /** Read-process-write between Switchyard's own topics in Kafka transactions (docs/kafka.md#transactions); absent: true. */
  transactions?: boolean;
}

export const DEFAULT_BROKERS: readonly string[] = ['localhost:9092'];
export const DEFAULT_TOPIC_PREFIX = 'switchyard.';

/** Legal characters of a Kafka topic name; destination ids and the prefix become topic names. */
export const TOPIC_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;

export function checkTopicName(what: string, allowEmpty: boolean) {
  const pattern = allowEmpty ? `^$|${TOPIC_NAME_PATTERN.source}` : TOPIC_NAME_PATTERN.source;
  return withInput(orFromEnv({ type: 'string', pattern }), (value: unknown): Checked<string> => {
    if (allowEmpty && value === '') return ok(value);
    const text = checkText(value);
    if (!text.ok) return text;
    if (!TOPIC_NAME_PATTERN.test(text.value)) {
      return fail(
        `${describe(value)} cannot be used: ${what} becomes part of Kafka topic names, which allow only letters, digits, ".", "_" and "-"`,
      );
    }
    return ok(text.value);
  });
}

/**
 * `kafka.groupPrefix`: the start of every consumer group id (docs/configuration.md#kafka).
 * NOTE: Kafka takes almost any group id; the characters are limited to those of topic
 * names so that one prefixed ACL pattern covers the deployment's topics and groups alike.
 */
const checkGroupPrefix = withInput(orFromEnv({ type: 'string', pattern: `^$|${TOPIC_NAME_PATTERN.source}` }), (value: unknown): Checked<string> => {
  if (value === '') return ok(value);
  const text = checkText(value);
  if (!text.ok) return text;
  if (!TOPIC_NAME_PATTERN.test(text.value)) {
    return fail(
      `${describe(value)} cannot be used: the group prefix starts every consumer group id of this deployment; use only letters, digits, ".", "_" and "-" (e.g. "staging.switchyard."), or leave groupPrefix out to use kafka.topicPrefix`,
    );
  }
  return ok(text.value);
});

// host:port or [ipv6]:port — the form the Kafka client takes.
const BROKER_PATTERN = /^(?:\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/;

export function checkBroker(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  const match = BROKER_PATTERN.exec(text.value);
  const port = match ? Number(match[1]) : 0;
  if (port < 1 || port > 65535) {
    return fail(`${describe(value)} must be host:port, e.g. localhost:9092`);
  }
  return ok(text.value);
}
checkBroker.input = orFromEnv({ type: 'string', pattern: BROKER_PATTERN.source, description: 'host:port, e.g. localhost:9092' });

export function checkSsl(value: unknown): Checked<boolean | Record<string, unknown>> {
  if (typeof value === 'boolean' || isPlainObject(value)) return ok(value);
  if (value === 'true' || value === 'false') return ok(value === 'true');
  return fail(`must be true, false, or a mapping of TLS options as Node's tls.connect takes them (ca, cert, key, ...), got ${describe(value)}`);
}
checkSsl.input = { anyOf: [{ type: ['boolean', 'object'] }, { enum: ['true', 'false'] }, FROM_ENV] };

/** `kafka.sasl`, and a Kafka destination's `settings.cluster.sasl`. */
export const saslSchema = strictObject({
  mechanism: field(oneOf(['plain', 'scram-sha-256', 'scram-sha-512'] as const)),
  username: nonEmptyText,
  password: secretText,
});

export const kafkaSchema = strictObject({
  brokers: field(checkList(checkBroker, { min: 1 })).prefault([...DEFAULT_BROKERS]),
  clientId: nonEmptyText.prefault('switchyard'),
  topicPrefix: field(checkTopicName('the topic prefix', true)).prefault(DEFAULT_TOPIC_PREFIX),
  groupPrefix: field(checkGroupPrefix).optional(),
  partitions: field(checkInt(1, 100_000)).prefault(12),
  replicationFactor: field(checkInt(1, 1_000)).prefault(1),
  ssl: field(checkSsl).optional(),
  transactions: field(checkBoolean).prefault(true),
  sasl: saslSchema.optional(),
});
