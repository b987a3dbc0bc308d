// A user's profile as audiences see it: which sources have seen the user, the
// traits and counted events each audience-feeding source reported, and the user's
// audience memberships. Pure data and maths; the changelog format is at the end.
import type { AudienceSet, EventSpec, RuleInputs } from './rules.js';

/** How often one source reported one counted event. */
export interface EventCounter {
  event: string;
  source: string;
  total: number;
  /**
   * The newest occurrence times, ascending, as pairs `[time, count, time, count, …]`
   * (times rounded down to the event's granularity); enough of them to hold the
   * event's `keep` occurrences, none older than its largest window. Undefined when
   * no rule counts the event within a window.
   */
  recent: number[] | undefined;
}

/** The traits one source set: flat triples `[name, value, timestampMs, …]`. */
export interface SourceTraits {
  source: string;
  entries: unknown[];
}

/**
 * NOTE: flat arrays of small same-shaped objects rather than Maps: a profile holds a
 * handful of sources, traits, events and memberships, where a linear scan is as fast
 * as a hash lookup, and a Map costs a few hundred bytes of heap even when nearly empty:
 * profiles in Maps took several times the memory (bench/audiences.ts; figures:
 * docs/benchmarks.md#figures-behind-the-code).
 */
export interface Profile {
  /** `u:<userId>` or `a:<anonymousId>`: a userId and an anonymousId that happen to be equal stay apart. */
  key: string;
  /**
   * The audience-events offset of the record that created the profile. It is part of
   * every identify's messageId, so a user erased and seen again does not repeat the
   * ids receivers have already seen.
   */
  born: number;
  /** The audience-events offset of the last record applied; replayed records at or below it are skipped. */
  applied: number;
  /** Every source that sent a call for this identity, in first-seen order (affected sources of a deletion). */
  seen: string[];
  /** Traits per source (every source: an audience added later may read any). */
  traits: SourceTraits[] | undefined;
  /** Counters per event and source; only for events some rule counts. */
  events: EventCounter[] | undefined;
  /**
   * Flat pairs `[audience key, changes, …]`: the number of membership changes
   * announced, odd meaning member. A user who never entered has no entry. The count
   * is in the messageId of each change.
   */
  members: (string | number)[] | undefined;
  /** When the passing of time alone may change a membership (an occurrence leaves a window); Infinity if never. */
  wakeAt: number;
}

export interface Identity {
  userId?: string;
  anonymousId?: string;
}

export function profileKey(userId: string | undefined, anonymousId: string | undefined): string {
  if (userId !== undefined) return `u:${userId}`;
  if (anonymousId !== undefined) return `a:${anonymousId}`;
  throw new TypeError('profileKey: needs a userId or an anonymousId');
}

export function identityOf(key: string): Identity {
  return key.startsWith('u:') ? { userId: key.slice(2) } : { anonymousId: key.slice(2) };
}

/** The Kafka key of a user's deliveries: userId, else anonymousId (docs/kafka.md). */
export function deliveryKey(key: string): string {
  return key.slice(2);
}

export function newProfile(key: string, born: number): Profile {
  return { key, born, applied: -1, seen: [], traits: undefined, events: undefined, members: undefined, wakeAt: Infinity };
}

export function isMember(changes: number | undefined): boolean {
  return changes !== undefined && changes % 2 === 1;
}

/** The count of announced changes for the audience; undefined: never entered. */
export function membershipOf(profile: Profile, audienceKey: string): number | undefined {
  const members = profile.members;
  if (members === undefined) return undefined;
  for (let i = 0; i < members.length; i += 2) if (members[i] === audienceKey) return members[i + 1] as number;
  return undefined;
}

export function setMembership(profile: Profile, audienceKey: string, changes: number): void {
  const members = (profile.members ??= []);
  for (let i = 0; i < members.length; i += 2) {
    if (members[i] === audienceKey) {
      members[i + 1] = changes;
      return;
    }
  }
  members.push(audienceKey, changes);
}

/** Every membership entry as `[audience key, changes]`. */
export function memberships(profile: Profile): [string, number][] {
  const out: [string, number][] = [];
  const members = profile.members ?? [];
  for (let i = 0; i < members.length; i += 2) out.push([members[i] as string, members[i + 1] as number]);
  return out;
}

/** Removes the entries of audiences `keep` rejects; returns them. */
export function dropMemberships(profile: Profile, keep: (audienceKey: string) => boolean): [string, number][] {
  const members = profile.members;
  if (members === undefined) return [];
  const dropped: [string, number][] = [];
  for (let i = members.length - 2; i >= 0; i -= 2) {
    const key = members[i] as string;
    if (!keep(key)) {
      dropped.push([key, members[i + 1] as number]);
      members.splice(i, 2);
    }
  }
  if (members.length === 0) profile.members = undefined;
  return dropped;
}

function traitsOf(profile: Profile, source: string): SourceTraits | undefined {
  for (const own of profile.traits ?? []) if (own.source === source) return own;
  return undefined;
}

/** The index of the trait's name in a source's flat triples, or -1. */
function traitIndex(entries: readonly unknown[], name: string): number {
  for (let i = 0; i < entries.length; i += 3) if (entries[i] === name) return i;
  return -1;
}

function counterOf(profile: Profile, event: string, source: string): EventCounter | undefined {
  for (const counter of profile.events ?? []) if (counter.event === event && counter.source === source) return counter;
  return undefined;
}

/** What an audience record says about a call. */
export interface CallFacts {
  type: string;
  sourceId: string;
  /** The call's own timestamp, else when it was received. */
  timestampMs: number;
  traits?: Record<string, unknown>;
  event?: string;
}

/**
 * Applies one call to the profile. Returns whether anything that is persisted
 * changed: a call that changed nothing needs no changelog write, because applying it
 * again after a crash changes nothing either.
 *
 * NOTE: trait updates are last-writer-wins by the calls' timestamps, not by arrival
 * order: calls produced with arbitrary keys reach audiences through different
 * `calls` partitions, in no particular order. Event counts are order-free anyway.
 */
export function applyCall(profile: Profile, facts: CallFacts, set: AudienceSet): boolean {
  let changed = false;
  if (!profile.seen.includes(facts.sourceId)) {
    profile.seen.push(facts.sourceId);
    changed = true;
  }

  if (facts.type === 'identify' && facts.traits !== undefined) {
    let own = traitsOf(profile, facts.sourceId);
    for (const name of Object.keys(facts.traits)) {
      const value = facts.traits[name];
      if (own === undefined) {
        own = { source: facts.sourceId, entries: [] };
        (profile.traits ??= []).push(own);
      }
      const i = traitIndex(own.entries, name);
      if (i < 0) {
        own.entries.push(name, value, facts.timestampMs);
        changed = true;
        continue;
      }
      const at = own.entries[i + 2] as number;
      if (at > facts.timestampMs || (at === facts.timestampMs && sameValue(own.entries[i + 1], value))) continue;
      own.entries[i + 1] = value;
      own.entries[i + 2] = facts.timestampMs;
      changed = true;
    }
  }

  if (facts.type === 'track' && facts.event !== undefined) {
    const spec = set.events.get(facts.event);
    if (spec !== undefined) {
      let counter = counterOf(profile, facts.event, facts.sourceId);
      if (counter === undefined) {
        counter = { event: facts.event, source: facts.sourceId, total: 0, recent: undefined };
        (profile.events ??= []).push(counter);
      }
      counter.total += 1;
      if (spec.keep > 0) counter.recent = recordOccurrence(counter.recent, facts.timestampMs, spec);
      changed = true;
    }
  }
  return changed;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Adds one occurrence at `timestampMs` to the kept times and drops the oldest that `spec.keep` no longer needs. */
export function recordOccurrence(recent: number[] | undefined, timestampMs: number, spec: EventSpec): number[] {
  const g = spec.granularityMs;
  const at = g === 1 ? timestampMs : Math.floor(timestampMs / g) * g;
  const pairs = recent ?? [];
  // Occurrences mostly arrive newest last: search from the end.
  let i = pairs.length - 2;
  while (i >= 0 && (pairs[i] ?? 0) > at) i -= 2;
  if (i >= 0 && pairs[i] === at) pairs[i + 1] = (pairs[i + 1] ?? 0) + 1;
  else pairs.splice(i + 2, 0, at, 1);
  let held = 0;
  for (let j = 1; j < pairs.length; j += 2) held += pairs[j] ?? 0;
  while (pairs.length > 2 && held - (pairs[1] ?? 0) >= spec.keep) {
    held -= pairs[1] ?? 0;
    pairs.splice(0, 2);
  }
  return pairs;
}

/**
 * Occurrences within `withinMs` before `nowMs` (and any later ones). A bucket counts
 * while any part of it is inside the window, so with bucketed times an occurrence
 * may count up to one granularity longer than its window.
 */
export function countRecent(recent: readonly number[] | undefined, granularityMs: number, withinMs: number, nowMs: number): number {
  if (recent === undefined) return 0;
  const from = nowMs - withinMs;
  let n = 0;
  for (let i = recent.length - 2; i >= 0; i -= 2) {
    if ((recent[i] ?? 0) + granularityMs <= from) break;
    n += recent[i + 1] ?? 0;
  }
  return n;
}

/** The profile as the rules of an audience fed by `sources` see it. */
export function ruleInputs(profile: Profile, sources: readonly string[], set: AudienceSet): RuleInputs {
  return {
    trait(name) {
      // The most recently set value among the audience's sources; on a tie the source listed first.
      let best: unknown;
      let bestAt = -Infinity;
      for (const source of sources) {
        const own = traitsOf(profile, source);
        if (own === undefined) continue;
        const i = traitIndex(own.entries, name);
        if (i >= 0 && (own.entries[i + 2] as number) > bestAt) {
          best = own.entries[i + 1];
          bestAt = own.entries[i + 2] as number;
        }
      }
      return best;
    },
    count(event, withinMs, nowMs) {
      if (profile.events === undefined) return 0;
      const granularityMs = set.events.get(event)?.granularityMs ?? 1;
      let n = 0;
      for (const counter of profile.events) {
        if (counter.event !== event || !sources.includes(counter.source)) continue;
        n += withinMs === undefined ? counter.total : countRecent(counter.recent, granularityMs, withinMs, nowMs);
      }
      return n;
    },
  };
}

/** Whether any of the sources has seen the user: only then can the user be in an audience of those sources. */
export function seenByAny(profile: Profile, sources: readonly string[]): boolean {
  for (const source of sources) if (profile.seen.includes(source)) return true;
  return false;
}

/**
 * The first instant after `nowMs` at which a kept occurrence leaves one of its
 * event's windows, i.e. when a windowed rule may change its answer with no new call.
 */
export function nextWake(profile: Profile, set: AudienceSet, nowMs: number): number {
  let wake = Infinity;
  for (const counter of profile.events ?? []) {
    const spec = set.events.get(counter.event);
    const recent = counter.recent;
    if (spec === undefined || recent === undefined) continue;
    for (const windowMs of spec.windowsMs) {
      for (let i = 0; i < recent.length; i += 2) {
        const leaves = (recent[i] ?? 0) + spec.granularityMs + windowMs;
        if (leaves > nowMs) {
          if (leaves < wake) wake = leaves;
          break;
        }
      }
    }
  }
  return wake;
}

/**
 * Drops what no rule can read any more: events no rule counts and kept times older
 * than every window. Memory only: what is dropped would be ignored anyway, so this
 * alone never needs a changelog write.
 */
export function prune(profile: Profile, set: AudienceSet, nowMs: number): void {
  if (profile.events === undefined) return;
  profile.events = profile.events.filter((counter) => {
    const spec = set.events.get(counter.event);
    if (spec === undefined) return false;
    if (counter.recent === undefined) return true;
    if (spec.keep === 0) {
      counter.recent = undefined;
      return true;
    }
    const horizon = nowMs - (spec.windowsMs[spec.windowsMs.length - 1] ?? 0) - spec.granularityMs;
    let drop = 0;
    while (drop < counter.recent.length && (counter.recent[drop] ?? 0) <= horizon) drop += 2;
    if (drop > 0) counter.recent.splice(0, drop);
    if (counter.recent.length === 0) counter.recent = undefined;
    return true;
  });
  if (profile.events.length === 0) profile.events = undefined;
}

// ---------------------------------------------------------------------------
// Changelog format: compact JSON, one value per profile, keyed by `profile.key`.
//   {"v":1,"b":born,"o":applied,"s":[sources seen],
//    "t":{source:{trait:[value,timestampMs]}},
//    "e":{event:{source:[total,[time,count,…]?]}},
//    "m":{audienceKey:changes}}
// Optional sections are left out when empty.

const FORMAT_VERSION = 1;

export function serializeProfile(profile: Profile): string {
  const out: Record<string, unknown> = { v: FORMAT_VERSION, b: profile.born, o: profile.applied, s: profile.seen };
  if (profile.traits !== undefined) {
    const traits = record();
    for (const own of profile.traits) {
      const entries = record();
      for (let i = 0; i < own.entries.length; i += 3) entries[own.entries[i] as string] = [own.entries[i + 1], own.entries[i + 2]];
      traits[own.source] = entries;
    }
    out.t = traits;
  }
  if (profile.events !== undefined) {
    const events = record();
    for (const counter of profile.events) {
      const counters = (events[counter.event] ??= record()) as Record<string, unknown>;
      counters[counter.source] = counter.recent === undefined ? [counter.total] : [counter.total, counter.recent];
    }
    out.e = events;
  }
  if (profile.members !== undefined && profile.members.length > 0) out.m = Object.fromEntries(memberships(profile));
  return JSON.stringify(out);
}

/** An object without a prototype, so that any trait or event name (`__proto__` too) is an own key. */
function record(): Record<string, unknown> {
  return Object.create(null) as Record<string, unknown>;
}

export type DeserializeResult = { ok: true; profile: Profile } | { ok: false; error: string };

/** Reads a changelog value back; anything malformed is refused with the reason, never half-read. */
export function deserializeProfile(key: string, text: string): DeserializeResult {
  if (!key.startsWith('u:') && !key.startsWith('a:')) return bad(`key ${JSON.stringify(key)} is not "u:<userId>" or "a:<anonymousId>"`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return bad(`not JSON (${(error as Error).message})`);
  }
  if (!isObject(parsed)) return bad('not a JSON object');
  if (parsed.v !== FORMAT_VERSION) return bad(`format version ${JSON.stringify(parsed.v)} is not ${FORMAT_VERSION}`);
  const { b: born, o: applied, s: seen } = parsed;
  if (!isWhole(born) || !isWhole(applied)) return bad('"b" and "o" must be offsets');
  if (!Array.isArray(seen) || !seen.every((s) => typeof s === 'string')) return bad('"s" must be a list of source ids');
  const profile = newProfile(key, born);
  profile.applied = applied;
  profile.seen = seen as string[];

  if (parsed.t !== undefined) {
    if (!isObject(parsed.t)) return bad('"t" must be an object');
    profile.traits = [];
    for (const source of Object.keys(parsed.t)) {
      const entries = parsed.t[source];
      if (!isObject(entries)) return bad(`"t.${source}" must be an object`);
      const flat: unknown[] = [];
      for (const name of Object.keys(entries)) {
        const pair = entries[name];
        if (!Array.isArray(pair) || pair.length !== 2 || typeof pair[1] !== 'number') return bad(`trait ${JSON.stringify(name)} must be [value, timestampMs]`);
        flat.push(name, pair[0], pair[1]);
      }
      profile.traits.push({ source, entries: flat });
    }
  }
  if (parsed.e !== undefined) {
    if (!isObject(parsed.e)) return bad('"e" must be an object');
    profile.events = [];
    for (const event of Object.keys(parsed.e)) {
      const counters = parsed.e[event];
      if (!isObject(counters)) return bad(`event ${JSON.stringify(event)} must be an object`);
      for (const source of Object.keys(counters)) {
        const entry = counters[source];
        if (!Array.isArray(entry) || !isWhole(entry[0])) return bad(`counter of ${JSON.stringify(event)} from ${JSON.stringify(source)} must be [total, times?]`);
        const recent: unknown = entry[1];
        if (recent !== undefined && !(Array.isArray(recent) && recent.length % 2 === 0 && recent.every((n) => typeof n === 'number'))) {
          return bad(`kept times of ${JSON.stringify(event)} must be pairs of numbers`);
        }
        profile.events.push({ event, source, total: entry[0], recent: recent as number[] | undefined });
      }
    }
  }
  if (parsed.m !== undefined) {
    if (!isObject(parsed.m)) return bad('"m" must be an object');
    for (const audience of Object.keys(parsed.m)) {
      const changes = parsed.m[audience];
      if (!isWhole(changes)) return bad(`membership ${JSON.stringify(audience)} must be a whole number`);
      setMembership(profile, audience, changes);
    }
  }
  return { ok: true, profile };
}

function bad(error: string): DeserializeResult {
  return { ok: false, error };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isWhole(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= -1;
}
