// A tracking plan of the config (docs/tracking-plans.md) with its schemas compiled: what
// the router checks each call of a source against. Compiled once per config version.
import { compileSchema } from './plan-schemas.js';
import type { JsonSchema, SchemaValidator } from './plan-schemas.js';

export type UnplannedEvents = 'allow' | 'violate';
export type TrackingPlanMode = 'observe' | 'omit' | 'block';

/** `trackingPlans[]` as the config holds it: schemas as written. */
export interface TrackingPlanConfig {
  id: string;
  /** The file the plan's other keys were read from, as written (relative to the config file). */
  file?: string;
  /** Per track event name: the schema of its `properties`. */
  events: Record<string, JsonSchema>;
  /** Schema of an identify's `traits`. */
  identify?: JsonSchema;
  /** Schema of a group's `traits`. */
  group?: JsonSchema;
  /** Schema of a page's `properties`. */
  page?: JsonSchema;
  /** Schema of a screen's `properties`. */
  screen?: JsonSchema;
  /** Schema of every call's `context`. */
  common?: JsonSchema;
  unplannedEvents: UnplannedEvents;
}

/** `sources[].trackingPlan`. */
export interface SourcePlanConfig {
  id: string;
  mode: TrackingPlanMode;
}

/** The parts of a plan that take a schema, besides `events`. */
export const PLAN_PARTS = ['identify', 'group', 'page', 'screen', 'common'] as const;
export type PlanPart = (typeof PLAN_PARTS)[number];

export interface CompiledPlan {
  id: string;
  events: ReadonlyMap<string, SchemaValidator>;
  parts: Partial<Record<PlanPart, SchemaValidator>>;
  unplannedEvents: UnplannedEvents;
}

/** A source's plan and the mode it is applied in. */
export interface SourcePlan {
  plan: CompiledPlan;
  mode: TrackingPlanMode;
}

/**
 * The plan compiled. The config's loader has compiled every schema already (and refused
 * a file with one that does not), so this one finds them in the cache; a plan built by
 * hand with a bad schema throws.
 */
export function compilePlan(config: TrackingPlanConfig): CompiledPlan {
  const events = new Map<string, SchemaValidator>();
  for (const [name, schema] of Object.entries(config.events)) events.set(name, validatorOf(schema, `events[${JSON.stringify(name)}]`, config.id));
  const parts: Partial<Record<PlanPart, SchemaValidator>> = {};
  for (const part of PLAN_PARTS) {
    const schema = config[part];
    if (schema !== undefined) parts[part] = validatorOf(schema, part, config.id);
  }
  return { id: config.id, events, parts, unplannedEvents: config.unplannedEvents };
}

function validatorOf(schema: JsonSchema, where: string, planId: string): SchemaValidator {
  const result = compileSchema(schema);
  if (!result.ok) throw new TypeError(`tracking plan ${JSON.stringify(planId)}: ${where} ${result.error}`);
  return result.validate;
}
