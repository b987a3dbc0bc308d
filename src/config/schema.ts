// The config file's schema (docs/configuration.md) and the resolved `Config` the daemon runs on.
//
// Every field is checked by a small function that returns a value or the problems it
// found, wrapped into zod by `field()`. Zod brings strict objects, defaults and
// error paths; the check functions bring messages that say what was given and what
// is expected. Rules that span the whole file (unique ids, references) are in
// `crossCheck`, run on the raw document rather than as a zod refinement:
// zod skips refinements once any field below them is invalid, and every problem in
// the file should be reported at once.
//
// This file composes the sections, one module each under schema/ (kafka.ts, gateway.ts,
// admin.ts, delivery.ts, router.ts, sources.ts, destinations.ts and its settings, audiences.ts,
// tracking-plans.ts, operations.ts); the rules across a destination's settings are in
// schema/settings-rules.ts, those across the file in schema/cross-check.ts. The rest of
// src/ imports the config's types and rules from here.

import type { z } from 'zod';
import type { TrackingPlanConfig } from '../tracking-plans/index.js';
import { adminSchema } from './schema/admin.js';
import type { AdminConfig } from './schema/admin.js';
import { audienceSchema } from './schema/audiences.js';
import type { AudienceConfig } from './schema/audiences.js';
import { AUDIENCE_RULE_INPUT } from './schema/audience-rule.js';
import { oneOf } from './schema/basic-checks.js';
import { ENV_REFERENCE_INPUT } from './schema/check.js';
import { deliverySchema } from './schema/delivery.js';
import type { DeliveryConfig } from './schema/delivery.js';
import { destinationSchema } from './schema/destinations.js';
import type { DestinationConfig } from './schema/destinations.js';
import { listenerSchema } from './schema/gateway.js';
import type { GatewayConfig } from './schema/gateway.js';
import { kafkaSchema } from './schema/kafka.js';
import type { KafkaConfig } from './schema/kafka.js';
import { operationsSchema } from './schema/operations.js';
import type { OperationsConfig } from './schema/operations.js';
import { checkDuration, DURATION_INPUT } from './schema/quantities.js';
import { routerSchema } from './schema/router.js';
import type { RouterConfig } from './schema/router.js';
import { sourceSchema } from './schema/sources.js';
import type { SourceConfig } from './schema/sources.js';
import { trackingPlanSchema } from './schema/tracking-plans.js';
import { field, list, strictObject } from './schema/zod-fields.js';

export type { SourcePlanConfig, TrackingPlanConfig } from '../tracking-plans/index.js';
export type { AdminConfig } from './schema/admin.js';
export type { AudienceConfig } from './schema/audiences.js';
export { checkAudienceRule } from './schema/audience-rule.js';
export type { AudienceRule, EventRule, TraitRule } from './schema/audience-rule.js';
export type { AuthConfig, OAuth2Config } from './schema/auth.js';
export { DEFAULT_AUTO_DISABLE_MIN_ATTEMPTS, MAX_AUTO_DISABLE_AFTER_MS } from './schema/auto-disable.js';
export type { AutoDisableConfig } from './schema/auto-disable.js';
export { MAX_BATCH_BYTES, MAX_BATCH_EVENTS, MAX_BATCH_WAIT_MS } from './schema/batch.js';
export type { BatchConfig, BatchFormat } from './schema/batch.js';
export { describe, describeSecret, isPlainObject, SENSITIVE_NAME } from './schema/check.js';
export type { Checked, IssuePath, Problem } from './schema/check.js';
export type { CircuitBreakerConfig } from './schema/circuit-breaker.js';
export { crossCheck } from './schema/cross-check.js';
export { DEFAULT_BUFFER_BUDGET } from './schema/delivery.js';
export type { DeliveryConfig } from './schema/delivery.js';
export type { DestinationConfig, DestinationType, Ordering } from './schema/destinations.js';
export type { KafkaTargetCluster, KafkaTargetKey, KafkaTargetValue } from './schema/kafka-target.js';
export type { GatewayConfig } from './schema/gateway.js';
export { DEFAULT_ADMIN_HOST, MIN_ADMIN_TOKEN_LENGTH } from './schema/admin.js';
export { DEFAULT_BROKERS, DEFAULT_TOPIC_PREFIX, TOPIC_NAME_PATTERN } from './schema/kafka.js';
export type { KafkaConfig, SaslMechanism } from './schema/kafka.js';
export type { OperationsConfig } from './schema/operations.js';
export type { ProxyConfig } from './schema/proxy.js';
export type { RateLimitConfig } from './schema/rate-limit.js';
export { MAX_DEDUPE_WINDOW_MS } from './schema/router.js';
export type { RouterConfig } from './schema/router.js';
export { DEFAULT_RETRY_TIERS, MAX_DESTINATION_RETRY_WINDOW_MS } from './schema/retry.js';
export type { RetryConfig, RetryTier } from './schema/retry.js';
export { MAX_SHARED_SECRETS, SIGNATURE_PLACEHOLDERS, SIGNING_SCHEMES, STANDARD_SECRET_PATTERN } from './schema/signing.js';
export type { CustomSignatureConfig, SigningScheme } from './schema/signing.js';
export { DEFAULT_SOURCE_LIMITS } from './schema/sources.js';
export type { SourceConfig, SourceLimitsConfig, TrackFilter } from './schema/sources.js';
export type { ClientTlsConfig, TlsMaterial } from './schema/tls.js';
export { unknownKeyMessage } from './schema/unknown-keys.js';
export { MAX_WEBHOOKS, RESERVED_HEADER_NAMES } from './schema/webhooks.js';
export type { WebhookEntry } from './schema/webhooks.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

export interface Config {
  kafka: KafkaConfig;
  gateway: GatewayConfig;
  admin: AdminConfig;
  delivery: DeliveryConfig;
  router: RouterConfig;
  /** YAML key `shutdownTimeout`. */
  shutdownTimeoutMs: number;
  log: { level: LogLevel };
  sources: SourceConfig[];
  destinations: DestinationConfig[];
  audiences: AudienceConfig[];
  trackingPlans: TrackingPlanConfig[];
  operations: OperationsConfig;
}

const NO_SOURCE =
  'needs at least one source (where calls come from: an id, a writeKey and the destinations it feeds); see config/example.yaml';

export const configSchema: z.ZodType<Config> = strictObject({
  kafka: kafkaSchema.prefault({}),
  gateway: listenerSchema(8080).prefault({}),
  admin: adminSchema.prefault({}),
  delivery: deliverySchema.prefault({}),
  router: routerSchema.prefault({}),
  shutdownTimeout: field(checkDuration).prefault('25s'),
  log: strictObject({
    level: field(oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const)).prefault('info'),
  }).prefault({}),
  // NOTE: a config without a source routes nothing (every write key is refused); it
  // is nearly always an empty or badly indented file, so it is refused, not defaulted.
  sources: list(sourceSchema, NO_SOURCE).min(1, NO_SOURCE),
  destinations: list(destinationSchema).prefault([]),
  audiences: list(audienceSchema).prefault([]),
  trackingPlans: list(trackingPlanSchema).prefault([]),
  operations: operationsSchema.prefault({}),
}).transform(
  (c): Config => ({
    kafka: c.kafka,
    gateway: c.gateway,
    admin: c.admin,
    delivery: c.delivery,
    router: c.router,
    shutdownTimeoutMs: c.shutdownTimeout,
    log: c.log,
    sources: c.sources,
    destinations: c.destinations,
    audiences: c.audiences,
    trackingPlans: c.trackingPlans,
    operations: c.operations,
  }),
).meta({ $defs: { envReference: ENV_REFERENCE_INPUT, duration: DURATION_INPUT, audienceRule: AUDIENCE_RULE_INPUT } });
