// What happened to one call at one destination (docs/follow-a-message.md#states), decided from
// what a trace read: the call's routing decision under the current config, and the
// records of it in the destination's topic, retry tiers and dead letters, each with its
// headers and whether the deliverer's group has finished it. Pure.
import { formatTimestamp } from '../calls/index.js';
import type { TracedAnswer } from '../delivery/attempt-history.js';
import type { TraceDestination } from '../admin/answers.js';

/** A destination's line of a traced call: part of an answer of the admin API (`GET /v1/trace`), declared with the others. */
export type { TraceDestination };

/**
 * The routing decision recomputed with the current config; `reason` is the router's
 * (src/router/routing-rules.ts), `error` what failed when a shaping expression did
 * (`transform_error`, docs/webhooks.md#shaping).
 */
export type RoutingVerdict = { routed: true } | { routed: false; reason: string; error?: string };

/** One record of the call in the destination's topics. */
export interface DeliveryStage {
  /** `delivery`: the destination's topic (from the router, or a replay); `retry`: a retry tier; `dead_letter`: its `.dlq`. */
  where: 'delivery' | 'retry' | 'dead_letter';
  /** The record's Kafka timestamp (epoch ms): when it was written (the receipt time for the router's). */
  timestampMs: number;
  /** Its offset, to order two records of one topic written in the same millisecond. */
  offset: bigint;
  /** The `attempt` header: attempts made before this record was written. */
  attemptsMade: number;
  /** The deliverer's group has finished it (below the committed offset, or listed in the commit's metadata); dead letters never are. */
  finished: boolean;
  /** `due-at` of a retry: not attempted again before. */
  dueAtMs?: number | undefined;
  /** `error`: why the last attempt failed, per URL. */
  error?: string | undefined;
  /** A dead letter's `last-attempt-at` (else its record time). */
  deadLetteredAtMs?: number | undefined;
  /** `attempt-history`: the failed answers so far, oldest first. */
  history?: TracedAnswer[] | undefined;
}

const RANK: Record<DeliveryStage['where'], number> = { delivery: 0, retry: 1, dead_letter: 2 };

/**
 * Newest first. NOTE: by record time, because a call's records move forward in time:
 * the router's record (stamped with the receipt time), then one per retry and the dead
 * letter (stamped when written, after an attempt), then a replay's new record. Ties
 * (one millisecond) fall to the later stage, the more attempts, the later offset.
 */
function newerFirst(a: DeliveryStage, b: DeliveryStage): number {
  return b.timestampMs - a.timestampMs || RANK[b.where] - RANK[a.where] || b.attemptsMade - a.attemptsMade || (b.offset > a.offset ? 1 : b.offset < a.offset ? -1 : 0);
}

/**
 * The state of one call at one destination:
 * - no record of it: `filtered` with the reason when the current config keeps it from the
 *   destination, else `pending` (the router has not written it yet);
 * - its newest record is a dead letter: `dead_lettered`, with the attempts and the error;
 * - its newest record is not finished: `retrying` in a tier (with the due time), else `pending`;
 * - its newest record is finished: `delivered` (a record that failed was finished only once
 *   its retry or dead letter was written, and that one would be newer).
 * Records win over the current config: a call the config now filters, but that was routed
 * when it came, shows what became of it.
 */
export function destinationState(id: string, routing: RoutingVerdict, stages: readonly DeliveryStage[]): TraceDestination {
  const newest = [...stages].sort(newerFirst)[0];
  // NOTE: a copy shares its messageId, so the first copy's records: they are not the copy's.
  if (newest === undefined || (!routing.routed && routing.reason === 'duplicate')) {
    if (routing.routed) return { id, state: 'pending' };
    const filtered: TraceDestination = { id, state: 'filtered', reason: routing.reason };
    if (routing.error !== undefined) filtered.lastError = routing.error;
    return filtered;
  }
  if (newest.where === 'dead_letter') {
    return withOptional({ id, state: 'dead_lettered', attempts: newest.attemptsMade }, newest, undefined, newest.deadLetteredAtMs ?? newest.timestampMs);
  }
  // Delivered after failed attempts: the record it was delivered from keeps them.
  if (newest.finished) return withHistory({ id, state: 'delivered', attempts: newest.attemptsMade + 1 }, newest);
  if (newest.where === 'retry') return withOptional({ id, state: 'retrying', attempts: newest.attemptsMade }, newest, newest.dueAtMs, undefined);
  return { id, state: 'pending' };
}

function withOptional(line: TraceDestination, stage: DeliveryStage, nextAttemptAtMs: number | undefined, deadLetteredAtMs: number | undefined): TraceDestination {
  if (stage.error !== undefined) line.lastError = stage.error;
  if (nextAttemptAtMs !== undefined) line.nextAttemptAt = formatTimestamp(nextAttemptAtMs);
  if (deadLetteredAtMs !== undefined) line.deadLetteredAt = formatTimestamp(deadLetteredAtMs);
  return withHistory(line, stage);
}

/** `history` last: the keys before it are those the document had before it (docs/follow-a-message.md#the-document). */
function withHistory(line: TraceDestination, stage: DeliveryStage): TraceDestination {
  if (stage.history !== undefined && stage.history.length > 0) line.history = stage.history;
  return line;
}
