// A destination's settings turned, once per config, into what each delivery needs.
import { webhookLabel } from '../config/mask.js';
import type { AuthConfig, BatchConfig, KafkaTargetCluster, CircuitBreakerConfig, ClientTlsConfig, OAuth2Config, ProxyConfig, DestinationConfig, RateLimitConfig } from '../config/schema.js';
import { USER_AGENT } from '../version.js';
import type { FanOutTarget } from './fan-out.js';
import { createHash } from 'node:crypto';
import { webhookTarget } from './http-sender.js';
import type { ConnectionProfile, TlsOptions } from './http-sender.js';
import { createSigner } from './signing.js';
import type { Signer } from './signing.js';
import type { TokenSource, TokenSources } from './token-source.js';

export interface PreparedDestination {
  id: string;
  targets: FanOutTarget[];
  /** The URLs as they may be printed (dead-letter `error`, logs), by target index: `webhooks[1] https://hooks.example.com`. */
  printableUrls: string[];
  /** Adds the signature headers of an attempt; undefined without a secret. */
  sign?: Signer;
  rateLimit?: RateLimitConfig;
  /** Many events in one request (docs/webhooks.md#batches); undefined: one event per request. */
  batch?: BatchConfig;
  /** A user's next event waits for the one before (docs/webhooks.md#per-user-order). */
  ordered: boolean;
  /** The circuit breaker's thresholds set in the config (`delivery.circuitBreaker`, then the destination's own); the rest are the defaults. */
  circuitBreaker?: CircuitBreakerConfig;
  /** `settings.retry.stopOn`: statuses that dead-letter at once (classify.ts `stopOnStatus`); absent by default. */
  stopOn?: ReadonlySet<number>;
  /** `compression: gzip`: bodies are gzipped before they are signed (docs/webhooks.md#compression). */
  gzip?: boolean;
  /** `auth.oauth2`: where each request's bearer token comes from (docs/webhooks.md#authentication). */
  oauth2?: TokenSource;
  /** `type: kafka`: the topic its events are written to, and how (kafka-sender.ts); it has no URLs then. */
  kafka?: KafkaTarget;
}

/** A `type: kafka` destination's target (docs/kafka.md#a-topic-as-a-destination). */
export interface KafkaTarget {
  topic: string;
  key: 'userId' | 'messageId' | 'none';
  value: 'body' | 'call';
  /** Static record headers, as bytes (made once). */
  headers: Record<string, Buffer>;
  /** Another cluster (`settings.cluster`); undefined: Switchyard's own. */
  cluster?: KafkaTargetCluster;
  /** What the attempt history names it by, in place of a URL's origin: `kafka:<topic>`. */
  origin: string;
}

/** The Authorization header of `auth.basic` and `auth.bearer`, the same on every request; undefined for oauth2 (per request) and without auth. */
function staticAuthorization(auth: AuthConfig | undefined): string | undefined {
  if (auth === undefined) return undefined;
  if ('basic' in auth) return `Basic ${Buffer.from(`${auth.basic.username}:${auth.basic.password}`, 'utf8').toString('base64')}`;
  if ('bearer' in auth) return `Bearer ${auth.bearer.token}`;
  return undefined;
}

/**
 * Headers, in this order (docs/webhooks.md): Content-Type, User-Agent, the entry's static
 * headers; the signature headers (signing.ts) and traceparent are added per attempt.
 * A URL with user:password also gets the Basic `Authorization` it stands for (undici
 * does not derive it), unless the entry sets Authorization itself; `auth.basic` and
 * `auth.bearer` set it for every URL (the config refuses a static one beside them).
 * `tokens`: the deliverer's token sources, for `auth.oauth2` (kept across reloads).
 */
export function prepareDestination(
  destination: DestinationConfig,
  tokens?: TokenSources,
  deliveryProxy?: ProxyConfig,
  defaults: { circuitBreaker?: CircuitBreakerConfig } = {},
): PreparedDestination {
  if (destination.type === 'kafka') return prepareKafkaDestination(destination);
  const { auth } = destination.settings;
  const authorization = staticAuthorization(auth);
  const connection = connectionProfile(destination.settings.tls, destination.settings.proxy ?? deliveryProxy);
  const targets = destination.settings.webhooks.map((hook): FanOutTarget => {
    const headers: Record<string, string> = {
      'content-type': destination.settings.batch?.format === 'ndjson' ? 'application/x-ndjson' : 'application/json',
      'user-agent': USER_AGENT,
      ...hook.headers,
    };
    if (destination.settings.compression === 'gzip') headers['content-encoding'] = 'gzip';
    const url = new URL(hook.url);
    const hasAuthorization = Object.keys(hook.headers).some((name) => name.toLowerCase() === 'authorization');
    if ((url.username !== '' || url.password !== '') && !hasAuthorization) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.authorization = `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;
    }
    if (authorization !== undefined) headers.authorization = authorization;
    return { target: webhookTarget(hook.url, connection), headers };
  });
  // NOTE: only the origin and the index: user info, path and query may hold a token
  // (docs/webhooks.md#reading-dead-letters).
  const printableUrls = destination.settings.webhooks.map((hook, i) => webhookLabel(i, hook.url));
  const { sharedSecret, sharedSecrets, signing, signature, rateLimit, batch, ordering } = destination.settings;
  const sign = createSigner({ signing, signature, secrets: sharedSecrets ?? (sharedSecret === undefined ? [] : [sharedSecret]) });
  const circuitBreaker = { ...defaults.circuitBreaker, ...destination.settings.circuitBreaker };
  const stopOn = destination.settings.retry?.stopOn;
  return {
    id: destination.id,
    targets,
    printableUrls,
    ordered: ordering === 'user',
    gzip: destination.settings.compression === 'gzip',
    ...(stopOn === undefined || stopOn.length === 0 ? {} : { stopOn: new Set(stopOn) }),
    ...(sign === undefined ? {} : { sign }),
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(batch === undefined ? {} : { batch }),
    ...(auth !== undefined && 'oauth2' in auth ? { oauth2: tokenSourceOf(destination.id, auth.oauth2, tokens, connection) } : {}),
    ...(Object.keys(circuitBreaker).length === 0 ? {} : { circuitBreaker }),
  };
}

/** A `type: kafka` destination: no URLs, no signing; its topic and record shape, and the lane's modes. */
function prepareKafkaDestination(destination: DestinationConfig): PreparedDestination {
  const { topic = '', key = 'userId', value = 'body', headers = {}, cluster, batch, ordering } = destination.settings;
  const kafka: KafkaTarget = {
    topic,
    key,
    value,
    headers: Object.fromEntries(Object.entries(headers).map(([name, text]) => [name, Buffer.from(text, 'utf8')])),
    origin: `kafka:${topic}`,
  };
  if (cluster !== undefined) kafka.cluster = cluster;
  const stopOn = destination.settings.retry?.stopOn;
  return {
    id: destination.id,
    targets: [],
    // NOTE: what a dead letter's `error` names the target by (`topic <name>: <reason>`).
    printableUrls: [`topic ${topic}`],
    ordered: ordering === 'user',
    kafka,
    ...(stopOn === undefined || stopOn.length === 0 ? {} : { stopOn: new Set(stopOn) }),
    ...(batch === undefined ? {} : { batch }),
  };
}

/**
 * The connection options of `settings.tls` (the PEM text the loader read) and of the
 * egress proxy (`settings.proxy`, else `delivery.proxy`), or undefined: the shared pool.
 */
export function connectionProfile(tls: ClientTlsConfig | undefined, proxy?: ProxyConfig): ConnectionProfile | undefined {
  if (tls === undefined && proxy === undefined) return undefined;
  const { material = {} } = tls ?? {};
  const options: TlsOptions = {};
  if (material.cert !== undefined) options.cert = material.cert;
  if (material.key !== undefined) options.key = material.key;
  if (material.ca !== undefined) options.ca = material.ca;
  if (tls?.serverName !== undefined) options.servername = tls.serverName;
  if (tls?.minVersion !== undefined) options.minVersion = tls.minVersion;
  const profile: ConnectionProfile = { key: '', tls: options };
  if (proxy !== undefined) profile.proxy = { url: proxy.url, noProxy: proxy.noProxy };
  // NOTE: a digest, not the text: the key names a pool in the sender and may be logged by mistake.
  profile.key = createHash('sha256').update(JSON.stringify([options, profile.proxy ?? null])).digest('hex');
  return profile;
}

function tokenSourceOf(id: string, config: OAuth2Config, tokens: TokenSources | undefined, connection: ConnectionProfile | undefined): TokenSource {
  // Sending without the token would be worse than not sending: reaching here is a bug.
  if (tokens === undefined) throw new Error(`destination ${id} has auth.oauth2 but its settings were prepared without token sources`);
  return tokens.of(id, config, connection);
}
