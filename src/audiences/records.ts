// The internal topics of audiences and the records on `<prefix>audience.events`.
//
// The router writes one record per valid call to `audience.events`, keyed by the
// user's identity, in the same acknowledged send as the call's deliveries, and one
// per deletion request. Keying by identity re-partitions the calls: whatever key the
// producers used on `calls`, all of a user's records meet in one partition, which
// one audience processor owns, in the order they were written.
//
// The same partitions carry the seen-sources state (docs/kafka.md `user.sources`): a
// `seen` record for each (user, source) pair the router has not written before (see
// seen-cache.ts), and the deletion requests that need it, so that a user's
// sightings and deletions are applied in one place, in order, whatever key the
// producers gave the calls.
import type { Call } from '../calls/index.js';
import type { OutboundRecord } from '../kafka/index.js';

// The topics' names live with every other topic's (src/runtime/topics.ts).
export { audienceTopicNames } from '../runtime/topics.js';
export type { AudienceTopicNames } from '../runtime/topics.js';

/** A valid call, reduced to what audiences and deletions need. */
export interface CallRecord {
  kind: 'call';
  type: Call['type'];
  userId?: string;
  anonymousId?: string;
  sourceId: string;
  /** The call's own timestamp, else when it was received. */
  timestampMs: number;
  /** When Switchyard received the call; carried to the `received-at` header of the identifies it causes. */
  receivedAtMs: number;
  /** identify only. */
  traits?: Record<string, unknown>;
  /** track only. */
  event?: string;
  /**
   * Where the router read the call on `calls`. The router is at-least-once: after a
   * crash it routes its uncommitted calls again and writes their records again, which
   * would count an event twice. The processor drops a record whose call offset it
   * has already applied for that `calls` partition. Absent: never dropped.
   */
  callPartition?: number;
  callOffset?: number;
}

/** A source sent a call for the user, and the router had not written this pair yet. */
export interface SeenRecord {
  kind: 'seen';
  userId: string;
  sourceId: string;
}

/**
 * A deletion request whose delete bodies were already sent (by the router, to the
 * sources it chose): the user's audience state is only erased, and the sources are
 * dropped from the user's seen sources (all of them when `sourceIds` is absent).
 */
export interface EraseRecord {
  kind: 'erase';
  userId: string;
  sourceIds?: string[];
}

/**
 * A deletion request left to the audience processor: it sends the delete bodies to
 * the given sources, else to every source that has seen the user, then erases. The
 * router writes it for requests without `sourceIds`.
 */
export interface DeletionRecord {
  kind: 'deletion';
  userId: string;
  sourceIds?: string[];
  requestedAtMs: number;
}

export type AudienceRecord = CallRecord | SeenRecord | EraseRecord | DeletionRecord;

/**
 * The `audience.events` message for a valid call from `sourceId`. Key: userId, else
 * anonymousId, like the call's deliveries. `countEvent: false` (a track its source's
 * track filter blocks: it "goes nowhere") keeps the event name out, so only the
 * fact that the source saw the user is recorded. `origin`: where the call was read
 * on `calls` (see CallRecord.callOffset).
 */
export function audienceCallMessage(
  call: Call,
  sourceId: string,
  receivedAtMs: number,
  options: { countEvent?: boolean; origin?: { partition: number; offset: number } } = {},
): { key: Buffer; value: Buffer } {
  const key = call.userId ?? call.anonymousId;
  if (key === undefined) throw new TypeError(`audienceCallMessage: ${call.type} call has neither userId nor anonymousId`);
  const record: CallRecord = {
    kind: 'call',
    type: call.type,
    userId: call.userId,
    anonymousId: call.userId === undefined ? call.anonymousId : undefined,
    sourceId,
    timestampMs: call.timestampMs ?? receivedAtMs,
    receivedAtMs,
    traits: call.type === 'identify' ? call.traits : undefined,
    event: call.type === 'track' && options.countEvent !== false ? call.event : undefined,
    callPartition: options.origin?.partition,
    callOffset: options.origin?.offset,
  };
  return { key: Buffer.from(key, 'utf8'), value: Buffer.from(JSON.stringify(record), 'utf8') };
}

/** The `audience.events` message saying that `sourceId` has sent a call for `userId`, keyed by userId. */
export function audienceSeenMessage(userId: string, sourceId: string): { key: Buffer; value: Buffer } {
  const record: SeenRecord = { kind: 'seen', userId, sourceId };
  return { key: Buffer.from(userId, 'utf8'), value: Buffer.from(JSON.stringify(record), 'utf8') };
}

/**
 * The `audience.events` message that erases a user's audience state and drops
 * `sourceIds` (all sources when absent) from the user's seen sources, keyed by userId.
 */
export function audienceEraseMessage(userId: string, sourceIds?: readonly string[]): OutboundRecord {
  const record: EraseRecord = sourceIds === undefined ? { kind: 'erase', userId } : { kind: 'erase', userId, sourceIds: [...sourceIds] };
  return { key: userId, value: JSON.stringify(record) };
}

/**
 * The `audience.events` message for a deletion request the audience processor
 * carries out in full: delete bodies to the given sources, else to those that have
 * seen the user, then the erasure. The router writes it for requests without
 * `sourceIds` (it sends those with `sourceIds` itself, then writes an erase).
 */
export function audienceDeletionMessage(request: { userId: string; sourceIds?: string[]; requestedAtMs: number }): { key: Buffer; value: Buffer } {
  const record: DeletionRecord = { kind: 'deletion', userId: request.userId, sourceIds: request.sourceIds, requestedAtMs: request.requestedAtMs };
  return { key: Buffer.from(request.userId, 'utf8'), value: Buffer.from(JSON.stringify(record), 'utf8') };
}

export type DecodeResult = { ok: true; record: AudienceRecord } | { ok: false; error: string };

/** Reads an `audience.events` value; a malformed one is refused with what is wrong. */
export function decodeAudienceRecord(value: Buffer | null): DecodeResult {
  if (value === null) return { ok: false, error: 'empty record' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (error) {
    return { ok: false, error: `not JSON (${(error as Error).message})` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { ok: false, error: 'not a JSON object' };
  const r = parsed as Record<string, unknown>;
  if (r.kind === 'seen') {
    if (!isText(r.userId) || !isText(r.sourceId)) return { ok: false, error: 'seen without a userId and a sourceId' };
    return { ok: true, record: { kind: 'seen', userId: r.userId, sourceId: r.sourceId } };
  }
  if (r.kind === 'erase') {
    if (!isText(r.userId)) return { ok: false, error: 'erase without a userId' };
    if (r.sourceIds === undefined) return { ok: true, record: { kind: 'erase', userId: r.userId } };
    if (!(Array.isArray(r.sourceIds) && r.sourceIds.every(isText))) return { ok: false, error: 'erase sourceIds must be a list of source ids' };
    return { ok: true, record: { kind: 'erase', userId: r.userId, sourceIds: r.sourceIds as string[] } };
  }
  if (r.kind === 'deletion') {
    if (!isText(r.userId)) return { ok: false, error: 'deletion without a userId' };
    if (r.sourceIds !== undefined && !(Array.isArray(r.sourceIds) && r.sourceIds.every(isText))) {
      return { ok: false, error: 'deletion sourceIds must be a list of source ids' };
    }
    if (!isTime(r.requestedAtMs)) return { ok: false, error: 'deletion without requestedAtMs' };
    return { ok: true, record: { kind: 'deletion', userId: r.userId, sourceIds: r.sourceIds as string[] | undefined, requestedAtMs: r.requestedAtMs } };
  }
  if (r.kind !== 'call') return { ok: false, error: `unknown kind ${JSON.stringify(r.kind)}` };
  if (!isText(r.type)) return { ok: false, error: 'call without a type' };
  if (!isText(r.userId) && !isText(r.anonymousId)) return { ok: false, error: 'call without a userId or anonymousId' };
  if (r.userId !== undefined && !isText(r.userId)) return { ok: false, error: 'userId must be a non-empty string' };
  if (r.anonymousId !== undefined && !isText(r.anonymousId)) return { ok: false, error: 'anonymousId must be a non-empty string' };
  if (!isText(r.sourceId)) return { ok: false, error: 'call without a sourceId' };
  if (!isTime(r.timestampMs) || !isTime(r.receivedAtMs)) return { ok: false, error: 'call without timestampMs and receivedAtMs' };
  if (r.traits !== undefined && (typeof r.traits !== 'object' || r.traits === null || Array.isArray(r.traits))) {
    return { ok: false, error: 'traits must be an object' };
  }
  if (r.event !== undefined && typeof r.event !== 'string') return { ok: false, error: 'event must be a string' };
  const origin = r.callPartition !== undefined || r.callOffset !== undefined;
  if (origin && !(isWhole(r.callPartition) && isWhole(r.callOffset))) return { ok: false, error: 'callPartition and callOffset must be given together, as whole numbers' };
  return {
    ok: true,
    record: {
      kind: 'call',
      type: r.type as Call['type'],
      userId: r.userId as string | undefined,
      anonymousId: r.anonymousId as string | undefined,
      sourceId: r.sourceId,
      timestampMs: r.timestampMs,
      receivedAtMs: r.receivedAtMs,
      traits: r.traits as Record<string, unknown> | undefined,
      event: r.event as string | undefined,
      callPartition: r.callPartition as number | undefined,
      callOffset: r.callOffset as number | undefined,
    },
  };
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isWhole(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}
