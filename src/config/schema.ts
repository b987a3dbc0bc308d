// The config file's schema (docs/configuration.md) and the resolved `Config` the daemon runs on.
//
// Every field is checked by a small function that returns a value or the problems it
// found, wrapped into zod by `field()`. Zod brings strict objects, defaults and
// error paths; the check functions bring messages that say what was given and what
// is expected. Rules that span the whole file (unique ids, references) are in
// `crossCheck` at the end, run on the raw document rather than as a zod refinement:
// zod skips refinements once any field below them is invalid, and every problem in
// the file should be reported at once.

import { z } from 'zod';
import { compileExpression, propertyPathProblem } from '../shaping/index.js';
import type { ShapingSettings } from '../shaping/index.js';
import { DURATION_PATTERN, formatDuration, parseDuration } from './duration.js';
import { isLoopbackHost, parseIpAddress } from '../network/address-rule.js';
import { formatSize, parseSize, SIZE_PATTERN } from './size.js';
import { snakeCase } from './snake-case.js';
import { PLAN_PARTS, compileSchema } from '../tracking-plans/index.js';
import type { JsonSchema, SourcePlanConfig, TrackingPlanConfig } from '../tracking-plans/index.js';

export type { SourcePlanConfig, TrackingPlanConfig } from '../tracking-plans/index.js';

export interface WebhookEntry {
  url: string;
  headers: Record<string, string>;
}

export interface DestinationConfig {
  id: string;
  type: 'webhooks';
  enabled: boolean;
  settings: {
    webhooks: WebhookEntry[];
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

/**
 * `settings.autoDisable` (docs/webhooks.md#automatic-disabling): a destination none of whose
 * attempts succeeded for `afterMs`, with at least `minAttempts` attempts, is disabled. YAML key `after`.
 */
export interface AutoDisableConfig {
  afterMs: number;
  minAttempts: number;
}

/** `operations` (docs/operations.md#operational-events): where operational events are POSTed besides the `operations` topic. */
export interface OperationsConfig {
  webhooks: { url: string; secret: string }[];
}

/**
 * `settings.retry` (docs/webhooks.md#retry-policy-per-destination): only what the config
 * sets. YAML key `maxWindow` becomes `maxWindowMs`.
 */
export interface RetryConfig {
  tiers?: RetryTier[];
  maxWindowMs?: number;
  /** HTTP statuses made permanent at once (e.g. 410), over Segment's rules. */
  stopOn?: number[];
}

/**
 * `circuitBreaker` (docs/webhooks.md#circuit-breaker): only what the config sets; the
 * rest are the defaults of src/delivery/circuit-breaker.ts. YAML keys `window`,
 * `failureRate`, `coolDown`, `maxCoolDown` become the `…Ms` and `failureRatio` fields.
 */
export interface CircuitBreakerConfig {
  windowMs?: number;
  minAttempts?: number;
  failureRatio?: number;
  unanswered?: number;
  coolDownMs?: number;
  maxCoolDownMs?: number;
}

/** `delivery.proxy`, `settings.proxy`: requests go through this HTTP proxy (HTTPS by CONNECT), except to hosts in `noProxy`. */
export interface ProxyConfig {
  url: string;
  /** Host names (a leading `.` or `*.` for every subdomain), `host:port`, or `*`; as NO_PROXY is read. */
  noProxy: string[];
  /** Set by the loader when the proxy came from HTTPS_PROXY / HTTP_PROXY / NO_PROXY rather than the file. */
  fromEnvironment?: true;
}

/** `settings.tls`: PEM files by path, read when the config is loaded (load.ts) into `material`. */
export interface ClientTlsConfig {
  clientCert?: string;
  clientKey?: string;
  ca?: string;
  serverName?: string;
  minVersion?: 'TLSv1.2' | 'TLSv1.3';
  /** What the files held when the config was loaded; set by the loader, never written in YAML. */
  material?: TlsMaterial;
}

/** The PEM text of `settings.tls`'s files, and when the client certificate expires. */
export interface TlsMaterial {
  cert?: string;
  key?: string;
  ca?: string;
  certExpiresAtMs?: number;
}

/** `settings.auth`: exactly one of its three forms (docs/webhooks.md#authentication). */
export type AuthConfig = { basic: { username: string; password: string } } | { bearer: { token: string } } | { oauth2: OAuth2Config };

/** `settings.auth.oauth2`: the client credentials grant (RFC 6749 section 4.4). */
export interface OAuth2Config {
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope?: string;
  audience?: string;
  /** `body`: client_id and client_secret in the form; `basic`: in an Authorization: Basic header. */
  clientAuth: 'body' | 'basic';
}

/** `settings.batch`: a request carries a JSON array of up to `maxEvents` bodies, `maxBytes` in all, closed `maxWait` after its first event. */
export interface BatchConfig {
  maxEvents: number;
  maxBytes: number;
  /** YAML key `maxWait`. */
  maxWaitMs: number;
  /** `json`: a JSON array of the bodies; `ndjson`: one body per line (`application/x-ndjson`). */
  format: BatchFormat;
}

export type BatchFormat = 'json' | 'ndjson';

/** `none` (the default): events go as they come, many at once. `user`: a user's next event waits for the one before. */
export type Ordering = 'none' | 'user';

/** `settings.rateLimit`: paces a destination's requests (a token bucket per deliverer process). */
export interface RateLimitConfig {
  requestsPerSecond: number;
  /** Requests that may go at once after a quiet spell; by default one second's worth. */
  burst: number;
}

/** `segment`: X-Signature (the seed's). `standard`: Standard Webhooks headers. `custom`: `settings.signature`. */
export type SigningScheme = 'segment' | 'standard' | 'custom';
export const SIGNING_SCHEMES: readonly SigningScheme[] = ['segment', 'standard', 'custom'];

/** `settings.signature` (docs/webhooks.md#custom-signatures): an HMAC of `content`, in `header`. */
export interface CustomSignatureConfig {
  header: string;
  algorithm: 'sha1' | 'sha256' | 'sha512';
  encoding: 'hex' | 'base64';
  /** Over `{id}`, `{timestamp}` and `{body}`; `{body}` by default. */
  content: string;
  /** Written before the digest, e.g. `sha256=`. */
  prefix?: string;
  /** Carries `{timestamp}` (seconds of the attempt). */
  timestampHeader?: string;
  /** Carries `{id}` (as `webhook-id` of Standard Webhooks). */
  idHeader?: string;
  /** The key; by default the destination's (first) shared secret. */
  secret?: string;
}

/** The placeholders a custom signature's `content` may hold. */
export const SIGNATURE_PLACEHOLDERS = ['{id}', '{timestamp}', '{body}'] as const;

/** How many secrets a destination may list in `sharedSecrets`: the new one and the old one. */
export const MAX_SHARED_SECRETS = 2;

/**
 * A Standard Webhooks secret: `whsec_` and the key in base64, padded as an encoder
 * writes it (what the receivers' libraries decode).
 */
export const STANDARD_SECRET_PATTERN = /^whsec_(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)$/;

/** Exactly one of the two lists is set. */
export interface TrackFilter {
  blockEvents?: string[];
  allowEvents?: string[];
}

export interface SourceConfig {
  id: string;
  writeKey?: string;
  destinations: string[];
  trackFilter?: TrackFilter;
  /** What the source may write through one gateway process (src/limits/source-limits.ts). */
  limits: SourceLimitsConfig;
  /** The tracking plan its calls are checked against, and what a violation does (docs/tracking-plans.md). */
  trackingPlan?: SourcePlanConfig;
}

/** `sources[].limits` (docs/configuration.md#sources). */
export interface SourceLimitsConfig {
  /** Calls per second (each call of a batch counts). */
  callsPerSecond: number;
  /** Bytes of records written per second (keys and values in `calls` and `calls.invalid`). */
  bytesPerSecond: number;
  /** Seconds' worth of each rate the source may spend at once. */
  burst: number;
}

/**
 * The limits of a source that sets none: far above what one site's browsers send
 * through one gateway process, far below what a leaked write key could write.
 */
export const DEFAULT_SOURCE_LIMITS: Readonly<SourceLimitsConfig> = { callsPerSecond: 2_000, bytesPerSecond: 8 * 1_048_576, burst: 5 };

export interface TraitRule {
  trait: string;
  equals?: unknown;
  in?: unknown[];
  exists?: boolean;
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** `within: 30d` in YAML becomes `withinMs`. */
export interface EventRule {
  event: string;
  atLeast: number;
  withinMs?: number;
}

export type AudienceRule =
  | { all: AudienceRule[] }
  | { any: AudienceRule[] }
  | { not: AudienceRule }
  | TraitRule
  | EventRule;

export interface AudienceConfig {
  name: string;
  sources: string[];
  destinations: string[];
  rule: AudienceRule;
}

export interface RetryTier {
  /** As written in the config, e.g. "10s"; it is part of the retry topic's name. */
  name: string;
  ms: number;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface Config {
  kafka: {
    brokers: string[];
    clientId: string;
    topicPrefix: string;
    /** Starts every consumer group id; absent: `topicPrefix` (src/kafka/group-ids.ts). */
    groupPrefix?: string;
    partitions: number;
    replicationFactor: number;
    ssl?: boolean | Record<string, unknown>;
    sasl?: { mechanism: SaslMechanism; username: string; password: string };
  };
  gateway: { port: number; host: string };
  admin: {
    port: number;
    host: string;
    token?: string;
    /** `Host` names answered besides loopback and this pod's own (src/admin/allowed-hosts.ts). */
    allowedHosts: string[];
  };
  delivery: {
    timeoutMs: number;
    retryTiers: RetryTier[];
    maxRetryWindowMs: number;
    concurrencyPerDestination: number;
    /**
     * YAML `bufferBudget`: the bytes of fetched records a deliverer holds at once, shared by
     * its destinations (src/kafka/fetch-plan.ts; docs/operations.md#memory). Read at start.
     */
    bufferBudgetBytes: number;
    /** Connect only to global unicast addresses (src/network/address-rule.ts). */
    blockPrivateNetworks: boolean;
    /** The circuit breaker's thresholds for every destination (each may override them). */
    circuitBreaker?: CircuitBreakerConfig;
    /** The egress proxy of every destination without its own (docs/webhooks.md#egress-proxy); else HTTPS_PROXY/HTTP_PROXY (load.ts). */
    proxy?: ProxyConfig;
  };
  router: {
    /** YAML `dedupeWindow`: copies of a call routed within it are dropped; 0 turns it off (docs/kafka.md#copies-of-a-call). */
    dedupeWindowMs: number;
  };
  /** YAML key `shutdownTimeout`. */
  shutdownTimeoutMs: number;
  log: { level: LogLevel };
  sources: SourceConfig[];
  destinations: DestinationConfig[];
  audiences: AudienceConfig[];
  trackingPlans: TrackingPlanConfig[];
  operations: OperationsConfig;
}

export const DEFAULT_BROKERS: readonly string[] = ['localhost:9092'];
export const DEFAULT_TOPIC_PREFIX = 'switchyard.';
export const DEFAULT_RETRY_TIERS: readonly string[] = ['10s', '1m', '10m', '1h'];
/** The seed allows up to five webhook URLs per destination. */
export const MAX_WEBHOOKS = 5;

/** Legal characters of a Kafka topic name; destination ids and the prefix become topic names. */
export const TOPIC_NAME_PATTERN = /^[a-zA-Z0-9._-]+$/;

/**
 * Header names a webhook entry may not set, lower-cased. The first group Switchyard
 * sets itself on every request (docs/webhooks.md): a static value would either be ignored or
 * break the receiver's signature check. The second group is managed by undici, which
 * throws on them at request time; refusing them at load beats failing every delivery.
 */
export const RESERVED_HEADER_NAMES: ReadonlyMap<string, string> = new Map([
  ['content-type', 'set by Switchyard on every request'],
  ['content-length', 'set by Switchyard on every request'],
  ['host', 'set by Switchyard on every request'],
  ['user-agent', 'set by Switchyard on every request'],
  ['x-signature', 'set by Switchyard on every request'],
  ['traceparent', 'set by Switchyard on every request'],
  ['webhook-id', 'set by Switchyard with signing: standard'],
  ['webhook-timestamp', 'set by Switchyard with signing: standard'],
  ['webhook-signature', 'set by Switchyard with signing: standard'],
  ['connection', 'managed by the HTTP client'],
  ['keep-alive', 'managed by the HTTP client'],
  ['transfer-encoding', 'managed by the HTTP client'],
  ['upgrade', 'managed by the HTTP client'],
  ['expect', 'managed by the HTTP client'],
]);

// ---------------------------------------------------------------------------
// Check functions: value in, value or problems out.

export type IssuePath = (string | number)[];
export interface Problem {
  path: IssuePath;
  message: string;
}
export type Checked<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
const fail = (message: string, path: IssuePath = []): { ok: false; problems: Problem[] } => ({
  ok: false,
  problems: [{ path, message }],
});

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How a value reads in an error message: `"ftp://x"`, `number 42`, `a list`. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  }
  return `${typeof value} ${String(value)}`;
}

/**
 * How a secret's value reads in an error message: its type only. NOTE: a value at a
 * secret path is never quoted (check-config output and the log of a refused reload end
 * up in CI logs and log stores); docs/operations.md#security.
 */
export function describeSecret(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value} (not shown: it is a secret)`;
}

/**
 * Static webhook headers that look like credentials (`Authorization`, `X-Api-Key`,
 * `X-Auth-Token`, ...). Receivers often authenticate with one of these instead of the
 * signature; masking a harmless header by mistake costs less than printing a token.
 */
export const SENSITIVE_NAME = /auth|token|secret|key|passw|cookie|session|credential|signature/i;

// ---------------------------------------------------------------------------
// What each check accepts, as JSON Schema: config/switchyard.schema.json (npm run
// schema) is generated from these, so an editor can check a file as it is written.
// It describes the YAML as written, before `${NAME}` is replaced: any value may then
// be a reference, which only the loader can resolve and check.

type InputSchema = Record<string, unknown>;
/** A check function, with the JSON Schema of what it accepts when it has one. */
type Check<T> = ((value: unknown) => Checked<T>) & { input?: InputSchema };

const withInput = <T>(input: InputSchema, check: (value: unknown) => Checked<T>): Check<T> =>
  Object.assign(check, { input });

const ENV_REFERENCE_INPUT: InputSchema = {
  type: 'string',
  pattern: '\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}',
  description: 'a ${NAME} or ${NAME:-default} reference, replaced by the environment variable NAME when the file is loaded',
};
// Shared definitions sit once in the generated file's `$defs` (see configSchema).
const FROM_ENV: InputSchema = { $ref: '#/$defs/envReference' };
const orFromEnv = (input: InputSchema): InputSchema => ({ anyOf: [input, FROM_ENV] });

/** `[Hh][Tt]...`: JSON Schema patterns take no flags, so case is spelled out. */
const anyCase = (text: string) =>
  text.replace(/[a-z]/gi, (c) => `[${c.toUpperCase()}${c.toLowerCase()}]`);

const REQUIRED = 'is required; add it';

function checkText(value: unknown): Checked<string> {
  if (value === undefined) return fail(REQUIRED);
  if (typeof value !== 'string') return fail(`must be a string, got ${describe(value)}; quote it in YAML`);
  if (value.length === 0) return fail('must not be empty');
  return ok(value);
}
checkText.input = { type: 'string', minLength: 1 };

/** A secret (a token, a password, a write key): as checkText, but never quoted in a message. */
function checkSecret(value: unknown): Checked<string> {
  if (value === undefined) return fail(REQUIRED);
  if (typeof value !== 'string') return fail(`must be a string, got ${describeSecret(value)}; quote it in YAML`);
  if (value.length === 0) return fail('must not be empty');
  return ok(value);
}
checkSecret.input = checkText.input;

// NOTE: integers and booleans also accept their string form, because a value that
// comes from `${ENV_VAR}` interpolation is always a string (interpolation happens
// after YAML parsing, by design), and `port: ${GATEWAY_PORT:-8080}` should work.
function checkInt(min: number, max: number) {
  const input = { anyOf: [{ type: 'integer', minimum: min, maximum: max }, { type: 'string', pattern: '^\\d+$' }, FROM_ENV] };
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      return fail(`must be a whole number from ${min} to ${max}, got ${describe(value)}`);
    }
    return ok(n);
  });
}

/** A positive number, fractions allowed (0.5 requests per second is one every 2 s). */
function checkPositiveNumber(max: number) {
  const input = { anyOf: [{ type: 'number', exclusiveMinimum: 0, maximum: max }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > max) {
      return fail(`must be a number above 0 and at most ${max}, got ${describe(value)}`);
    }
    return ok(n);
  });
}

function checkBoolean(value: unknown): Checked<boolean> {
  if (value === true || value === 'true') return ok(true);
  if (value === false || value === 'false') return ok(false);
  return fail(`must be true or false, got ${describe(value)}`);
}
checkBoolean.input = { anyOf: [{ type: 'boolean' }, { enum: ['true', 'false'] }, FROM_ENV] };

function checkDuration(value: unknown): Checked<number> {
  if (value === undefined) return fail(REQUIRED);
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  if (ms === undefined || ms <= 0) {
    return fail(
      `${describe(value)} is not a duration; write a positive number with a unit ms, s, m, h or d, e.g. "500ms", "10s", "1.5m", "4h", "30d"`,
    );
  }
  return ok(ms);
}
const DURATION_INPUT = orFromEnv({
  type: 'string',
  pattern: DURATION_PATTERN.source,
  description: 'a duration: a positive number with a unit ms, s, m, h or d, e.g. "500ms", "10s", "1.5m", "4h", "30d"',
});
checkDuration.input = { $ref: '#/$defs/duration' };

function checkTopicName(what: string, allowEmpty: boolean) {
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

function checkList<T>(check: Check<T>, opts: { min?: number; max?: number; secret?: boolean } = {}) {
  const input = {
    type: 'array',
    items: check.input ?? {},
    ...(opts.min !== undefined && { minItems: opts.min }),
    ...(opts.max !== undefined && { maxItems: opts.max }),
  };
  return withInput(input, (value: unknown): Checked<T[]> => {
    if (value === undefined) return fail(REQUIRED);
    if (!Array.isArray(value)) return fail(`must be a list, got ${opts.secret === true ? describeSecret(value) : describe(value)}`);
    const problems: Problem[] = [];
    if (opts.min !== undefined && value.length < opts.min) {
      problems.push({ path: [], message: `needs at least ${opts.min} ${opts.min === 1 ? 'entry' : 'entries'}, got ${value.length}` });
    }
    if (opts.max !== undefined && value.length > opts.max) {
      problems.push({ path: [], message: `at most ${opts.max} entries, got ${value.length}` });
    }
    const out: T[] = [];
    value.forEach((item, i) => {
      const r = check(item);
      if (r.ok) out.push(r.value);
      else for (const p of r.problems) problems.push({ path: [i, ...p.path], message: p.message });
    });
    return problems.length > 0 ? { ok: false, problems } : ok(out);
  });
}

// host:port or [ipv6]:port — the form kafkajs takes.
const BROKER_PATTERN = /^(?:\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/;

function checkBroker(value: unknown): Checked<string> {
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

function checkWebhookUrl(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  // NOTE: the URL is not quoted: its user info, path or query may hold a token.
  const expected = 'must be an absolute http:// or https:// URL';
  // NOTE: the WHATWG parser accepts "http:host" and "http:/host" for special schemes;
  // insisting on the literal "//" keeps the URL what the operator sees.
  if (!/^https?:\/\//i.test(text.value)) {
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text.value)?.[1];
    return fail(scheme !== undefined ? `${expected}, not ${JSON.stringify(`${scheme}://`)}` : `${expected}; add the scheme, e.g. https://<host>/<path>`);
  }
  let url: URL;
  try {
    url = new URL(text.value);
  } catch {
    return fail(`${expected}; it does not parse as a URL`);
  }
  if (url.hostname === '') return fail(`${expected}; it has no host`);
  // Kept as written: docs/webhooks.md posts to "<url as configured>".
  return ok(text.value);
}
checkWebhookUrl.input = orFromEnv({
  type: 'string',
  pattern: `^${anyCase('http')}[Ss]?://[^/?#\\s]`,
  description: 'an absolute http:// or https:// URL',
});

/** RFC 7230 `token`: the characters a header field name may contain. */
const HEADER_NAME_PATTERN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function headerValueProblem(value: string): string | undefined {
  if (value.includes('\r')) return 'contains a carriage return (CR)';
  if (value.includes('\n')) return 'contains a line feed (LF)';
  if (value.includes('\0')) return 'contains a NUL character';
  // undici refuses other control characters and anything outside Latin-1 at send time.
  if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) return 'contains a control character or a character outside Latin-1';
  return undefined;
}

function checkHeaders(value: unknown): Checked<Record<string, string>> {
  if (value === undefined || value === null) return ok({});
  if (!isPlainObject(value)) {
    return fail(`must be a mapping of header name to value, e.g. { X-Team: growth }, got ${describe(value)}`);
  }
  const problems: Problem[] = [];
  const seen = new Map<string, string>();
  for (const [name, headerValue] of Object.entries(value)) {
    const lower = name.toLowerCase();
    const reserved = RESERVED_HEADER_NAMES.get(lower);
    if (!HEADER_NAME_PATTERN.test(name)) {
      problems.push({
        path: [name],
        message: `${JSON.stringify(name)} is not a legal HTTP header name; use letters, digits and !#$%&'*+-.^_\`|~ only, no spaces`,
      });
    } else if (reserved !== undefined) {
      problems.push({ path: [name], message: `header ${JSON.stringify(name)} is reserved (${reserved}); remove it` });
    } else if (seen.has(lower)) {
      problems.push({
        path: [name],
        message: `header ${JSON.stringify(name)} is also given as ${JSON.stringify(seen.get(lower))}; header names are case-insensitive, keep one`,
      });
    }
    seen.set(lower, name);
    if (typeof headerValue !== 'string') {
      const got = SENSITIVE_NAME.test(name) ? describeSecret(headerValue) : describe(headerValue);
      problems.push({ path: [name], message: `header value must be a string, got ${got}; quote it in YAML` });
      continue;
    }
    const bad = headerValueProblem(headerValue);
    if (bad !== undefined) {
      problems.push({ path: [name], message: `header value ${bad}; a header value must be one line without CR, LF or NUL` });
    }
  }
  return problems.length > 0 ? { ok: false, problems } : ok(value as Record<string, string>);
}
checkHeaders.input = {
  type: ['object', 'null'],
  propertyNames: {
    pattern: HEADER_NAME_PATTERN.source,
    not: { pattern: `^(${[...RESERVED_HEADER_NAMES.keys()].map(anyCase).join('|')})$` },
  },
  additionalProperties: { type: 'string', pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$' },
  description: 'static headers: header name to value; Switchyard sets Content-Type, Content-Length, Host, User-Agent, X-Signature and traceparent itself',
};

function checkSsl(value: unknown): Checked<boolean | Record<string, unknown>> {
  if (typeof value === 'boolean' || isPlainObject(value)) return ok(value);
  if (value === 'true' || value === 'false') return ok(value === 'true');
  return fail(`must be true, false, or a mapping of TLS options as kafkajs takes them (ca, cert, key, ...), got ${describe(value)}`);
}
checkSsl.input = { anyOf: [{ type: ['boolean', 'object'] }, { enum: ['true', 'false'] }, FROM_ENV] };

function oneOf<T extends string>(allowed: readonly T[]) {
  return withInput(orFromEnv({ enum: allowed }), (value: unknown): Checked<T> => {
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return ok(value as T);
    return fail(`must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  });
}

// ---------------------------------------------------------------------------
// Unknown keys: name the key and, where it looks like a typo, the key that was meant.

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

export function unknownKeyMessage(key: string, known: readonly string[]): string {
  const close = known.find((k) => k.toLowerCase() === key.toLowerCase() || editDistance(k, key) <= 2);
  const hint = close !== undefined ? `did you mean "${close}"?` : `allowed here: ${known.join(', ')}`;
  return `unknown key ${JSON.stringify(key)}; ${hint}`;
}

function unknownKeyProblems(value: Record<string, unknown>, known: readonly string[]): Problem[] {
  return Object.keys(value)
    .filter((k) => !known.includes(k))
    .map((k) => ({ path: [k], message: unknownKeyMessage(k, known) }));
}

// ---------------------------------------------------------------------------
// Audience rules are recursive and their kind is told by which key is present, so
// they are checked by hand: a zod union would answer "Invalid input" for a typo deep
// inside an `all:`.

const RULE_KINDS = ['all', 'any', 'not', 'trait', 'event'] as const;
const TRAIT_OPERATORS = ['equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] as const;
// Deep enough for any real rule; stops a pathological file before the stack does.
const MAX_RULE_DEPTH = 32;

function prefixed(problems: Problem[], prefix: IssuePath): Problem[] {
  return problems.map((p) => ({ path: [...prefix, ...p.path], message: p.message }));
}

function checkFiniteNumber(value: unknown): Checked<number> {
  if (typeof value === 'number' && Number.isFinite(value)) return ok(value);
  return fail(`must be a number, got ${describe(value)}`);
}

export function checkAudienceRule(value: unknown, depth = 0): Checked<AudienceRule> {
  const shape = `a rule is a mapping with exactly one of: ${RULE_KINDS.join(', ')}`;
  if (!isPlainObject(value)) return fail(`${shape}; got ${describe(value)}`);
  if (depth > MAX_RULE_DEPTH) return fail(`rules are nested more than ${MAX_RULE_DEPTH} deep`);
  const kinds = RULE_KINDS.filter((k) => k in value);
  const [kind] = kinds;
  if (kind === undefined || kinds.length > 1) {
    const got = kinds.length > 1 ? `got ${kinds.join(' and ')}` : `got keys ${Object.keys(value).join(', ') || '(none)'}`;
    return fail(`${shape}; ${got}`);
  }
  switch (kind) {
    case 'all':
    case 'any': {
      const problems = unknownKeyProblems(value, [kind]);
      const list = checkList((item) => checkAudienceRule(item, depth + 1), { min: 1 })(value[kind]);
      if (!list.ok) problems.push(...prefixed(list.problems, [kind]));
      if (problems.length > 0 || !list.ok) return { ok: false, problems };
      return ok(kind === 'all' ? { all: list.value } : { any: list.value });
    }
    case 'not': {
      const problems = unknownKeyProblems(value, ['not']);
      const inner = checkAudienceRule(value.not, depth + 1);
      if (!inner.ok) problems.push(...prefixed(inner.problems, ['not']));
      if (problems.length > 0 || !inner.ok) return { ok: false, problems };
      return ok({ not: inner.value });
    }
    case 'trait':
      return checkTraitRule(value);
    case 'event':
      return checkEventRule(value);
  }
}

function checkTraitRule(value: Record<string, unknown>): Checked<TraitRule> {
  const problems = unknownKeyProblems(value, ['trait', ...TRAIT_OPERATORS]);
  const trait = checkText(value.trait);
  if (!trait.ok) problems.push(...prefixed(trait.problems, ['trait']));
  const operators = TRAIT_OPERATORS.filter((op) => op in value);
  if (operators.length !== 1) {
    problems.push({
      path: [],
      message: `a trait rule needs exactly one operator of ${TRAIT_OPERATORS.join(', ')}; got ${operators.length === 0 ? 'none' : operators.join(' and ')}`,
    });
  }
  const operands: Partial<Record<(typeof TRAIT_OPERATORS)[number], unknown>> = {};
  for (const op of operators) {
    const operand = value[op];
    let r: Checked<unknown>;
    if (op === 'equals') {
      r = operand === undefined || operand === null || typeof operand === 'object'
        ? fail(`must be a string, number or boolean, got ${describe(operand)}`)
        : ok(operand);
    } else if (op === 'in') {
      r = checkList((item) => (item !== null && typeof item === 'object' ? fail(`must be a string, number or boolean, got ${describe(item)}`) : ok(item)), { min: 1 })(operand);
    } else if (op === 'exists') {
      r = typeof operand === 'boolean' ? ok(operand) : fail(`must be true or false, got ${describe(operand)}`);
    } else {
      r = checkFiniteNumber(operand);
    }
    if (!r.ok) problems.push(...prefixed(r.problems, [op]));
    else operands[op] = r.value;
  }
  if (problems.length > 0 || !trait.ok) return { ok: false, problems };
  // Each operand was checked above against its operator's type.
  return ok({ trait: trait.value, ...operands } as TraitRule);
}

function checkEventRule(value: Record<string, unknown>): Checked<EventRule> {
  const problems = unknownKeyProblems(value, ['event', 'atLeast', 'within']);
  const event = checkText(value.event);
  if (!event.ok) problems.push(...prefixed(event.problems, ['event']));
  const atLeast = checkInt(1, Number.MAX_SAFE_INTEGER)(value.atLeast);
  if (!atLeast.ok) problems.push(...prefixed(atLeast.problems, ['atLeast']));
  const within = value.within === undefined ? ok(undefined) : checkDuration(value.within);
  if (!within.ok) problems.push(...prefixed(within.problems, ['within']));
  if (problems.length > 0 || !event.ok || !atLeast.ok || !within.ok) return { ok: false, problems };
  const rule: EventRule = { event: event.value, atLeast: atLeast.value };
  if (within.value !== undefined) rule.withinMs = within.value;
  return ok(rule);
}

/** Where the rule's JSON Schema sits in the generated file: rules nest, so it refers to itself. */
const AUDIENCE_RULE_REF: InputSchema = { $ref: '#/$defs/audienceRule' };

function ruleInput(properties: Record<string, InputSchema>, required: string[], extra: InputSchema = {}): InputSchema {
  return { type: 'object', properties, required, additionalProperties: false, ...extra };
}

const SCALAR: InputSchema = { type: ['string', 'number', 'boolean'] };
const NUMBER: InputSchema = { type: 'number' };

/** The JSON Schema of checkAudienceRule: one of the five kinds, told apart by their key. */
const AUDIENCE_RULE_INPUT: InputSchema = {
  description: `a rule is a mapping with exactly one of: ${RULE_KINDS.join(', ')}`,
  oneOf: [
    ruleInput({ all: { type: 'array', minItems: 1, items: AUDIENCE_RULE_REF } }, ['all']),
    ruleInput({ any: { type: 'array', minItems: 1, items: AUDIENCE_RULE_REF } }, ['any']),
    ruleInput({ not: AUDIENCE_RULE_REF }, ['not']),
    // `trait` and exactly one operator.
    ruleInput(
      {
        trait: checkText.input,
        equals: SCALAR,
        in: { type: 'array', minItems: 1, items: SCALAR },
        exists: { type: 'boolean' },
        gt: NUMBER,
        gte: NUMBER,
        lt: NUMBER,
        lte: NUMBER,
      },
      ['trait'],
      { minProperties: 2, maxProperties: 2 },
    ),
    ruleInput(
      { event: checkText.input, atLeast: checkInt(1, Number.MAX_SAFE_INTEGER).input ?? {}, within: checkDuration.input },
      ['event', 'atLeast'],
    ),
  ],
};

// ---------------------------------------------------------------------------
// Zod wiring.

/**
 * A zod schema that runs a check function and reports its problems at their paths;
 * `input` (by default the check's own) becomes its JSON Schema.
 */
function field<T>(check: Check<T>, input = check.input) {
  const schema = z.unknown().transform((value, ctx): T => {
    const result = check(value);
    if (result.ok) return result.value;
    for (const p of result.problems) {
      ctx.issues.push({ code: 'custom', message: p.message, input: value, path: p.path });
    }
    return z.NEVER;
  });
  return input === undefined ? schema : schema.meta(input);
}

/**
 * `z.strictObject` whose unknown-key issue carries one message per key, joined by
 * newlines in the order of `issue.keys` (load.ts splits them back into one error per key).
 */
function strictObject<S extends z.core.$ZodLooseShape>(shape: S) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => unknownKeyMessage(k, known)).join('\n');
      if (issue.code === 'invalid_type') {
        return issue.input === undefined ? REQUIRED : `must be a mapping (key: value), got ${describe(issue.input)}`;
      }
      return undefined;
    },
  });
}

function list<T extends z.ZodType>(element: T, whenMissing = REQUIRED) {
  return z.array(element, {
    error: (issue) =>
      issue.code === 'invalid_type'
        ? issue.input === undefined
          ? whenMissing
          : `must be a list, got ${describe(issue.input)}`
        : undefined,
  });
}

const nonEmptyText = field(checkText);
const secretText = field(checkSecret);
const idList = field(checkList(checkText));
const port = field(checkInt(0, 65535));

const kafkaSchema = strictObject({
  brokers: field(checkList(checkBroker, { min: 1 })).prefault([...DEFAULT_BROKERS]),
  clientId: nonEmptyText.prefault('switchyard'),
  topicPrefix: field(checkTopicName('the topic prefix', true)).prefault(DEFAULT_TOPIC_PREFIX),
  groupPrefix: field(checkGroupPrefix).optional(),
  partitions: field(checkInt(1, 100_000)).prefault(12),
  replicationFactor: field(checkInt(1, 1_000)).prefault(1),
  ssl: field(checkSsl).optional(),
  sasl: strictObject({
    mechanism: field(oneOf(['plain', 'scram-sha-256', 'scram-sha-512'] as const)),
    username: nonEmptyText,
    password: secretText,
  }).optional(),
});

const retryTiers = field(
  checkList(
    (value): Checked<RetryTier> => {
      const ms = checkDuration(value);
      return ms.ok ? ok({ name: value as string, ms: ms.value }) : ms;
    },
    { min: 1 },
  ),
  { type: 'array', minItems: 1, items: checkDuration.input },
);

/** A failure rate above 0, at most 1 (0.5: half of the window's attempts). */
function checkFailureRate(value: unknown): Checked<number> {
  const n = checkFraction(value);
  if (n.ok && n.value === 0) return fail('must be above 0 (0.5 opens a circuit when half of the attempts in the window failed), got 0');
  return n;
}
checkFailureRate.input = { anyOf: [{ type: 'number', exclusiveMinimum: 0, maximum: 1 }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };

/** Longest sliding window and cool-down a circuit breaker may be given. */
const MAX_CIRCUIT_WINDOW_MS = 3_600_000;
const MAX_CIRCUIT_COOL_DOWN_MS = 24 * 3_600_000;

function checkDurationBetween(minMs: number, maxMs: number) {
  return withInput(checkDuration.input!, (value: unknown): Checked<number> => {
    const ms = checkDuration(value);
    if (ms.ok && (ms.value < minMs || ms.value > maxMs)) return fail(`${describe(value)} is outside ${formatDuration(minMs)} to ${formatDuration(maxMs)}; give a duration in that range`);
    return ms;
  });
}

const circuitBreakerSchema = strictObject({
  window: field(checkDurationBetween(1_000, MAX_CIRCUIT_WINDOW_MS)).optional(),
  minAttempts: field(checkInt(1, 1_000_000)).optional(),
  failureRate: field(checkFailureRate).optional(),
  unanswered: field(checkInt(1, 1_000_000)).optional(),
  coolDown: field(checkDurationBetween(100, MAX_CIRCUIT_COOL_DOWN_MS)).optional(),
  maxCoolDown: field(checkDurationBetween(100, MAX_CIRCUIT_COOL_DOWN_MS)).optional(),
})
  .superRefine(
    (c, ctx) => {
      if (c.coolDown !== undefined && c.maxCoolDown !== undefined && c.maxCoolDown < c.coolDown) {
        ctx.addIssue({ code: 'custom', path: ['maxCoolDown'], message: 'is shorter than coolDown; the cool-down doubles from coolDown up to maxCoolDown, so give a maxCoolDown at least as long' });
      }
    },
  )
  .transform((c): CircuitBreakerConfig => {
    const out: CircuitBreakerConfig = {};
    if (c.window !== undefined) out.windowMs = c.window;
    if (c.minAttempts !== undefined) out.minAttempts = c.minAttempts;
    if (c.failureRate !== undefined) out.failureRatio = c.failureRate;
    if (c.unanswered !== undefined) out.unanswered = c.unanswered;
    if (c.coolDown !== undefined) out.coolDownMs = c.coolDown;
    if (c.maxCoolDown !== undefined) out.maxCoolDownMs = c.maxCoolDown;
    return out;
  });

/** The longest retry window a destination may be given (`settings.retry.maxWindow`). */
export const MAX_DESTINATION_RETRY_WINDOW_MS = 30 * 86_400_000;

/** A status `settings.retry.stopOn` may list: 2xx are delivered and 1xx/3xx are never retried, so only 4xx and 5xx. */
const checkStopOnStatus = withInput(checkInt(400, 599).input!, (value: unknown): Checked<number> => {
  const n = checkInt(400, 599)(value);
  if (n.ok) return n;
  return fail(`must be an HTTP status from 400 to 599 (such as 410) that should dead-letter at once, got ${describe(value)}`);
});

/** The longest `settings.autoDisable.after`; the shortest is a second (tests and demos). */
export const MAX_AUTO_DISABLE_AFTER_MS = 90 * 86_400_000;
/** `settings.autoDisable.minAttempts` when not given. */
export const DEFAULT_AUTO_DISABLE_MIN_ATTEMPTS = 1;

const autoDisableSchema = strictObject({
  after: field(checkDurationBetween(1_000, MAX_AUTO_DISABLE_AFTER_MS)),
  minAttempts: field(checkInt(1, 1_000_000_000)).prefault(DEFAULT_AUTO_DISABLE_MIN_ATTEMPTS),
}).transform((a): AutoDisableConfig => ({ afterMs: a.after, minAttempts: a.minAttempts }));

const retrySchema = strictObject({
  tiers: retryTiers.optional(),
  maxWindow: field(checkDurationBetween(1_000, MAX_DESTINATION_RETRY_WINDOW_MS)).optional(),
  stopOn: field(checkList(checkStopOnStatus)).optional(),
}).transform((r): RetryConfig => {
  const out: RetryConfig = {};
  if (r.tiers !== undefined) out.tiers = r.tiers;
  if (r.maxWindow !== undefined) out.maxWindowMs = r.maxWindow;
  if (r.stopOn !== undefined) out.stopOn = [...new Set(r.stopOn)];
  return out;
});
function checkProxyUrl(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  let url: URL;
  try {
    url = new URL(text.value);
  } catch {
    return fail('must be the proxy as an absolute URL, e.g. http://proxy.internal:3128; it does not parse');
  }
  // NOTE: not quoted: the user info may hold the proxy's password.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fail(`must be an http:// or https:// URL of the proxy, not ${JSON.stringify(url.protocol)}; e.g. http://proxy.internal:3128`);
  return ok(text.value);
}
checkProxyUrl.input = orFromEnv({ type: 'string', pattern: `^${anyCase('http')}[Ss]?://`, description: 'the proxy: an absolute http:// or https:// URL' });

const proxySchema = strictObject({
  url: field(checkProxyUrl),
  noProxy: idList.prefault([]),
}).transform((p): ProxyConfig => ({ url: p.url, noProxy: p.noProxy }));

/** `delivery.bufferBudget`: the default keeps a deliverer inside its shipped 768Mi limit with margin (docs/operations.md#memory). */
export const DEFAULT_BUFFER_BUDGET = 128 * 1024 * 1024;
const MIN_BUFFER_BUDGET = 8 * 1024 * 1024;
const MAX_BUFFER_BUDGET = 16 * 1024 * 1024 * 1024;

const deliverySchema = strictObject({
  timeout: field(checkDuration).prefault('5s'),
  retryTiers: retryTiers.prefault([...DEFAULT_RETRY_TIERS]),
  maxRetryWindow: field(checkDuration).prefault('4h'),
  concurrencyPerDestination: field(checkInt(1, 100_000)).prefault(64),
  bufferBudget: field(checkSize(MIN_BUFFER_BUDGET, MAX_BUFFER_BUDGET)).prefault(formatSize(DEFAULT_BUFFER_BUDGET)),
  blockPrivateNetworks: field(checkBoolean).prefault(false),
  circuitBreaker: circuitBreakerSchema.optional(),
  proxy: proxySchema.optional(),
}).transform(
  (d): Config['delivery'] => ({
    timeoutMs: d.timeout,
    retryTiers: d.retryTiers,
    maxRetryWindowMs: d.maxRetryWindow,
    concurrencyPerDestination: d.concurrencyPerDestination,
    bufferBudgetBytes: d.bufferBudget,
    blockPrivateNetworks: d.blockPrivateNetworks,
    ...(d.circuitBreaker === undefined ? {} : { circuitBreaker: d.circuitBreaker }),
    ...(d.proxy === undefined ? {} : { proxy: d.proxy }),
  }),
);

/** `router.dedupeWindow`: up to a day (docs/kafka.md#copies-of-a-call). */
export const MAX_DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A duration up to a day, or 0 (off). */
const checkDedupeWindow = withInput({ anyOf: [{ $ref: '#/$defs/duration' }, { const: 0 }] }, (value: unknown): Checked<number> => {
  if (value === 0 || value === '0') return ok(0);
  const ms = typeof value === 'string' ? parseDuration(value) : undefined;
  if (ms === 0) return ok(0);
  const checked = checkDuration(value);
  if (!checked.ok) return fail(`${describe(value)} is not a dedupe window; write a duration up to 24h, e.g. "1h", or 0 to turn deduplication off`);
  if (checked.value > MAX_DEDUPE_WINDOW_MS) return fail(`${describe(value)} is longer than 24h, the longest dedupe window; give a shorter duration, or 0 to turn deduplication off`);
  return checked;
});

const routerSchema = strictObject({
  dedupeWindow: field(checkDedupeWindow).prefault('1h'),
}).transform((r): Config['router'] => ({ dedupeWindowMs: r.dedupeWindow }));

const trackFilterSchema = strictObject({
  blockEvents: idList.optional(),
  allowEvents: idList.optional(),
}).superRefine(
  (filter, ctx) => {
    const given = [filter.blockEvents, filter.allowEvents].filter((l) => l !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `give exactly one of blockEvents or allowEvents, got ${given === 0 ? 'neither' : 'both'}`,
      });
    }
  },
  // Run even when a list inside has a bad entry, so both problems show at once.
  { when: (payload) => isPlainObject(payload.value) },
).meta({ minProperties: 1, maxProperties: 1 });

/** The highest `callsPerSecond` and `bytesPerSecond` a source's limits may give, and the longest `burst` (seconds). */
const MAX_SOURCE_CALLS_PER_SECOND = 1_000_000;
const MAX_SOURCE_BYTES_PER_SECOND = 1_024 * 1_048_576;
const MAX_SOURCE_BURST_SECONDS = 3_600;

const sourceLimitsSchema = strictObject({
  callsPerSecond: field(checkPositiveNumber(MAX_SOURCE_CALLS_PER_SECOND)).prefault(DEFAULT_SOURCE_LIMITS.callsPerSecond),
  bytesPerSecond: field(checkSize(1_024, MAX_SOURCE_BYTES_PER_SECOND)).prefault(formatSize(DEFAULT_SOURCE_LIMITS.bytesPerSecond)),
  burst: field(checkPositiveNumber(MAX_SOURCE_BURST_SECONDS)).prefault(DEFAULT_SOURCE_LIMITS.burst),
});

const sourceSchema = strictObject({
  id: nonEmptyText,
  writeKey: secretText.optional(),
  destinations: idList.prefault([]),
  trackFilter: trackFilterSchema.optional(),
  limits: sourceLimitsSchema.prefault({}),
  trackingPlan: strictObject({
    id: nonEmptyText,
    mode: field(oneOf(['observe', 'omit', 'block'] as const)).prefault('observe'),
  }).optional(),
});

// ---------------------------------------------------------------------------
// Tracking plans (docs/tracking-plans.md): each schema compiled here, so a file with
// one that does not compile is refused, with its path, at load and at a reload.

const PLAN_SCHEMA_INPUT: InputSchema = { type: ['object', 'boolean'], description: 'a JSON Schema (draft 2020-12, or draft-07 when its $schema says so)' };

function checkPlanSchema(value: unknown): Checked<JsonSchema> {
  if (value === undefined) return fail(REQUIRED);
  const compiled = compileSchema(value);
  return compiled.ok ? ok(value as JsonSchema) : fail(compiled.error);
}
checkPlanSchema.input = PLAN_SCHEMA_INPUT;

function checkPlanEvents(value: unknown): Checked<Record<string, JsonSchema>> {
  if (value === undefined) return fail('is required; give each planned event the schema of its properties, e.g. events: { "Order Completed": { type: object } }, or events: {}');
  if (!isPlainObject(value)) return fail(`must be a mapping of event name to the JSON Schema of its properties, got ${describe(value)}`);
  const problems: Problem[] = [];
  for (const [name, schema] of Object.entries(value)) {
    const checked = checkPlanSchema(schema);
    if (!checked.ok) problems.push(...prefixed(checked.problems, [name]));
  }
  return problems.length > 0 ? { ok: false, problems } : ok(value as Record<string, JsonSchema>);
}
checkPlanEvents.input = { type: 'object', additionalProperties: PLAN_SCHEMA_INPUT };

const trackingPlanSchema = strictObject({
  id: nonEmptyText,
  file: nonEmptyText.optional(),
  events: field(checkPlanEvents),
  ...Object.fromEntries(PLAN_PARTS.map((part) => [part, field(checkPlanSchema).optional()])),
  unplannedEvents: field(oneOf(['allow', 'violate'] as const)).prefault('allow'),
})
  // As written, `events` may be in the plan's `file` instead (src/config/plan-files.ts puts it in place before this schema runs).
  .meta({ required: ['id'], anyOf: [{ required: ['events'], properties: { events: true } }, { required: ['file'], properties: { file: true } }] })
  .transform((plan): TrackingPlanConfig => {
    const out: TrackingPlanConfig = { id: plan.id, events: plan.events, unplannedEvents: plan.unplannedEvents };
    if (plan.file !== undefined) out.file = plan.file;
    for (const part of PLAN_PARTS) {
      const schema = (plan as Record<string, unknown>)[part];
      if (schema !== undefined) out[part] = schema as JsonSchema;
    }
    return out;
  });

const webhookSchema = strictObject({
  url: field(checkWebhookUrl),
  headers: field(checkHeaders).prefault({}),
});

/** Most requests per second a rate limit may allow; more is no limit at all. */
const MAX_REQUESTS_PER_SECOND = 100_000;

const rateLimitSchema = strictObject({
  requestsPerSecond: field(checkPositiveNumber(MAX_REQUESTS_PER_SECOND)),
  burst: field(checkInt(1, 1_000_000)).optional(),
}).transform(
  (r): RateLimitConfig => ({ requestsPerSecond: r.requestsPerSecond, burst: r.burst ?? Math.max(1, Math.ceil(r.requestsPerSecond)) }),
);

/** The most events one batch request may carry (Segment's own batches go up to 4,000). */
export const MAX_BATCH_EVENTS = 4_000;
/** The largest batch body, and the smallest `maxBytes` (a bound below one ordinary event would make every batch one event). */
export const MAX_BATCH_BYTES = 4 * 1_048_576;
const MIN_BATCH_BYTES = 1_024;
/**
 * The longest `maxWait`. NOTE: the events of an open batch wait in the deliverer's memory,
 * taken from their partitions and not yet sent; a minute is already far past what a
 * receiver that batches for cost gains from waiting.
 */
export const MAX_BATCH_WAIT_MS = 60_000;

function checkSize(min: number, max: number) {
  const input = orFromEnv({ type: 'string', pattern: SIZE_PATTERN.source, description: `a size: a number with a unit B, KB or MB (1 KB = 1,024 bytes), from ${formatSize(min)} to ${formatSize(max)}, e.g. "512KB"` });
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const bytes = typeof value === 'string' ? parseSize(value) : undefined;
    if (bytes === undefined) return fail(`${describe(value)} is not a size; write a number with a unit B, KB or MB (1 KB = 1,024 bytes), e.g. "512KB" or "1MB"`);
    if (bytes < min || bytes > max) return fail(`${describe(value)} is outside ${formatSize(min)} to ${formatSize(max)}; give a size in that range`);
    return ok(bytes);
  });
}

function checkDurationUpTo(maxMs: number) {
  return withInput(checkDuration.input!, (value: unknown): Checked<number> => {
    const ms = checkDuration(value);
    if (ms.ok && ms.value > maxMs) return fail(`${describe(value)} is longer than ${formatDuration(maxMs)}, the longest a batch may wait for more events; give a shorter duration`);
    return ms;
  });
}

const batchSchema = strictObject({
  maxEvents: field(checkInt(1, MAX_BATCH_EVENTS)).prefault(100),
  maxBytes: field(checkSize(MIN_BATCH_BYTES, MAX_BATCH_BYTES)).prefault('512KB'),
  maxWait: field(checkDurationUpTo(MAX_BATCH_WAIT_MS)).prefault('1s'),
  format: field(oneOf(['json', 'ndjson'] as const)).prefault('json'),
}).transform((b): BatchConfig => ({ maxEvents: b.maxEvents, maxBytes: b.maxBytes, maxWaitMs: b.maxWait, format: b.format }));

const STANDARD_SECRET_FORM = '"whsec_" followed by the key in base64, e.g. whsec_ and the output of `openssl rand -base64 32`';

/**
 * The rules across a destination's secret settings. NOTE: a secret is never quoted in
 * a message: check-config output ends up in CI logs.
 */
function signingProblems(settings: Record<string, unknown>): Problem[] {
  const problems: Problem[] = [];
  const { sharedSecret, sharedSecrets, signing } = settings;
  if (sharedSecret !== undefined && sharedSecrets !== undefined) {
    problems.push({
      path: ['sharedSecrets'],
      message: 'give sharedSecret or sharedSecrets, not both; while rotating, list the new and the old secret in sharedSecrets and remove sharedSecret',
    });
  }
  const secrets: [IssuePath, string][] = [];
  if (typeof sharedSecret === 'string') secrets.push([['sharedSecret'], sharedSecret]);
  if (Array.isArray(sharedSecrets)) {
    sharedSecrets.forEach((secret, i) => {
      if (typeof secret === 'string') secrets.push([['sharedSecrets', i], secret]);
    });
    if (sharedSecrets.length === 2 && sharedSecrets[0] === sharedSecrets[1]) {
      problems.push({ path: ['sharedSecrets', 1], message: 'is the same secret as sharedSecrets[0]; list the new secret first and the old one second' });
    }
  }
  if (signing !== 'standard' && !(Array.isArray(signing) && signing.includes('standard'))) return problems;
  if (sharedSecret === undefined && sharedSecrets === undefined) {
    problems.push({ path: ['signing'], message: `signing: standard needs a secret; set sharedSecret to ${STANDARD_SECRET_FORM}` });
  }
  for (const [path, secret] of secrets) {
    if (secret !== '' && !STANDARD_SECRET_PATTERN.test(secret)) problems.push({ path, message: `is not a Standard Webhooks secret; with signing: standard a secret is ${STANDARD_SECRET_FORM}` });
  }
  return problems;
}

const STANDARD_SECRET_INPUT: InputSchema = orFromEnv({ type: 'string', pattern: STANDARD_SECRET_PATTERN.source });

/** A Standard Webhooks secret (`operations.webhooks[].secret`): never quoted in a message. */
function checkStandardSecret(value: unknown): Checked<string> {
  const secret = checkSecret(value);
  if (!secret.ok) return secret;
  if (!STANDARD_SECRET_PATTERN.test(secret.value)) return fail(`is not a Standard Webhooks secret; give ${STANDARD_SECRET_FORM}`);
  return secret;
}
checkStandardSecret.input = STANDARD_SECRET_INPUT;

function checkHeaderName(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  if (!HEADER_NAME_PATTERN.test(text.value)) return fail(`${describe(value)} is not a legal HTTP header name; use letters, digits and !#$%&'*+-.^_\`|~ only, no spaces`);
  return ok(text.value);
}
checkHeaderName.input = { type: 'string', pattern: HEADER_NAME_PATTERN.source };

function checkSignatureContent(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  const unknown = text.value.match(/\{[^}]*\}/g)?.find((p) => !(SIGNATURE_PLACEHOLDERS as readonly string[]).includes(p));
  if (unknown !== undefined) return fail(`${describe(value)} holds ${unknown}; the placeholders are ${SIGNATURE_PLACEHOLDERS.join(', ')}`);
  if (!text.value.includes('{body}')) return fail(`${describe(value)} has no {body}: a signature must cover the body; e.g. "{timestamp}.{body}"`);
  return ok(text.value);
}
checkSignatureContent.input = { type: 'string', minLength: 1, description: 'what is signed: text with {id}, {timestamp} and {body}, e.g. "{timestamp}.{body}"' };

function checkSigning(value: unknown): Checked<SigningScheme | SigningScheme[]> {
  const one = oneOf(SIGNING_SCHEMES);
  if (!Array.isArray(value)) return one(value);
  const listed = checkList(one, { min: 1, max: SIGNING_SCHEMES.length })(value);
  if (!listed.ok) return listed;
  const twice = listed.value.findIndex((scheme, i) => listed.value.indexOf(scheme) !== i);
  if (twice !== -1) return fail(`lists ${listed.value[twice]} twice; list each scheme once`, [twice]);
  return listed;
}
checkSigning.input = {
  anyOf: [{ enum: SIGNING_SCHEMES }, { type: 'array', minItems: 1, maxItems: SIGNING_SCHEMES.length, uniqueItems: true, items: { enum: SIGNING_SCHEMES } }, FROM_ENV],
};

const signatureSchema = strictObject({
  header: field(checkHeaderName),
  algorithm: field(oneOf(['sha1', 'sha256', 'sha512'] as const)),
  encoding: field(oneOf(['hex', 'base64'] as const)),
  content: field(checkSignatureContent).prefault('{body}'),
  prefix: field(checkText).optional(),
  timestampHeader: field(checkHeaderName).optional(),
  idHeader: field(checkHeaderName).optional(),
  secret: secretText.optional(),
}).transform((sig): CustomSignatureConfig => {
  const out: CustomSignatureConfig = { header: sig.header, algorithm: sig.algorithm, encoding: sig.encoding, content: sig.content };
  if (sig.prefix !== undefined) out.prefix = sig.prefix;
  if (sig.timestampHeader !== undefined) out.timestampHeader = sig.timestampHeader;
  if (sig.idHeader !== undefined) out.idHeader = sig.idHeader;
  if (sig.secret !== undefined) out.secret = sig.secret;
  return out;
});

/** The header names each scheme sets, lower-cased. */
const SCHEME_HEADERS: Record<Exclude<SigningScheme, 'custom'>, readonly string[]> = {
  segment: ['x-signature'],
  standard: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
};

/**
 * The rules of `signing: custom` across settings: a `signature` with it (and only with
 * it), a key, content placeholders the receiver can read from headers, header names that
 * clash with nothing else the request carries.
 */
function customSignatureProblems(settings: Record<string, unknown>): Problem[] {
  const schemes: unknown[] = Array.isArray(settings.signing) ? settings.signing : [settings.signing];
  const custom = schemes.includes('custom');
  const signature = settings.signature;
  if (!custom) return signature === undefined ? [] : [{ path: ['signature'], message: 'is used only with signing: custom (or a list holding custom); add custom to signing or remove signature' }];
  if (!isPlainObject(signature)) return signature === undefined ? [{ path: ['signing'], message: 'signing: custom needs settings.signature { header, algorithm, encoding, content }; see docs/webhooks.md#custom-signatures' }] : [];
  const problems: Problem[] = [];
  if (signature.secret === undefined && settings.sharedSecret === undefined && settings.sharedSecrets === undefined) {
    problems.push({ path: ['signing'], message: 'signing: custom needs a key; set sharedSecret, or signature.secret' });
  }
  const content = typeof signature.content === 'string' ? signature.content : '{body}';
  if (content.includes('{timestamp}') && signature.timestampHeader === undefined) {
    problems.push({ path: ['signature', 'content'], message: 'uses {timestamp}; set signature.timestampHeader so that the receiver gets the timestamp that was signed' });
  }
  if (content.includes('{id}') && signature.idHeader === undefined) {
    problems.push({ path: ['signature', 'content'], message: 'uses {id}; set signature.idHeader so that the receiver gets the id that was signed' });
  }
  const taken = new Map<string, string>();
  for (const name of RESERVED_HEADER_NAMES.keys()) taken.set(name, 'a header Switchyard or the HTTP client sets');
  for (const scheme of schemes) {
    if (scheme === 'segment' || scheme === 'standard') for (const name of SCHEME_HEADERS[scheme]) taken.set(name, `set by signing: ${scheme}`);
  }
  // Free again when its own scheme is not in use: a receiver may expect X-Signature with another algorithm.
  for (const [scheme, names] of Object.entries(SCHEME_HEADERS)) {
    if (!schemes.includes(scheme)) for (const name of names) taken.delete(name);
  }
  if (settings.auth !== undefined) taken.set('authorization', 'set by settings.auth');
  if (Array.isArray(settings.webhooks)) {
    for (const hook of settings.webhooks) {
      if (isPlainObject(hook) && isPlainObject(hook.headers)) for (const name of Object.keys(hook.headers)) taken.set(name.toLowerCase(), 'a static header of a webhook entry');
    }
  }
  for (const key of ['header', 'timestampHeader', 'idHeader'] as const) {
    const name = signature[key];
    if (typeof name !== 'string') continue;
    const clash = taken.get(name.toLowerCase());
    if (clash !== undefined) problems.push({ path: ['signature', key], message: `header ${JSON.stringify(name)} is ${clash}; choose another name` });
    taken.set(name.toLowerCase(), `signature.${key}`);
  }
  return problems;
}

const tlsSchema = strictObject({
  clientCert: nonEmptyText.optional(),
  clientKey: nonEmptyText.optional(),
  ca: nonEmptyText.optional(),
  serverName: nonEmptyText.optional(),
  minVersion: field(oneOf(['TLSv1.2', 'TLSv1.3'] as const)).optional(),
})
  .superRefine(
    (tls, ctx) => {
      if ((tls.clientCert === undefined) !== (tls.clientKey === undefined)) {
        ctx.addIssue({ code: 'custom', path: [tls.clientCert === undefined ? 'clientCert' : 'clientKey'], message: 'clientCert and clientKey go together: give the path of both PEM files, or of neither' });
      }
    },
    { when: (payload) => isPlainObject(payload.value) },
  )
  .transform((tls): ClientTlsConfig => {
    const out: ClientTlsConfig = {};
    for (const key of ['clientCert', 'clientKey', 'ca', 'serverName', 'minVersion'] as const) if (tls[key] !== undefined) Object.assign(out, { [key]: tls[key] });
    return out;
  })
  .meta({ minProperties: 1 });

const AUTH_KINDS = ['basic', 'bearer', 'oauth2'] as const;

const authSchema = strictObject({
  basic: strictObject({ username: nonEmptyText, password: secretText }).optional(),
  bearer: strictObject({ token: secretText }).optional(),
  oauth2: strictObject({
    tokenUrl: field(checkWebhookUrl),
    clientId: nonEmptyText,
    clientSecret: secretText,
    scope: nonEmptyText.optional(),
    audience: nonEmptyText.optional(),
    clientAuth: field(oneOf(['body', 'basic'] as const)).prefault('body'),
  }).optional(),
})
  .superRefine(
    (auth, ctx) => {
      const given = AUTH_KINDS.filter((kind) => auth[kind] !== undefined);
      if (given.length !== 1) {
        ctx.addIssue({ code: 'custom', message: `give exactly one of ${AUTH_KINDS.join(', ')}, got ${given.length === 0 ? 'none' : given.join(' and ')}` });
      }
    },
    { when: (payload) => isPlainObject(payload.value) },
  )
  .transform((auth): AuthConfig => {
    if (auth.basic !== undefined) return { basic: auth.basic };
    if (auth.bearer !== undefined) return { bearer: auth.bearer };
    const o = auth.oauth2!;
    return {
      oauth2: {
        tokenUrl: o.tokenUrl,
        clientId: o.clientId,
        clientSecret: o.clientSecret,
        clientAuth: o.clientAuth,
        ...(o.scope === undefined ? {} : { scope: o.scope }),
        ...(o.audience === undefined ? {} : { audience: o.audience }),
      },
    };
  })
  .meta({ minProperties: 1, maxProperties: 1 });

/**
 * `settings.auth` sets the Authorization header; a static one beside it would be
 * overwritten without a word, so the two together are refused.
 */
function authProblems(settings: Record<string, unknown>): Problem[] {
  if (settings.auth === undefined || !Array.isArray(settings.webhooks)) return [];
  const problems: Problem[] = [];
  settings.webhooks.forEach((hook, i) => {
    const headers = isPlainObject(hook) && isPlainObject(hook.headers) ? hook.headers : {};
    const name = Object.keys(headers).find((n) => n.toLowerCase() === 'authorization');
    if (name !== undefined) {
      problems.push({ path: ['webhooks', i, 'headers', name], message: 'settings.auth sets the Authorization header; remove this one, or remove settings.auth and keep the static header' });
    }
  });
  return problems;
}

// ---------------------------------------------------------------------------
// Router-side shaping of a destination (docs/webhooks.md#shaping): filter, sample,
// dropProperties / allowProperties, transform. Kept together: the keys go into
// destination settings below as one spread.

function checkExpression(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  const compiled = compileExpression(text.value);
  if (!compiled.ok) return fail(`is not a JSONata expression that compiles: ${compiled.error}; fix the expression (see docs/webhooks.md#shaping)`);
  return ok(text.value);
}
checkExpression.input = { type: 'string', minLength: 1, description: 'a JSONata expression over the webhook body (docs/webhooks.md#shaping)' };

/** A fraction from 0 to 1 (also as a string, for `${NAME}` values). */
function checkFraction(value: unknown): Checked<number> {
  const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 1) {
    return fail(`must be a fraction from 0 to 1 (0.1 keeps one event in ten), got ${describe(value)}`);
  }
  return ok(n);
}
checkFraction.input = { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };

function checkPropertyPath(list: 'dropProperties' | 'allowProperties') {
  return withInput({ type: 'string', minLength: 1 }, (value: unknown): Checked<string> => {
    const text = checkText(value);
    if (!text.ok) return text;
    const problem = propertyPathProblem(list, text.value);
    return problem === undefined ? ok(text.value) : fail(problem);
  });
}

const shapingKeys = {
  filter: field(checkExpression).optional(),
  sample: field(checkFraction).optional(),
  dropProperties: field(checkList(checkPropertyPath('dropProperties'), { min: 1 })).optional(),
  allowProperties: field(checkList(checkPropertyPath('allowProperties'), { min: 1 })).optional(),
  transform: field(checkExpression).optional(),
};

function shapingSettingProblems(settings: Record<string, unknown>): Problem[] {
  if (settings.dropProperties === undefined || settings.allowProperties === undefined) return [];
  return [
    {
      path: ['allowProperties'],
      message: 'give dropProperties or allowProperties, not both: allowProperties keeps only the listed keys of properties and traits, dropProperties removes the listed paths',
    },
  ];
}

/** In JSON Schema: not both lists (beside the settings' other `not`, so in an `allOf`). */
const SHAPING_INPUT_RULES = [{ not: { required: ['dropProperties', 'allowProperties'], properties: { dropProperties: true, allowProperties: true } } }];

const destinationSchema = strictObject({
  id: field(checkTopicName('a destination id', false)),
  type: field((value): Checked<'webhooks'> =>
    value === 'webhooks'
      ? ok(value)
      : fail(value === undefined ? 'is required; add `type: webhooks`' : `must be "webhooks" (the only destination type), got ${describe(value)}`),
  ).meta({ const: 'webhooks' }),
  enabled: field(checkBoolean).prefault(true),
  settings: strictObject({
    rateLimit: rateLimitSchema.optional(),
    batch: batchSchema.optional(),
    ordering: field(oneOf(['none', 'user'] as const)).prefault('none'),
    circuitBreaker: circuitBreakerSchema.optional(),
    retry: retrySchema.optional(),
    autoDisable: autoDisableSchema.optional(),
    webhooks: list(webhookSchema).superRefine(
      (hooks, ctx) => {
        if (hooks.length === 0) ctx.addIssue({ code: 'custom', message: 'needs at least 1 entry, got 0' });
        if (hooks.length > MAX_WEBHOOKS) {
          ctx.addIssue({ code: 'custom', message: `at most ${MAX_WEBHOOKS} entries, got ${hooks.length}` });
        }
      },
      // The count is wrong whatever the entries hold; report it alongside their problems.
      { when: (payload) => Array.isArray(payload.value) },
    ).meta({ minItems: 1, maxItems: MAX_WEBHOOKS }),
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
      for (const problem of signingProblems(settings)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
      for (const problem of authProblems(settings)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
      for (const problem of customSignatureProblems(settings)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
      for (const problem of shapingSettingProblems(settings)) ctx.addIssue({ code: 'custom', message: problem.message, path: problem.path });
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
});

const audienceSchema = strictObject({
  name: nonEmptyText,
  sources: field(checkList(checkText, { min: 1 })),
  destinations: idList,
  rule: field((value) => checkAudienceRule(value), AUDIENCE_RULE_REF),
});

/** The admin port listens on loopback unless `admin.host` says otherwise (docs/configuration.md#admin). */
export const DEFAULT_ADMIN_HOST = '127.0.0.1';
/** The shortest admin token accepted on a host other machines can reach. */
export const MIN_ADMIN_TOKEN_LENGTH = 16;

/**
 * Why `token` cannot guard an admin port bound to `host`, or undefined. On loopback any
 * token (or none) will do; elsewhere anyone who reaches the port can try it, so it must
 * be long and not a placeholder printed in the examples. NOTE: the token is not quoted.
 */
function adminTokenProblem(host: string, token: string | undefined): string | undefined {
  if (token === undefined || isLoopbackHost(host)) return undefined;
  const where = `admin.host is ${JSON.stringify(host)}, reachable from other machines`;
  const generate = 'generate one with `openssl rand -hex 32`, or bind the admin port to 127.0.0.1';
  if (token === 'dev-admin-token' || /^change-?me/i.test(token)) {
    return `is a placeholder from the examples and ${where}: set a token of your own; ${generate}`;
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH) {
    return `is shorter than ${MIN_ADMIN_TOKEN_LENGTH} characters and ${where}: anyone who reaches the port could guess it; ${generate}`;
  }
  return undefined;
}

/** An entry of `admin.allowedHosts`: a name as a `Host` header carries it, without the port. */
function checkHostName(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  if (!/^[A-Za-z0-9._-]+$/.test(text.value) && parseIpAddress(text.value) === undefined) {
    return fail(`${describe(value)} is not a host name: give the name a client puts in the Host header, without scheme, port or path (e.g. switchyard-admin.monitoring.svc)`);
  }
  return ok(text.value.toLowerCase());
}
checkHostName.input = checkText.input;

/** An entry of `operations.webhooks`: a URL and its Standard Webhooks secret (`whsec_…`). */
const operationsWebhookSchema = strictObject({
  url: field(checkWebhookUrl),
  secret: field(checkStandardSecret),
});

const NO_SOURCE =
  'needs at least one source (where calls come from: an id, a writeKey and the destinations it feeds); see config/example.yaml';

const listenerSchema = (defaultPort: number) =>
  strictObject({ port: port.prefault(defaultPort), host: nonEmptyText.prefault('0.0.0.0') });

export const configSchema: z.ZodType<Config> = strictObject({
  kafka: kafkaSchema.prefault({}),
  gateway: listenerSchema(8080).prefault({}),
  admin: strictObject({
    port: port.prefault(9464),
    host: nonEmptyText.prefault(DEFAULT_ADMIN_HOST),
    token: secretText.optional(),
    allowedHosts: field(checkList(checkHostName)).prefault([]),
  })
    .superRefine((admin, ctx) => {
      const problem = adminTokenProblem(admin.host, admin.token);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, path: ['token'] });
    })
    .prefault({}),
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
  operations: strictObject({
    webhooks: list(operationsWebhookSchema).prefault([]),
  }).prefault({}),
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

// ---------------------------------------------------------------------------
// Rules across the file. They read the raw document and skip whatever is not of the
// expected shape: the schema already reports that.

/** Kafka refuses longer topic names. */
const MAX_TOPIC_NAME_LENGTH = 249;

function entries(value: unknown): [number, Record<string, unknown>][] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item, i): [number, Record<string, unknown>][] => (isPlainObject(item) ? [[i, item]] : []));
}

function strings(value: unknown): [number, string][] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item, i): [number, string][] => (typeof item === 'string' ? [[i, item]] : []));
}

function closest(name: string, known: readonly string[]): string | undefined {
  return known.find((k) => k.toLowerCase() === name.toLowerCase() || editDistance(k, name) <= 2);
}

function missingReference(kind: string, id: string, known: readonly string[]): string {
  const guess = closest(id, known);
  const hint =
    guess !== undefined
      ? `did you mean "${guess}"?`
      : known.length > 0
        ? `known ${kind} ids: ${known.join(', ')}`
        : `no ${kind}s are configured`;
  return `no ${kind} has id ${JSON.stringify(id)}; ${hint}`;
}

type Entries = [number, Record<string, unknown>][];

/** Unique-id and reference rules (docs/configuration.md) that no single field can check. */
export function crossCheck(raw: unknown): Problem[] {
  if (!isPlainObject(raw)) return [];
  const problems: Problem[] = [];
  const sources = entries(raw.sources);
  const destinations = entries(raw.destinations);
  const audiences = entries(raw.audiences);

  const sourceIds = uniqueValues(problems, 'sources', 'id', sources, 'source ids');
  const destinationIds = uniqueValues(problems, 'destinations', 'id', destinations, 'destination ids');
  uniqueValues(problems, 'audiences', 'name', audiences, 'audience names');
  uniqueWriteKeys(problems, sources);

  for (const [i, source] of sources) checkReferences(problems, ['sources', i, 'destinations'], source.destinations, 'destination', destinationIds);
  for (const [i, audience] of audiences) {
    checkReferences(problems, ['audiences', i, 'sources'], audience.sources, 'source', sourceIds);
    checkReferences(problems, ['audiences', i, 'destinations'], audience.destinations, 'destination', destinationIds);
  }
  uniqueTraitKeys(problems, audiences);
  const planIds = uniqueValues(problems, 'trackingPlans', 'id', entries(raw.trackingPlans), 'tracking plan ids');
  for (const [i, source] of sources) {
    const plan = isPlainObject(source.trackingPlan) ? source.trackingPlan.id : undefined;
    if (typeof plan === 'string' && plan !== '' && !planIds.includes(plan)) problems.push({ path: ['sources', i, 'trackingPlan', 'id'], message: missingReference('tracking plan', plan, planIds) });
  }

  const kafka = isPlainObject(raw.kafka) ? raw.kafka : {};
  const prefix = typeof kafka.topicPrefix === 'string' ? kafka.topicPrefix : DEFAULT_TOPIC_PREFIX;
  const delivery = isPlainObject(raw.delivery) ? raw.delivery : {};
  const tierNames = Array.isArray(delivery.retryTiers) ? strings(delivery.retryTiers) : DEFAULT_RETRY_TIERS.map((t, i): [number, string] => [i, t]);
  uniqueTierNames(problems, ['delivery', 'retryTiers'], tierNames);
  for (const [i, destination] of destinations) {
    const own = ownTierNames(destination);
    if (own !== undefined) uniqueTierNames(problems, ['destinations', i, 'settings', 'retry', 'tiers'], own);
  }
  checkTopicNames(problems, destinations, prefix, tierNames);
  return problems;
}

/** Each string `key` of `list` once; returns the values found. */
function uniqueValues(problems: Problem[], section: string, key: string, list: Entries, what: string): string[] {
  const seen = new Map<string, number>();
  for (const [i, item] of list) {
    const value = item[key];
    if (typeof value !== 'string') continue;
    const earlier = seen.get(value);
    if (earlier === undefined) seen.set(value, i);
    else problems.push({ path: [section, i, key], message: `${JSON.stringify(value)} is already used by ${section}[${earlier}]; ${what} must be unique` });
  }
  return [...seen.keys()];
}

/**
 * The gateway finds a call's source by its write key, so two sources cannot share one.
 * NOTE: the key itself is a secret and stays out of the message.
 */
function uniqueWriteKeys(problems: Problem[], sources: Entries): void {
  const writeKeys = new Map<string, number>();
  for (const [i, source] of sources) {
    if (typeof source.writeKey !== 'string') continue;
    const earlier = writeKeys.get(source.writeKey);
    if (earlier === undefined) writeKeys.set(source.writeKey, i);
    else problems.push({ path: ['sources', i, 'writeKey'], message: `the same write key is already used by sources[${earlier}]; every source needs its own write key` });
  }
}

/** A list of ids (at `path`) that each name a known `kind`, once. */
function checkReferences(problems: Problem[], path: IssuePath, list: unknown, kind: string, known: readonly string[]): void {
  const listed = new Set<string>();
  for (const [j, id] of strings(list)) {
    if (listed.has(id)) problems.push({ path: [...path, j], message: `${JSON.stringify(id)} is listed twice; remove one` });
    else if (!known.includes(id)) problems.push({ path: [...path, j], message: missingReference(kind, id, known) });
    listed.add(id);
  }
}

/**
 * Receivers see an audience as the trait snake_case(name), so those must differ too.
 * (An exact duplicate name is reported by uniqueValues.)
 */
function uniqueTraitKeys(problems: Problem[], audiences: Entries): void {
  const traitKeys = new Map<string, { index: number; name: string }>();
  for (const [i, audience] of audiences) {
    const name = audience.name;
    if (typeof name !== 'string' || name === '') continue;
    const key = snakeCase(name);
    const earlier = traitKeys.get(key);
    if (key === '') {
      problems.push({ path: ['audiences', i, 'name'], message: `${JSON.stringify(name)} gives an empty trait key; use letters or digits in the name` });
    } else if (earlier === undefined) {
      traitKeys.set(key, { index: i, name });
    } else if (earlier.name !== name) {
      problems.push({
        path: ['audiences', i, 'name'],
        message: `its trait key "${key}" is the same as that of audiences[${earlier.index}]; audience names must still differ after snake_case`,
      });
    }
  }
}

/** Tier names are part of topic names, so "10s" twice would be one topic for two tiers. */
function uniqueTierNames(problems: Problem[], path: IssuePath, tierNames: readonly [number, string][]): void {
  const tiersSeen = new Set<string>();
  for (const [i, name] of tierNames) {
    if (tiersSeen.has(name)) problems.push({ path: [...path, i], message: `tier ${JSON.stringify(name)} is listed twice; every tier needs its own name` });
    tiersSeen.add(name);
  }
}

/** The tier names a destination's `settings.retry.tiers` lists, when it lists them. */
function ownTierNames(destination: Record<string, unknown>): [number, string][] | undefined {
  const settings = isPlainObject(destination.settings) ? destination.settings : {};
  const retry = isPlainObject(settings.retry) ? settings.retry : {};
  return Array.isArray(retry.tiers) ? strings(retry.tiers) : undefined;
}

/**
 * The destinations' topic names: within Kafka's length limit, and apart from each other.
 * NOTE: Kafka refuses a topic whose name differs from an existing one only by "."
 * versus "_" (they collide in its metric names), so "hooks.main" and "hooks_main"
 * cannot both exist.
 */
function checkTopicNames(problems: Problem[], destinations: Entries, prefix: string, tierNames: readonly [number, string][]): void {
  const collisions = new Map<string, [number, string]>();
  const longestOf = (names: readonly [number, string][]) => Math.max(0, ...names.map(([, name]) => `.retry.${name}`.length));
  const longestDefault = longestOf(tierNames);
  for (const [i, destination] of destinations) {
    const own = ownTierNames(destination);
    const longestTier = own === undefined ? longestDefault : longestOf(own);
    const id = destination.id;
    if (typeof id !== 'string' || !TOPIC_NAME_PATTERN.test(id)) continue;
    const folded = id.replaceAll('.', '_');
    const other = collisions.get(folded);
    if (other !== undefined && other[1] !== id) {
      problems.push({
        path: ['destinations', i, 'id'],
        message: `${JSON.stringify(id)} and destinations[${other[0]}] (${JSON.stringify(other[1])}) would give Kafka topics that differ only by "." and "_", which Kafka refuses; rename one`,
      });
    } else if (other === undefined) {
      collisions.set(folded, [i, id]);
    }
    const length = `${prefix}deliveries.${id}`.length + Math.max(longestTier, '.dlq'.length);
    if (length > MAX_TOPIC_NAME_LENGTH) {
      problems.push({
        path: ['destinations', i, 'id'],
        message: `its longest Kafka topic name would be ${length} characters, over Kafka's limit of ${MAX_TOPIC_NAME_LENGTH}; shorten the id or kafka.topicPrefix`,
      });
    }
  }
}
