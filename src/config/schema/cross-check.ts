// Rules across the file (docs/configuration.md): unique ids, references, topic names. They
// read the raw document and skip whatever is not of the expected shape: the schema already
// reports that. They run apart from zod, which skips refinements once any field below
// them is invalid: every problem in the file should be reported at once.

import { snakeCase } from '../snake-case.js';
import { isPlainObject } from './check.js';
import type { IssuePath, Problem } from './check.js';
import { DEFAULT_TOPIC_PREFIX, TOPIC_NAME_PATTERN } from './kafka.js';
import { DEFAULT_RETRY_TIERS } from './retry.js';
import { closest } from './unknown-keys.js';

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
