// A destination's settings turned, once per config, into what each delivery needs.
import { webhookLabel } from '../config/mask.js';
import type { BatchConfig, CircuitBreakerConfig, DestinationConfig, RateLimitConfig } from '../config/schema.js';
import { USER_AGENT } from '../version.js';
import type { FanOutTarget } from './fan-out.js';
import { webhookTarget } from './http-sender.js';
import { createSigner } from './signing.js';
import type { Signer } from './signing.js';

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
}

/**
 * Headers, in this order (docs/webhooks.md): Content-Type, User-Agent, the entry's static
 * headers; the signature headers (signing.ts) and traceparent are added per attempt.
 * A URL with user:password also gets the Basic `Authorization` it stands for (undici
 * does not derive it), unless the entry sets Authorization itself.
 */
export function prepareDestination(destination: DestinationConfig, defaults: { circuitBreaker?: CircuitBreakerConfig } = {}): PreparedDestination {
  const targets = destination.settings.webhooks.map((hook): FanOutTarget => {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      ...hook.headers,
    };
    const url = new URL(hook.url);
    const hasAuthorization = Object.keys(hook.headers).some((name) => name.toLowerCase() === 'authorization');
    if ((url.username !== '' || url.password !== '') && !hasAuthorization) {
      const credentials = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
      headers.authorization = `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`;
    }
    return { target: webhookTarget(hook.url), headers };
  });
  // NOTE: only the origin and the index: user info, path and query may hold a token
  // (docs/webhooks.md#reading-dead-letters).
  const printableUrls = destination.settings.webhooks.map((hook, i) => webhookLabel(i, hook.url));
  const { sharedSecret, sharedSecrets, signing, rateLimit, batch, ordering } = destination.settings;
  const sign = createSigner(signing, sharedSecrets ?? (sharedSecret === undefined ? [] : [sharedSecret]));
  const circuitBreaker = { ...defaults.circuitBreaker, ...destination.settings.circuitBreaker };
  const stopOn = destination.settings.retry?.stopOn;
  return {
    id: destination.id,
    targets,
    printableUrls,
    ordered: ordering === 'user',
    ...(stopOn === undefined || stopOn.length === 0 ? {} : { stopOn: new Set(stopOn) }),
    ...(sign === undefined ? {} : { sign }),
    ...(rateLimit === undefined ? {} : { rateLimit }),
    ...(batch === undefined ? {} : { batch }),
    ...(Object.keys(circuitBreaker).length === 0 ? {} : { circuitBreaker }),
  };
}
