// The config's sources and destinations, compiled once per config version into the
// lookups the router's hot path needs: source by id and by write key, each source's
// destinations with their topic and shaping (JSONata compiled here, once per config
// version), and track filters as sets.
import type { Config } from '../config/schema.js';
import { compileShaping } from '../shaping/index.js';
import type { Shaping } from '../shaping/index.js';
import { compilePlan } from '../tracking-plans/index.js';
import type { CompiledPlan, SourcePlan } from '../tracking-plans/index.js';
import type { TopicNames } from '../runtime/topics.js';

/** The destination's name in a call's `integrations` (the seed: "Webhooks"). */
export const WEBHOOKS_CATALOG_NAME = 'Webhooks';
/** A `type: kafka` destination's name in a call's `integrations`. */
export const KAFKA_CATALOG_NAME = 'Kafka';

export interface RouteTarget {
  id: string;
  enabled: boolean;
  /** `<prefix>deliveries.<id>` */
  topic: string;
  /** The key that addresses this destination in `integrations`. */
  catalogName: string;
  /** A `type: kafka` destination: its delivery records carry the call's `type` header. */
  kafka?: true;
  /** Its filter, sample, property lists and transform (docs/webhooks.md#shaping); absent when it has none. */
  shaping?: Shaping;
}

export type CompiledTrackFilter =
  | { kind: 'block'; events: ReadonlySet<string> }
  | { kind: 'allow'; events: ReadonlySet<string> };

export interface RoutingSource {
  id: string;
  /** The `source-id` header value, encoded once. */
  idHeader: Buffer;
  /** Connected destinations, in the order the source lists them. */
  destinations: RouteTarget[];
  trackFilter?: CompiledTrackFilter;
  /** The tracking plan its calls are checked against, and the mode (docs/tracking-plans.md). */
  trackingPlan?: SourcePlan;
}

export interface RoutingTable {
  /** The config this table was compiled from (compared by identity to spot reloads). */
  config: Config;
  sources: RoutingSource[];
  sourcesById: ReadonlyMap<string, RoutingSource>;
  sourcesByWriteKey: ReadonlyMap<string, RoutingSource>;
  destinationsById: ReadonlyMap<string, RouteTarget>;
}

export function compileRoutingTable(config: Config, names: TopicNames): RoutingTable {
  const destinationsById = new Map<string, RouteTarget>();
  for (const destination of config.destinations) {
    const target: RouteTarget = {
      id: destination.id,
      enabled: destination.enabled,
      topic: names.deliveries(destination.id),
      catalogName: destination.type === 'kafka' ? KAFKA_CATALOG_NAME : WEBHOOKS_CATALOG_NAME,
    };
    if (destination.type === 'kafka') target.kafka = true;
    const shaping = compileShaping(destination.settings);
    if (shaping !== undefined) target.shaping = shaping;
    destinationsById.set(destination.id, target);
  }
  // Only the plans some source names; each compiled once (its schemas are in the cache of the config's check).
  const plans = new Map<string, CompiledPlan>();
  const planOf = (id: string): CompiledPlan | undefined => {
    let plan = plans.get(id);
    const written = plan === undefined ? config.trackingPlans.find((p) => p.id === id) : undefined;
    if (written !== undefined) plans.set(id, (plan = compilePlan(written)));
    return plan;
  };
  const sources: RoutingSource[] = [];
  const sourcesById = new Map<string, RoutingSource>();
  const sourcesByWriteKey = new Map<string, RoutingSource>();
  for (const source of config.sources) {
    const compiled: RoutingSource = {
      id: source.id,
      idHeader: Buffer.from(source.id, 'utf8'),
      // The loader refuses references to unknown destinations; the filter only
      // keeps this function total for configs built by hand.
      destinations: source.destinations.flatMap((id) => {
        const target = destinationsById.get(id);
        return target ? [target] : [];
      }),
    };
    const filter = source.trackFilter;
    if (filter?.blockEvents) compiled.trackFilter = { kind: 'block', events: new Set(filter.blockEvents) };
    else if (filter?.allowEvents) compiled.trackFilter = { kind: 'allow', events: new Set(filter.allowEvents) };
    const plan = source.trackingPlan === undefined ? undefined : planOf(source.trackingPlan.id);
    if (plan !== undefined) compiled.trackingPlan = { plan, mode: source.trackingPlan!.mode };
    sources.push(compiled);
    sourcesById.set(source.id, compiled);
    if (source.writeKey !== undefined) sourcesByWriteKey.set(source.writeKey, compiled);
  }
  return { config, sources, sourcesById, sourcesByWriteKey, destinationsById };
}
