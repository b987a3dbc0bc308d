// `destinations` (docs/configuration.md#destinations): each destination's id, type and
// settings; each group of settings has its own module, the rules across them are in
// settings-rules.ts.

import type { ShapingSettings } from '../../shaping/index.js';
import { checkBoolean, checkList, checkSecret, oneOf } from './basic-checks.js';
import { describe, fail, isPlainObject, ok } from './check.js';
import type { Checked } from './check.js';
import { authSchema } from './auth.js';
import type { AuthConfig } from './auth.js';
import { autoDisableSchema } from './auto-disable.js';
import type { AutoDisableConfig } from './auto-disable.js';
import { batchSchema } from './batch.js';
import type { BatchConfig } from './batch.js';
import { circuitBreakerSchema } from './circuit-breaker.js';
import type { CircuitBreakerConfig } from './circuit-breaker.js';
import { checkTopicName } from './kafka.js';
import { KAFKA_ONLY_SETTINGS, kafkaTargetKeys, WEBHOOK_ONLY_SETTINGS } from './kafka-target.js';
import type { KafkaTargetCluster, KafkaTargetKey, KafkaTargetValue } from './kafka-target.js';
import { proxySchema } from './proxy.js';
import type { ProxyConfig } from './proxy.js';
import { rateLimitSchema } from './rate-limit.js';
import type { RateLimitConfig } from './rate-limit.js';
import { retrySchema } from './retry.js';
import type { RetryConfig } from './retry.js';
import { settingsProblems } from './settings-rules.js';
import { SHAPING_INPUT_RULES, shapingKeys } from './shaping.js';
import { checkSigning, MAX_SHARED_SECRETS, signatureSchema, STANDARD_SECRET_INPUT } from './signing.js';
import type { CustomSignatureConfig, SigningScheme } from './signing.js';
import { tlsSchema } from './tls.js';
import type { ClientTlsConfig } from './tls.js';
import { MAX_WEBHOOKS, webhookSchema } from './webhooks.js';
import type { WebhookEntry } from './webhooks.js';
import { field, list, secretText, strictObject } from './zod-fields.js';

/** `webhooks`: POSTed to URLs (docs/webhooks.md); `kafka`: written to a topic (docs/kafka.md#a-topic-as-a-destination). */
export type DestinationType = 'webhooks' | 'kafka';

export interface DestinationConfig {
  id: string;
  type: DestinationType;
  enabled: boolean;
  settings: {
    /** Empty for a `type: kafka` destination. */
    webhooks: WebhookEntry[];
    /** `type: kafka`: the topic its events are written to (required there, refused elsewhere). */
    topic?: string;
    /** `type: kafka`: the records' key; `userId` (the userId, else the anonymousId) by default. */
    key?: KafkaTargetKey;
    /** `type: kafka`: the records' value; `body` by default. */
    value?: KafkaTargetValue;
    /** `type: kafka`: static record headers. */
    headers?: Record<string, string>;
    /** `type: kafka`: another cluster than `kafka.brokers` (at least once there; exactly once into the same cluster). */
    cluster?: KafkaTargetCluster;
    sharedSecret?: string;
    /** Instead of `sharedSecret` while rotating: [new, old]. */
    sharedSecrets?: string[];
    /** One scheme, or several at once while a receiver migrates (`[standard, custom]`). */
    signing: SigningScheme | SigningScheme[];
    /** `signing: custom`: how its signature is made (docs/webhooks.md#custom-signatures). */
    signature?: CustomSignatureConfig;
    rateLimit?: RateLimitConfig;
    /** Many events in one request (docs/webhooks.md#batches); absent: one event per request. */
    batch?: BatchConfig;
    /** Client certificate, CA and TLS options of the connections to its URLs (docs/webhooks.md#tls). */
    tls?: ClientTlsConfig;
    /** Instead of `delivery.proxy` (docs/webhooks.md#egress-proxy). */
    proxy?: ProxyConfig;
    /** `gzip`: request bodies compressed, with `Content-Encoding: gzip` (docs/webhooks.md#compression). */
    compression?: 'gzip';
    /** `user`: a user's events in order (docs/webhooks.md#per-user-order). */
    ordering: Ordering;
    /** Overrides `delivery.circuitBreaker` for this destination's URLs. */
    circuitBreaker?: CircuitBreakerConfig;
    /** Overrides `delivery.retryTiers` / `maxRetryWindow` for this destination (src/config/retry-policy.ts). */
    retry?: RetryConfig;
    /** How requests authenticate to the receiver (docs/webhooks.md#authentication). */
    auth?: AuthConfig;
    /** Disable the destination after `afterMs` without a success (docs/webhooks.md#automatic-disabling). */
    autoDisable?: AutoDisableConfig;
  } & ShapingSettings;
}

/** `none` (the default): events go as they come, many at once. `user`: a user's next event waits for the one before. */
export type Ordering = 'none' | 'user';

export const destinationSchema = strictObject({
  id: field(checkTopicName('a destination id', false)),
  type: field((value): Checked<DestinationType> =>
    value === 'webhooks' || value === 'kafka'
      ? ok(value)
      : fail(value === undefined ? 'is required; add `type: webhooks` (or `type: kafka`)' : `must be "webhooks" or "kafka", got ${describe(value)}`),
  ).meta({ enum: ['webhooks', 'kafka'] }),
  enabled: field(checkBoolean).prefault(true),
  settings: strictObject({
    rateLimit: rateLimitSchema.optional(),
    batch: batchSchema.optional(),
    ordering: field(oneOf(['none', 'user'] as const)).prefault('none'),
    circuitBreaker: circuitBreakerSchema.optional(),
    retry: retrySchema.optional(),
    autoDisable: autoDisableSchema.optional(),
    ...kafkaTargetKeys,
    webhooks: list(webhookSchema).superRefine(
      (hooks, ctx) => {
        if (hooks.length === 0) ctx.addIssue({ code: 'custom', message: 'needs at least 1 entry, got 0' });
        if (hooks.length > MAX_WEBHOOKS) {
          ctx.addIssue({ code: 'custom', message: `at most ${MAX_WEBHOOKS} entries, got ${hooks.length}` });
        }
      },
      // The count is wrong whatever the entries hold; report it alongside their problems.
      { when: (payload) => Array.isArray(payload.value) },
    )
      .meta({ minItems: 1, maxItems: MAX_WEBHOOKS })
      .optional(),
    sharedSecret: secretText.optional(),
    sharedSecrets: field(checkList(checkSecret, { min: 1, max: MAX_SHARED_SECRETS, secret: true })).optional(),
    signing: field(checkSigning).prefault('segment'),
    signature: signatureSchema.optional(),
    auth: authSchema.optional(),
    compression: field(oneOf(['gzip'] as const)).optional(),
    tls: tlsSchema.optional(),
    proxy: proxySchema.optional(),
    ...shapingKeys,
  }).superRefine(
    (settings, ctx) => {
      for (const problem of settingsProblems(settings)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
    },
    // Run even when a webhook entry is bad, so every problem shows at once.
    { when: (payload) => isPlainObject(payload.value) },
  ).meta({
    // NOTE: `properties` beside each `required` only names the keys (ajv's strict mode wants them).
    not: { required: ['sharedSecret', 'sharedSecrets'], properties: { sharedSecret: true, sharedSecrets: true } },
    allOf: SHAPING_INPUT_RULES,
    if: { properties: { signing: { anyOf: [{ const: 'standard' }, { type: 'array', contains: { const: 'standard' } }] } }, required: ['signing'] },
    then: {
      anyOf: [
        { required: ['sharedSecret'], properties: { sharedSecret: true } },
        { required: ['sharedSecrets'], properties: { sharedSecrets: true } },
      ],
      properties: { sharedSecret: STANDARD_SECRET_INPUT, sharedSecrets: { type: 'array', items: STANDARD_SECRET_INPUT } },
    },
  }),
})
  .superRefine(
    (destination, ctx) => {
      for (const problem of typeProblems(destination.type, destination.settings as Record<string, unknown>)) ctx.addIssue({ code: 'custom', message: problem.message, path: ['settings', ...problem.path] });
    },
    { when: (payload) => isPlainObject(payload.value) && isPlainObject((payload.value as Record<string, unknown>).settings) },
  )
  .transform((destination): DestinationConfig => ({ ...destination, settings: { ...destination.settings, webhooks: destination.settings.webhooks ?? [] } }))
  .meta({
    allOf: [
      {
        if: { properties: { type: { const: 'kafka' } }, required: ['type'] },
        then: { properties: { settings: { type: 'object', required: ['topic'], properties: { topic: true }, not: { anyOf: WEBHOOK_ONLY_SETTINGS.map((key) => ({ required: [key], properties: { [key]: true } })) } } } },
        else: { properties: { settings: { type: 'object', required: ['webhooks'], properties: { webhooks: true }, not: { anyOf: KAFKA_ONLY_SETTINGS.map((key) => ({ required: [key], properties: { [key]: true } })) } } } },
      },
    ],
  });

/**
 * What a destination of each type must and must not set: a topic and no webhook
 * settings for `kafka`; webhooks and no topic settings for `webhooks`.
 * NOTE: `signing` has a default, so only a value other than it is refused on a Kafka destination.
 */
function typeProblems(type: DestinationType, settings: Record<string, unknown>): { path: (string | number)[]; message: string }[] {
  const problems: { path: (string | number)[]; message: string }[] = [];
  if (type === 'kafka') {
    if (settings.topic === undefined) problems.push({ path: ['topic'], message: 'a destination of type kafka needs settings.topic: the topic its events are written to' });
    for (const key of WEBHOOK_ONLY_SETTINGS) {
      const value = settings[key];
      if (value === undefined || (key === 'signing' && value === 'segment')) continue;
      problems.push({ path: [key], message: `is a setting of webhook destinations; a destination of type kafka writes to settings.topic, remove ${key}` });
    }
    for (const key of ['rateLimit', 'circuitBreaker'] as const) {
      if (settings[key] !== undefined) problems.push({ path: [key], message: `applies to webhook URLs only; a destination of type kafka writes to its topic as fast as the deliverer reads, remove ${key}` });
    }
    if (settings.ordering === 'user' && settings.key !== undefined && settings.key !== 'userId') {
      problems.push({
        path: ['ordering'],
        message: `ordering: user keeps a user's records in order in one partition of the topic only when they are keyed by user; set key: userId (the default), or remove ordering`,
      });
    }
    return problems;
  }
  if (settings.webhooks === undefined) problems.push({ path: ['webhooks'], message: 'is required; a destination of type webhooks needs at least 1 entry { url }' });
  for (const key of KAFKA_ONLY_SETTINGS) {
    if (settings[key] !== undefined) problems.push({ path: [key], message: `is a setting of kafka destinations; set type: kafka, or remove ${key}` });
  }
  return problems;
}
