// The audience processor's logic for one partition of `audience.events`, without
// I/O: records in, deliveries and changelog writes out. The service
// (audience-service.ts) feeds it from Kafka and writes its output back.
import { deletionDeliveries, deletionMessageId, identifyDeliveries, reconcileMemberships } from './diff.js';
import type { OutgoingDelivery, Transition } from './diff.js';
import { applyCall, deserializeProfile, isMember, memberships, newProfile, nextWake, profileKey, prune, serializeProfile } from './profile.js';
import type { Profile } from './profile.js';
import { decodeAudienceRecord } from './records.js';
import type { CallRecord, DeletionRecord, EraseRecord } from './records.js';
import type { AudienceSet } from './rules.js';
import { UserSources } from './user-sources.js';

/**
 * The profiles of one partition, held by the processor that owns it.
 *
 * NOTE: a profile at rest is its changelog value, the JSON string last written for
 * it, and is parsed only while a batch or a sweep works on it. Parsed, the same
 * profile takes several times the heap (arrays, boxed timestamps, object headers;
 * docs/benchmarks.md#figures-behind-the-code): the string form is what lets a processor hold
 * millions. Writing needs the string anyway, so keeping it costs no extra work.
 */
export interface PartitionState {
  readonly partition: number;
  /** profile key → serialized profile (the changelog value). */
  readonly profiles: Map<string, string>;
  /** profile key → when time alone may change a membership; only profiles with such a time. */
  readonly wakes: Map<string, number>;
  /** audience key → members among these profiles (for switchyard_audience_members). */
  readonly members: Map<string, number>;
  /**
   * `calls` partition → the highest call offset applied here. Records at or below it
   * are the router's repeats after a crash (see CallRecord.callOffset).
   */
  readonly callOffsets: Map<number, number>;
  /** The seen sources of this partition's users (`user.sources`). */
  readonly userSources: UserSources;
}

/**
 * The changelog key of a partition's `callOffsets`. Profile keys start with "u:" or
 * "a:", so it cannot collide with one.
 */
export const CALL_OFFSETS_KEY = '#call-offsets';

export function createPartitionState(partition: number): PartitionState {
  return { partition, profiles: new Map(), wakes: new Map(), members: new Map(), callOffsets: new Map(), userSources: new UserSources() };
}

export interface MembershipChange {
  audience: string;
  change: 'entered' | 'left';
}

export interface DeletionDone {
  /** `erase`: the delete bodies were sent by the router; `deletion`: by this processor. */
  kind: 'erase' | 'deletion';
  userId: string;
  offset: number;
  /** Whether there was audience state to erase. */
  hadProfile: boolean;
  /** Empty for an `erase` record (the router sent the delete bodies). */
  affectedSources: string[];
  unknownSources: string[];
  destinations: string[];
  /**
   * `deletion` only, for switchyard_deletions_total: `sent` when a delete body went
   * out, else `no_affected_source` (no source with an enabled destination saw the user).
   */
  result?: 'sent' | 'no_affected_source';
}

export interface EngineOutput {
  /** To produce first (acknowledged before the writes). */
  deliveries: OutgoingDelivery[];
  /** Changelog writes, key → value (null: erased), the last state of each profile only. */
  writes: Map<string, string | null>;
  /** `user.sources` writes, userId → value (null: erased), the last state of each user only. */
  sourceWrites: Map<string, string | null>;
  /**
   * userId → the time of the deletion record behind its `sourceWrites` entry: the
   * record's timestamp, so that routers know from when a skipped sighting counts
   * again (seen-follower.ts).
   */
  deletedAt: Map<string, number>;
  changes: MembershipChange[];
  deletions: DeletionDone[];
  /** Records (or stored profiles) that could not be read: skipped, and left in their topic. */
  problems: { offset?: number; key?: string; error: string }[];
  /** Records dropped as the router's repeats of calls already applied. */
  repeats: number;
}

function emptyOutput(): EngineOutput {
  return { deliveries: [], writes: new Map(), sourceWrites: new Map(), deletedAt: new Map(), changes: [], deletions: [], problems: [], repeats: 0 };
}

export interface EventRecord {
  offset: number;
  value: Buffer | null;
  /** The record's Kafka timestamp (ms). */
  timestampMs?: number;
}

/** The profiles a batch or sweep has parsed, written back to the state (and the output) at the end. */
class OpenProfiles {
  private readonly open = new Map<string, { profile: Profile; dirty: boolean }>();

  constructor(
    private readonly state: PartitionState,
    private readonly out: EngineOutput,
  ) {}

  /** The profile, parsed from its stored value; undefined when there is none (or it cannot be read). */
  get(key: string): Profile | undefined {
    const held = this.open.get(key);
    if (held !== undefined) return held.profile;
    const text = this.state.profiles.get(key);
    if (text === undefined) return undefined;
    const result = deserializeProfile(key, text);
    if (!result.ok) {
      // Treated as erased: better a user announced again than a processor stuck on them.
      this.out.problems.push({ key, error: `stored profile unreadable, dropped: ${result.error}` });
      this.state.profiles.delete(key);
      this.state.wakes.delete(key);
      return undefined;
    }
    this.open.set(key, { profile: result.profile, dirty: false });
    return result.profile;
  }

  create(profile: Profile): void {
    this.open.set(profile.key, { profile, dirty: true });
  }

  markDirty(profile: Profile): void {
    const held = this.open.get(profile.key);
    if (held !== undefined) held.dirty = true;
  }

  erase(key: string): void {
    this.open.delete(key);
    this.state.profiles.delete(key);
    this.state.wakes.delete(key);
  }

  /** Serializes the changed profiles into the state and the writes; updates the wake index. */
  close(): void {
    for (const [key, { profile, dirty }] of this.open) {
      if (dirty) {
        const text = serializeProfile(profile);
        this.state.profiles.set(key, text);
        this.out.writes.set(key, text);
      }
      if (profile.wakeAt === Infinity) this.state.wakes.delete(key);
      else this.state.wakes.set(key, profile.wakeAt);
    }
    this.open.clear();
  }
}

/**
 * Applies records of `audience.events` in offset order. Two kinds of repeat are
 * skipped: a record at or below its profile's `applied` offset was applied before
 * this processor's crash (its changes were announced then, with the same messageIds
 * a recomputation would give); a call at or below its `calls` partition's applied
 * offset is the router's repeat after the router's crash.
 *
 * The changelog writes end with the partition's call offsets, after the profiles:
 * written first, they could cover a call whose profile write was lost.
 */
export function applyRecords(state: PartitionState, records: readonly EventRecord[], set: AudienceSet, nowMs: number): EngineOutput {
  const out = emptyOutput();
  const batch: Batch = { state, out, open: new OpenProfiles(state, out), set, nowMs };
  let callOffsetsMoved = false;
  for (const { offset, value, timestampMs } of records) {
    const decoded = decodeAudienceRecord(value);
    if (!decoded.ok) {
      out.problems.push({ offset, error: decoded.error });
      continue;
    }
    const record = decoded.record;
    if (record.kind === 'seen') noteSource(state, out, record.userId, record.sourceId);
    else if (record.kind === 'call') callOffsetsMoved = applyCallRecord(batch, record, offset) || callOffsetsMoved;
    else forgetUser(batch, record, offset, timestampMs);
  }
  batch.open.close();
  if (callOffsetsMoved) out.writes.set(CALL_OFFSETS_KEY, JSON.stringify(Object.fromEntries(state.callOffsets)));
  return out;
}

/** What applyRecords works on while it applies one batch. */
interface Batch {
  readonly state: PartitionState;
  readonly out: EngineOutput;
  readonly open: OpenProfiles;
  readonly set: AudienceSet;
  readonly nowMs: number;
}

/**
 * Applies a `deletion` (delete bodies sent from here) or an `erase` (sent by the
 * router): the user's seen sources and profile are erased.
 */
function forgetUser(batch: Batch, record: DeletionRecord | EraseRecord, offset: number, timestampMs: number | undefined): void {
  const { state, out, open } = batch;
  const key = profileKey(record.userId, undefined);
  const profile = open.get(key);
  // A profile applied past this record was made after it: the deletion was carried
  // out before a crash, its delete bodies sent. NOTE: its seen sources are dropped
  // again all the same: `user.sources` is written apart from the profiles, so a
  // crash between the two may have lost that erasure (later sightings in the
  // replayed records add their sources back).
  const repeat = profile !== undefined && offset <= profile.applied;
  if (repeat) {
    // Nothing to send or count again.
  } else if (record.kind === 'deletion') {
    sendDeletion(batch, record, offset, profile);
  } else {
    out.deletions.push({ kind: 'erase', userId: record.userId, offset, hadProfile: profile !== undefined, affectedSources: [], unknownSources: [], destinations: [] });
  }
  // NOTE: after the delete bodies in the output, which the service produces (and
  // has acknowledged) before it writes any changelog.
  const sources = state.userSources.remove(record.userId, record.sourceIds);
  if (sources !== undefined) {
    out.sourceWrites.set(record.userId, sources);
    // The earliest deletion of the batch: sightings count again from it.
    const earlier = out.deletedAt.get(record.userId);
    if (timestampMs !== undefined && !(earlier !== undefined && earlier <= timestampMs)) out.deletedAt.set(record.userId, timestampMs);
  }
  if (profile !== undefined && !repeat) {
    forgetMembers(state, profile);
    open.erase(key);
    out.writes.set(key, null);
  }
}

/** The delete bodies of a `deletion` record, to every destination of a source that saw the user. */
function sendDeletion(batch: Batch, record: DeletionRecord, offset: number, profile: Profile | undefined): void {
  const { state, out } = batch;
  // The seen sources, and those of the profile: profiles written before
  // `user.sources` existed know the audience sources that saw the user.
  const affected = record.sourceIds ?? [...new Set([...state.userSources.of(record.userId), ...(profile?.seen ?? [])])];
  const messageId = deletionMessageId(record.userId, state.partition, offset, record.requestedAtMs);
  const { deliveries, unknownSources } = deletionDeliveries(record.userId, affected, batch.set, messageId, record.requestedAtMs, batch.nowMs);
  out.deliveries.push(...deliveries);
  out.deletions.push({
    kind: 'deletion',
    userId: record.userId,
    offset,
    hadProfile: profile !== undefined,
    affectedSources: [...affected],
    unknownSources,
    destinations: deliveries.map((d) => d.destinationId),
    result: deliveries.length > 0 ? 'sent' : 'no_affected_source',
  });
}

/** Applies one call to its profile; true when it moved the partition's call offsets. */
function applyCallRecord(batch: Batch, record: CallRecord, offset: number): boolean {
  const { state, out, open, set, nowMs } = batch;
  // NOTE: before the repeat checks below: the call offsets and profiles written
  // before a crash do not mean the user.sources write beside them was; and a
  // router's repeat after a deletion sent the call's deliveries again, so its source
  // has seen the user again.
  if (record.userId !== undefined) noteSource(state, out, record.userId, record.sourceId);
  let callOffsetsMoved = false;
  if (record.callPartition !== undefined && record.callOffset !== undefined) {
    if (record.callOffset <= (state.callOffsets.get(record.callPartition) ?? -1)) {
      out.repeats += 1;
      return false;
    }
    // NOTE: moved for records skipped below too: their effect is in the profile.
    state.callOffsets.set(record.callPartition, record.callOffset);
    callOffsetsMoved = true;
  }
  const key = profileKey(record.userId, record.anonymousId);
  let profile = open.get(key);
  let changed = false;
  if (profile === undefined) {
    profile = newProfile(key, offset);
    open.create(profile);
    changed = true;
  } else if (offset <= profile.applied) {
    return callOffsetsMoved;
  }
  changed = applyCall(profile, record, set) || changed;
  profile.applied = offset;
  prune(profile, set, nowMs);
  if (settle(state, profile, set, nowMs, record.receivedAtMs, out) || changed) open.markDirty(profile);
  return callOffsetsMoved;
}

function noteSource(state: PartitionState, out: EngineOutput, userId: string, sourceId: string): void {
  const value = state.userSources.add(userId, sourceId);
  // NOTE: a value that follows a deletion in this batch keeps the deletion's time
  // (out.deletedAt): it erases the sources it no longer lists, and routers rewrite
  // the pairs their calls found from that time on (seen-follower.ts).
  if (value !== undefined) out.sourceWrites.set(userId, value);
}

/** Loads one `user.sources` record during a restore (null: a tombstone); returns the problem when it cannot be read. */
export function loadUserSources(state: PartitionState, userId: string, value: string | null): string | undefined {
  return state.userSources.load(userId, value);
}

/** The profiles whose wake time has come: windowed events may have aged out. */
export function dueProfiles(state: PartitionState, nowMs: number): string[] {
  const due: string[] = [];
  for (const [key, wakeAt] of state.wakes) if (wakeAt <= nowMs) due.push(key);
  return due;
}

/**
 * Re-evaluates the given profiles with no new call: those `dueProfiles` found, or
 * all of them after a restore or a config change (audiences that appeared get their
 * members, edited ones their changes, removed ones are forgotten). `restored`: the
 * profiles were just loaded, so their memberships are counted first.
 */
export function sweepProfiles(state: PartitionState, keys: Iterable<string>, set: AudienceSet, nowMs: number, restored = false): EngineOutput {
  const out = emptyOutput();
  const open = new OpenProfiles(state, out);
  for (const key of keys) {
    const profile = open.get(key);
    if (profile === undefined) continue;
    if (restored) for (const [audience, changes] of memberships(profile)) if (isMember(changes)) addMembers(state, audience, 1);
    prune(profile, set, nowMs);
    if (settle(state, profile, set, nowMs, nowMs, out)) open.markDirty(profile);
  }
  open.close();
  return out;
}

/** Reconciles memberships, queues the identifies and counts; returns whether the profile must be written. */
function settle(state: PartitionState, profile: Profile, set: AudienceSet, nowMs: number, receivedAtMs: number, out: EngineOutput): boolean {
  const { transitions, dropped } = reconcileMemberships(profile, set, nowMs);
  profile.wakeAt = nextWake(profile, set, nowMs);
  for (const [audience, changes] of dropped) if (isMember(changes)) addMembers(state, audience, -1);
  if (transitions.length === 0) return dropped.length > 0;
  out.deliveries.push(...identifyDeliveries(profile, transitions, set, nowMs, receivedAtMs));
  countTransitions(state, transitions, out);
  return true;
}

function countTransitions(state: PartitionState, transitions: readonly Transition[], out: EngineOutput): void {
  for (const { audience, member } of transitions) {
    addMembers(state, audience.key, member ? 1 : -1);
    out.changes.push({ audience: audience.key, change: member ? 'entered' : 'left' });
  }
}

function addMembers(state: PartitionState, audience: string, delta: number): void {
  const n = (state.members.get(audience) ?? 0) + delta;
  if (n === 0) state.members.delete(audience);
  else state.members.set(audience, n);
}

function forgetMembers(state: PartitionState, profile: Profile): void {
  for (const [audience, changes] of memberships(profile)) if (isMember(changes)) addMembers(state, audience, -1);
}

/**
 * Loads one changelog record during a restore: a value replaces the profile (kept
 * as the string it is; read and counted by the sweep that follows every restore,
 * `sweepProfiles(…, restored = true)`), null (a tombstone) erases it. Returns the
 * problem when the partition's call offsets cannot be read.
 */
export function loadProfile(state: PartitionState, key: string, value: string | null): string | undefined {
  if (key === CALL_OFFSETS_KEY) return loadCallOffsets(state, value);
  if (value === null) state.profiles.delete(key);
  else state.profiles.set(key, value);
  return undefined;
}

function loadCallOffsets(state: PartitionState, value: string | null): string | undefined {
  state.callOffsets.clear();
  if (value === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    return `call offsets are not JSON (${(error as Error).message})`;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'call offsets must be an object';
  for (const [partition, offset] of Object.entries(parsed)) {
    if (!/^\d+$/.test(partition) || typeof offset !== 'number' || !Number.isSafeInteger(offset)) {
      return `call offset ${JSON.stringify(partition)}: ${JSON.stringify(offset)} is not partition: offset`;
    }
    state.callOffsets.set(Number(partition), offset);
  }
  return undefined;
}
