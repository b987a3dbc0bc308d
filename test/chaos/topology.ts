// What the chaos run sets up and what it therefore expects: the receivers and how each
// misbehaves, the destinations they serve, the sources, and the routing oracle — the
// harness's own reading of docs/configuration.md#routing, written apart from src/router so that a routing
// bug shows up as a difference instead of being copied into the expectation.

/** How a receiver answers. */
export type ReceiverBehaviour =
  /** 200, after a delay of up to `maxDelayMs` (well within the delivery timeout). */
  | { kind: 'ok'; maxDelayMs: number }
  /** A `share` of the requests fail in one of the hostile ways of receivers.ts; the rest get 200. */
  | { kind: 'failing'; share: number }
  /** `share503` of the requests get a 503, `slowShare` a 200 only after the delivery timeout; the rest 200 at once. */
  | { kind: 'unsteady'; share503: number; slowShare: number }
  /** Always a 302 to another path: never followed, so a permanent failure. */
  | { kind: 'redirect' }
  /** Reads the request and never answers. */
  | { kind: 'blackhole' };

export interface ReceiverSpec {
  name: string;
  behaviour: ReceiverBehaviour;
}

export interface DestinationSpec {
  id: string;
  enabled: boolean;
  /** Receiver names, one webhook URL each (1 to 5). */
  receivers: string[];
  sharedSecret?: string;
  /** `settings.batch` (docs/webhooks.md#batches), as written in the config. */
  batch?: { maxEvents: number; maxBytes: string; maxWait: string };
  /** `settings.ordering` (docs/webhooks.md#per-user-order). */
  ordering?: 'user';
  /** `settings.circuitBreaker` (docs/webhooks.md#circuit-breaker), as written in the config. */
  circuitBreaker?: { minAttempts?: number; unanswered?: number };
}

export interface SourceSpec {
  id: string;
  /** Calls of sources with a write key go through the gateway; the others straight to `calls`. */
  writeKey?: string;
  destinations: string[];
  blockEvents?: string[];
  /** Share of the load's calls that come from this source. */
  share: number;
}

export interface Topology {
  receivers: ReceiverSpec[];
  destinations: DestinationSpec[];
  sources: SourceSpec[];
  /** The source fuzzed inputs are attributed to (header or write key). */
  fuzzSource: SourceSpec;
}

/** The `integrations` key of every webhook destination (the seed's catalog name). */
export const CATALOG_NAME = 'Webhooks';
export const BLOCKED_EVENT = 'Debug Ping';

/** The destinations of the base topology (below); a profile with more adds `fleet-NN` ones. */
export const BASE_DESTINATIONS = 9;
/** Fleet destinations per fleet source: each fleet call reaches this many. */
const FLEET_PER_SOURCE = 5;
/** Share of the load's calls from fleet sources, when there are any. */
const FLEET_SHARE = 0.08;

/**
 * Nine destinations, one per kind of receiver trouble or delivery mode:
 * - `steady`: a good receiver (and the target of receiver outages);
 * - `flaky`: a receiver failing `failingShare` of requests (5xx, hangs, resets, slow,
 *   enormous and endless bodies, redirects);
 * - `unsteady`: 503 to 15 % of requests, 5 % answered only after the delivery timeout
 *   (issue 13's flaky destination: its slow requests hold its oldest offset back);
 * - `fanout`: three URLs (a redirect, a half-failing one, a good one): any 2xx delivers;
 * - `bounce`: only a redirect, so everything it gets is dead-lettered at once;
 * - `blackhole`: never answers, so everything it gets is dead-lettered at the window's end
 *   (its circuit breaker never opens: an open one would keep its events waiting in its
 *   topic, docs/webhooks.md#circuit-breaker, which the receiver outages check instead);
 * - `off`: disabled, so it must never get anything;
 * - `batched`: batches of up to 50 events (`settings.batch`) to an unsteady receiver
 *   (a 503 or a timeout fails the whole batch);
 * - `ordered`: `ordering: user` to an unsteady receiver: the report checks that no
 *   event of a user was delivered before an earlier one (user-order.ts).
 * With `destinations` above nine, the rest are `fleet-NN` destinations with good
 * receivers (many destinations in one deliverer), fed by `fleet-N` sources of up to
 * five destinations each, which send 8 % of the calls.
 */
export function chaosTopology(options: { failingShare: number; destinations?: number }): Topology {
  const fleetSize = (options.destinations ?? BASE_DESTINATIONS) - BASE_DESTINATIONS;
  if (fleetSize < 0) throw new Error(`chaos topology: at least ${BASE_DESTINATIONS} destinations, got ${options.destinations}`);
  const fleet = Array.from({ length: fleetSize }, (_, i) => `fleet-${String(i).padStart(2, '0')}`);
  const fleetSources: SourceSpec[] = [];
  for (let start = 0; start < fleet.length; start += FLEET_PER_SOURCE) {
    fleetSources.push({ id: `fleet-${fleetSources.length}`, destinations: fleet.slice(start, start + FLEET_PER_SOURCE), share: 0 });
  }
  for (const source of fleetSources) source.share = FLEET_SHARE / fleetSources.length;
  // The other sources keep their proportions in what is left.
  const rest = fleetSources.length === 0 ? 1 : 1 - FLEET_SHARE;
  const fuzzSource: SourceSpec = {
    id: 'fuzz',
    writeKey: 'fuzz-write-key',
    destinations: ['steady', 'off'],
    blockEvents: [BLOCKED_EVENT],
    share: 0,
  };
  return {
    receivers: [
      { name: 'steady', behaviour: { kind: 'ok', maxDelayMs: 20 } },
      { name: 'flaky', behaviour: { kind: 'failing', share: options.failingShare } },
      { name: 'fanout-redirect', behaviour: { kind: 'redirect' } },
      { name: 'fanout-failing', behaviour: { kind: 'failing', share: 0.5 } },
      { name: 'fanout-ok', behaviour: { kind: 'ok', maxDelayMs: 200 } },
      { name: 'bounce', behaviour: { kind: 'redirect' } },
      { name: 'blackhole', behaviour: { kind: 'blackhole' } },
      { name: 'off', behaviour: { kind: 'ok', maxDelayMs: 0 } },
      { name: 'unsteady', behaviour: { kind: 'unsteady', share503: 0.15, slowShare: 0.05 } },
      { name: 'batched', behaviour: { kind: 'unsteady', share503: 0.1, slowShare: 0.02 } },
      { name: 'ordered', behaviour: { kind: 'unsteady', share503: 0.1, slowShare: 0.02 } },
      ...fleet.map((id): ReceiverSpec => ({ name: id, behaviour: { kind: 'ok', maxDelayMs: 20 } })),
    ],
    destinations: [
      { id: 'steady', enabled: true, receivers: ['steady'], sharedSecret: 'chaos-steady-secret' },
      { id: 'flaky', enabled: true, receivers: ['flaky'] },
      { id: 'fanout', enabled: true, receivers: ['fanout-redirect', 'fanout-failing', 'fanout-ok'], sharedSecret: 'chaos-fanout-secret' },
      { id: 'bounce', enabled: true, receivers: ['bounce'] },
      { id: 'blackhole', enabled: true, receivers: ['blackhole'], circuitBreaker: { minAttempts: 1_000_000, unanswered: 1_000_000 } },
      { id: 'off', enabled: false, receivers: ['off'] },
      { id: 'unsteady', enabled: true, receivers: ['unsteady'] },
      { id: 'batched', enabled: true, receivers: ['batched'], sharedSecret: 'chaos-batched-secret', batch: { maxEvents: 50, maxBytes: '256KB', maxWait: '200ms' } },
      { id: 'ordered', enabled: true, receivers: ['ordered'], ordering: 'user' },
      ...fleet.map((id): DestinationSpec => ({ id, enabled: true, receivers: [id] })),
    ],
    sources: [
      { id: 'web', writeKey: 'web-write-key', destinations: ['steady', 'flaky', 'off'], blockEvents: [BLOCKED_EVENT], share: 0.4 * rest },
      { id: 'mobile', writeKey: 'mobile-write-key', destinations: ['fanout', 'bounce'], share: 0.22 * rest },
      { id: 'server', destinations: ['steady', 'flaky', 'unsteady'], share: 0.3 * rest },
      // NOTE: below a share of 0.1, so deletions do not name it (deletions.ts): a batch request
      // carries no traceparent, by which the harness knows a delete body.
      { id: 'warehouse', destinations: ['batched', 'ordered'], share: 0.06 * rest },
      // Few calls: each one holds a concurrency permit for a whole timeout per attempt.
      { id: 'legacy', destinations: ['blackhole'], share: 0.02 * rest },
      ...fleetSources,
      fuzzSource,
    ],
    fuzzSource,
  };
}

export interface ClusterSettings {
  brokers: string;
  clientId: string;
  topicPrefix: string;
  partitions: number;
  gatewayPort: number;
  adminPort: number;
  /** Webhook URL of each receiver. */
  receiverUrls: ReadonlyMap<string, string>;
  delivery: { timeout: string; retryTiers: string[]; maxRetryWindow: string; concurrencyPerDestination: number };
}

/** The switchyard config (YAML shape) of one role process. */
export function chaosConfig(topology: Topology, settings: ClusterSettings): Record<string, unknown> {
  const url = (receiver: string): string => {
    const found = settings.receiverUrls.get(receiver);
    if (found === undefined) throw new Error(`chaos topology: no receiver named ${receiver}`);
    return found;
  };
  return {
    kafka: {
      brokers: [settings.brokers],
      clientId: settings.clientId,
      topicPrefix: settings.topicPrefix,
      partitions: settings.partitions,
      replicationFactor: 1,
    },
    gateway: { host: '127.0.0.1', port: settings.gatewayPort },
    admin: { host: '127.0.0.1', port: settings.adminPort },
    delivery: settings.delivery,
    shutdownTimeout: '20s',
    log: { level: 'info' },
    sources: topology.sources.map((source) => ({
      id: source.id,
      ...(source.writeKey === undefined ? {} : { writeKey: source.writeKey }),
      destinations: source.destinations,
      ...(source.blockEvents === undefined ? {} : { trackFilter: { blockEvents: source.blockEvents } }),
    })),
    destinations: topology.destinations.map((destination) => ({
      id: destination.id,
      type: 'webhooks',
      enabled: destination.enabled,
      settings: {
        webhooks: destination.receivers.map((receiver) => ({ url: url(receiver), headers: { 'X-Chaos-Receiver': receiver } })),
        ...(destination.sharedSecret === undefined ? {} : { sharedSecret: destination.sharedSecret }),
        ...(destination.batch === undefined ? {} : { batch: destination.batch }),
        ...(destination.ordering === undefined ? {} : { ordering: destination.ordering }),
        ...(destination.circuitBreaker === undefined ? {} : { circuitBreaker: destination.circuitBreaker }),
      },
    })),
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Whether a call's `integrations` lets it reach a webhook destination (docs/configuration.md#routing, rule 2):
 * `Webhooks: true` or an object → on, `false` → off, otherwise off when `All` is false.
 */
export function integrationsLetThrough(integrations: unknown): boolean {
  if (!isPlainObject(integrations)) return true;
  const own = Object.hasOwn(integrations, CATALOG_NAME) ? integrations[CATALOG_NAME] : undefined;
  if (own === true || isPlainObject(own)) return true;
  if (own === false) return false;
  return !(Object.hasOwn(integrations, 'All') && integrations.All === false);
}

/**
 * The destinations a valid call from `source` must reach (docs/configuration.md#routing): enabled ones,
 * when `integrations` lets it through and the source's track filter does not block it.
 */
export function expectedDestinations(
  topology: Topology,
  source: SourceSpec,
  call: { type?: unknown; event?: unknown; integrations?: unknown },
): string[] {
  if (!integrationsLetThrough(call.integrations)) return [];
  if (call.type === 'track' && typeof call.event === 'string' && source.blockEvents?.includes(call.event)) return [];
  return source.destinations.filter((id) => topology.destinations.find((d) => d.id === id)?.enabled === true);
}

/** Which source a record on `calls` belongs to (docs/kafka.md): the `source-id` header, else the body's `writeKey`. */
export function sourceOfRecord(topology: Topology, headerSourceId: string | undefined, writeKey: unknown): SourceSpec | undefined {
  if (headerSourceId !== undefined && headerSourceId !== '') return topology.sources.find((s) => s.id === headerSourceId);
  if (typeof writeKey === 'string' && writeKey !== '') return topology.sources.find((s) => s.writeKey === writeKey);
  return undefined;
}
