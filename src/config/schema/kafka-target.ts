// A `type: kafka` destination's own settings (docs/kafka.md#a-topic-as-a-destination):
// the target topic, what its records' key and value are, static headers, and the
// cluster when it is not Switchyard's own.

import { checkList, checkText, oneOf } from './basic-checks.js';
import { describe, fail, isPlainObject, ok, orFromEnv } from './check.js';
import type { Checked, Problem } from './check.js';
import { checkBroker, checkSsl, saslSchema, TOPIC_NAME_PATTERN } from './kafka.js';
import type { SaslMechanism } from './kafka.js';
import { field, nonEmptyText, strictObject } from './zod-fields.js';

/** `userId`: the userId, else the anonymousId (the delivery record's own key); `messageId`; `none`: no key. */
export type KafkaTargetKey = 'userId' | 'messageId' | 'none';
/** `body`: the bytes a webhook would get; `call`: the call as routed, its routing beside it. */
export type KafkaTargetValue = 'body' | 'call';

/** Another cluster than `kafka.brokers`: written at least once, by an idempotent producer. */
export interface KafkaTargetCluster {
  brokers: string[];
  clientId?: string;
  tls?: boolean | Record<string, unknown>;
  sasl?: { mechanism: SaslMechanism; username: string; password: string };
}

/** Header names Switchyard sets on every record it writes to a target topic. */
export const KAFKA_TARGET_HEADERS: ReadonlySet<string> = new Set(['message-id', 'source-id', 'type', 'traceparent']);

/** The topic a Kafka destination writes to: any legal Kafka topic name (at most 249 characters). */
function checkTargetTopic(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  if (!TOPIC_NAME_PATTERN.test(text.value) || text.value.length > 249 || text.value === '.' || text.value === '..') {
    return fail(`${describe(value)} is not a Kafka topic name: letters, digits, ".", "_" and "-", at most 249 characters`);
  }
  return ok(text.value);
}
checkTargetTopic.input = orFromEnv({ type: 'string', pattern: TOPIC_NAME_PATTERN.source, maxLength: 249 });

/** Static record headers: name → text. Switchyard's own names are refused (they would be overwritten). */
function checkRecordHeaders(value: unknown): Checked<Record<string, string>> {
  if (value === undefined || value === null) return ok({});
  if (!isPlainObject(value)) return fail(`must be a mapping of header name to value, e.g. { team: growth }, got ${describe(value)}`);
  const problems: Problem[] = [];
  for (const [name, text] of Object.entries(value)) {
    if (name === '') problems.push({ path: [name], message: 'a header name must not be empty' });
    else if (KAFKA_TARGET_HEADERS.has(name)) problems.push({ path: [name], message: `header ${JSON.stringify(name)} is set by Switchyard on every record; remove it` });
    if (typeof text !== 'string') problems.push({ path: [name], message: `header value must be a string, got ${describe(text)}; quote it in YAML` });
  }
  return problems.length > 0 ? { ok: false, problems } : ok(value as Record<string, string>);
}
checkRecordHeaders.input = {
  type: ['object', 'null'],
  propertyNames: { minLength: 1, not: { enum: [...KAFKA_TARGET_HEADERS] } },
  additionalProperties: { type: 'string' },
  description: 'static record headers: name to value; Switchyard sets message-id, source-id, type and traceparent itself',
};

export const kafkaClusterSchema = strictObject({
  brokers: field(checkList(checkBroker, { min: 1 })),
  clientId: nonEmptyText.optional(),
  tls: field(checkSsl).optional(),
  sasl: saslSchema.optional(),
});

/** The settings only a `type: kafka` destination has. */
export const kafkaTargetKeys = {
  topic: field(checkTargetTopic).optional(),
  key: field(oneOf(['userId', 'messageId', 'none'] as const)).optional(),
  value: field(oneOf(['body', 'call'] as const)).optional(),
  headers: field(checkRecordHeaders).optional(),
  cluster: kafkaClusterSchema.optional(),
};

/** The keys above, and those of webhooks only: which a destination of the other type may not set. */
export const KAFKA_ONLY_SETTINGS = ['topic', 'key', 'value', 'headers', 'cluster'] as const;
export const WEBHOOK_ONLY_SETTINGS = ['webhooks', 'sharedSecret', 'sharedSecrets', 'signing', 'signature', 'auth', 'compression', 'tls', 'proxy'] as const;
