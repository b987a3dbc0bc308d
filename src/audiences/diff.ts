// Membership changes and the delivery messages they become: one identify per change
// and destination, and the delete bodies of a deletion request.
import { createHash } from 'node:crypto';
import { renderAudienceIdentify, renderDeleteBody } from '../calls/index.js';
import { deliveryKey, dropMemberships, identityOf, isMember, membershipOf, ruleInputs, seenByAny, setMembership } from './profile.js';
import type { Profile } from './profile.js';
import { evaluateRule } from './rules.js';
import type { AudienceSet, CompiledAudience } from './rules.js';
import { freshDeliveryHeaders } from '../runtime/headers.js';

export interface Transition {
  audience: CompiledAudience;
  /** true: entered; false: left. */
  member: boolean;
  /** The profile's count of announced changes for this audience, this one included. */
  changes: number;
}

/**
 * Evaluates every audience on the profile and records the changes in
 * `profile.members`. A user who never entered has no entry, so a member found for an
 * audience that just appeared (at start, by a reload, or in a new profile) is an
 * entry like any other: that is the first-creation sync. Entries of audiences no
 * longer configured are dropped without a word (returned as `dropped`).
 *
 * A user can only be in an audience once one of its sources has seen them, so that
 * `not` rules do not take in users from unrelated sources.
 */
export function reconcileMemberships(profile: Profile, set: AudienceSet, nowMs: number): { transitions: Transition[]; dropped: [string, number][] } {
  const transitions: Transition[] = [];
  for (const audience of set.audiences) {
    const member = seenByAny(profile, audience.sources) && evaluateRule(audience.rule, ruleInputs(profile, audience.sources, set), nowMs);
    const previous = membershipOf(profile, audience.key);
    if (member === isMember(previous)) continue;
    const changes = (previous ?? 0) + 1;
    setMembership(profile, audience.key, changes);
    transitions.push({ audience, member, changes });
  }
  const dropped = profile.members === undefined ? [] : dropMemberships(profile, (key) => set.audiences.some((a) => a.key === key));
  return { transitions, dropped };
}

/** A message for `<prefix>deliveries.<destinationId>`, produced like any routed body. */
export interface OutgoingDelivery {
  destinationId: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

/**
 * A messageId that is the same each time the same change is computed again (after a
 * crash, replayed records recompute it), so receivers can de-duplicate: a hash of the
 * audience, the profile (and its creation), and the change's number.
 */
export function audienceMessageId(profileKey: string, born: number, audienceKey: string, changes: number): string {
  return hashId(`audience\u0000${audienceKey}\u0000${profileKey}\u0000${born}\u0000${changes}`);
}

/** The messageId of a deletion request's delete bodies: one per request record. */
export function deletionMessageId(userId: string, partition: number, offset: number, requestedAtMs: number): string {
  return hashId(`deletion\u0000${userId}\u0000${partition}\u0000${offset}\u0000${requestedAtMs}`);
}

/** A UUID (RFC 9562 version 8) made from a SHA-256 of `text`. */
function hashId(text: string): string {
  const digest = createHash('sha256').update(text).digest();
  digest[6] = (digest[6]! & 0x0f) | 0x80;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** A W3C traceparent derived from the messageId, so a recomputed message carries the same trace. */
function traceparentFor(messageId: string): string {
  const digest = createHash('sha256').update(messageId).digest('hex');
  return `00-${digest.slice(0, 32)}-${digest.slice(32, 48)}-01`;
}

function headers(sourceId: string, messageId: string, receivedAtMs: number): Record<string, string> {
  return freshDeliveryHeaders({ sourceId, messageId, receivedAt: String(receivedAtMs), traceparent: traceparentFor(messageId) });
}

/**
 * One identify per transition and enabled destination of its audience:
 * `traits: {<audience key>: true|false}`, userId (or anonymousId), timestamp = when
 * the change was computed. `source-id` names the audience's first source: the
 * identify stands for what that audience's sources said, and a real source id keeps
 * anything keyed on source ids valid.
 */
export function identifyDeliveries(profile: Profile, transitions: readonly Transition[], set: AudienceSet, nowMs: number, receivedAtMs: number): OutgoingDelivery[] {
  const out: OutgoingDelivery[] = [];
  const identity = identityOf(profile.key);
  const key = deliveryKey(profile.key);
  for (const { audience, member, changes } of transitions) {
    const messageId = audienceMessageId(profile.key, profile.born, audience.key, changes);
    const value = renderAudienceIdentify({ ...identity, messageId, timestampMs: nowMs, traitKey: audience.key, member });
    for (const destinationId of audience.destinations) {
      if (!set.enabledDestinations.has(destinationId)) continue;
      out.push({ destinationId, key, value, headers: headers(audience.sources[0] ?? '', messageId, receivedAtMs) });
    }
  }
  return out;
}

/**
 * The delete bodies of a deletion request: one per enabled destination connected to
 * an affected source (a destination shared by two affected sources gets one, with
 * the first of them in `source-id`). Affected: the request's sourceIds, else every
 * source that has seen the user. Ids no longer configured are skipped and returned.
 */
export function deletionDeliveries(
  userId: string,
  affectedSources: readonly string[],
  set: AudienceSet,
  messageId: string,
  requestedAtMs: number,
  receivedAtMs: number,
): { deliveries: OutgoingDelivery[]; unknownSources: string[] } {
  const value = renderDeleteBody(userId, requestedAtMs);
  const deliveries: OutgoingDelivery[] = [];
  const unknownSources: string[] = [];
  const done = new Set<string>();
  for (const sourceId of affectedSources) {
    const destinations = set.sourceDestinations.get(sourceId);
    if (destinations === undefined) {
      unknownSources.push(sourceId);
      continue;
    }
    for (const destinationId of destinations) {
      if (done.has(destinationId) || !set.enabledDestinations.has(destinationId)) continue;
      done.add(destinationId);
      deliveries.push({ destinationId, key: userId, value, headers: headers(sourceId, messageId, receivedAtMs) });
    }
  }
  return { deliveries, unknownSources };
}
