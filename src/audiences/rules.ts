// Audience rules (docs/configuration.md#audiences): the config's audiences compiled once per config
// version, and the evaluation of one rule against one profile at one instant.
import type { AudienceRule, Config, EventRule, TraitRule } from '../config/schema.js';
import { snakeCase } from '../config/snake-case.js';

export interface CompiledAudience {
  name: string;
  /** snake_case(name): the trait receivers see, the key of the membership in a profile, the metric label. */
  key: string;
  /** Sources whose calls feed the audience; the first one is named in the `source-id` header of its identifies. */
  sources: readonly string[];
  destinations: readonly string[];
  rule: AudienceRule;
  /** The audience as configured, to tell an edited audience from an unchanged one. */
  fingerprint: string;
}

/** What is kept of one event name that some rule counts. */
export interface EventSpec {
  /**
   * How many of the newest occurrences to keep with their time: the largest
   * `atLeast` among the rules that count the event `within` a window (0: none does).
   * "N times within W" holds exactly when the N-th newest occurrence is inside W,
   * so the newest N are all that such a rule needs.
   */
  keep: number;
  /** The distinct windows that rules count the event within, ascending. */
  windowsMs: readonly number[];
  /**
   * The resolution of the kept times. 1 ms (exact) while `keep` is small; a rule
   * with a large `atLeast` would keep that many times per user, so above
   * EXACT_KEEP_LIMIT times are bucketed to 1/60 of the smallest window, which bounds
   * what a user costs by 60 × (largest window / smallest window) buckets instead.
   */
  granularityMs: number;
}

/** Above this many kept times per event, times are bucketed (see EventSpec.granularityMs). */
export const EXACT_KEEP_LIMIT = 64;

export interface AudienceSet {
  audiences: readonly CompiledAudience[];
  /** Event names some rule counts. Only these are counted in profiles. */
  events: ReadonlyMap<string, EventSpec>;
  /** Enabled destinations' ids: the only ones that get identifies and delete bodies. */
  enabledDestinations: ReadonlySet<string>;
  /** Each source's connected destinations, in config order (for deletion requests). */
  sourceDestinations: ReadonlyMap<string, readonly string[]>;
}

export function compileAudiences(config: Pick<Config, 'audiences' | 'sources' | 'destinations'>): AudienceSet {
  const audiences: CompiledAudience[] = config.audiences.map((audience) => ({
    name: audience.name,
    key: snakeCase(audience.name),
    sources: [...audience.sources],
    destinations: [...audience.destinations],
    rule: audience.rule,
    fingerprint: JSON.stringify([audience.sources, audience.destinations, audience.rule]),
  }));

  const counted = new Map<string, { keep: number; windows: Set<number> }>();
  for (const audience of audiences) {
    forEachEventRule(audience.rule, (rule) => {
      const entry = counted.get(rule.event) ?? { keep: 0, windows: new Set<number>() };
      if (rule.withinMs !== undefined) {
        entry.keep = Math.max(entry.keep, rule.atLeast);
        entry.windows.add(rule.withinMs);
      }
      counted.set(rule.event, entry);
    });
  }
  const events = new Map<string, EventSpec>();
  for (const [event, { keep, windows }] of counted) {
    const windowsMs = [...windows].sort((a, b) => a - b);
    const smallest = windowsMs[0] ?? 0;
    const granularityMs = keep <= EXACT_KEEP_LIMIT ? 1 : Math.max(1, Math.floor(smallest / 60));
    events.set(event, { keep, windowsMs, granularityMs });
  }

  return {
    audiences,
    events,
    enabledDestinations: new Set(config.destinations.filter((d) => d.enabled).map((d) => d.id)),
    sourceDestinations: new Map(config.sources.map((s) => [s.id, [...s.destinations]])),
  };
}

function forEachEventRule(rule: AudienceRule, visit: (rule: EventRule) => void): void {
  if ('all' in rule) for (const inner of rule.all) forEachEventRule(inner, visit);
  else if ('any' in rule) for (const inner of rule.any) forEachEventRule(inner, visit);
  else if ('not' in rule) forEachEventRule(rule.not, visit);
  else if ('event' in rule) visit(rule);
}

/** What a rule reads from a profile, already narrowed to the audience's sources. */
export interface RuleInputs {
  /** The trait's current value; undefined when no call set it. */
  trait(name: string): unknown;
  /** How many times the event was performed: in all, or with a timestamp within the last `withinMs` before `nowMs`. */
  count(event: string, withinMs: number | undefined, nowMs: number): number;
}

/**
 * Whether the rule holds at `nowMs`.
 * - `equals` / `in`: strict equality with the trait's value (`"3"` is not `3`).
 * - `exists: true`: the trait is set to something other than null.
 * - `gt`/`gte`/`lt`/`lte`: the trait is a number and compares so; anything else (a
 *   numeric string included) does not match.
 * - `event`: performed at least `atLeast` times, within `withinMs` of now when given,
 *   judged on the events' own timestamps.
 */
export function evaluateRule(rule: AudienceRule, inputs: RuleInputs, nowMs: number): boolean {
  if ('all' in rule) return rule.all.every((inner) => evaluateRule(inner, inputs, nowMs));
  if ('any' in rule) return rule.any.some((inner) => evaluateRule(inner, inputs, nowMs));
  if ('not' in rule) return !evaluateRule(rule.not, inputs, nowMs);
  if ('event' in rule) return inputs.count(rule.event, rule.withinMs, nowMs) >= rule.atLeast;
  return traitMatches(rule, inputs.trait(rule.trait));
}

function traitMatches(rule: TraitRule, value: unknown): boolean {
  if (rule.exists !== undefined) return rule.exists === (value !== undefined && value !== null);
  if (rule.equals !== undefined) return value === rule.equals;
  if (rule.in !== undefined) return value !== undefined && rule.in.includes(value);
  if (typeof value !== 'number') return false;
  if (rule.gt !== undefined) return value > rule.gt;
  if (rule.gte !== undefined) return value >= rule.gte;
  if (rule.lt !== undefined) return value < rule.lt;
  if (rule.lte !== undefined) return value <= rule.lte;
  return false;
}
