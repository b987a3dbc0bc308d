// One record of `<prefix>deletions` → the `delete` bodies it makes (docs/configuration.md#routing: each
// affected source's enabled webhook destinations get one), or the reason it goes to
// `calls.invalid`. Pure, like plan-call.ts.
import { isUtf8 } from 'node:buffer';
import { parseTimestamp, renderDeleteBody } from '../calls/index.js';
import type { RecordHeaders } from '../kafka/index.js';
import { internalError, invalid } from './invalid-records.js';
import type { InboundRecord, InvalidOutcome } from './invalid-records.js';
import { quote } from './plan-call.js';
import { recordMessageId, recordTimestampMs } from './record-ids.js';
import type { RouteTarget, RoutingTable } from './routing-table.js';
import { HEADER, freshDeliveryHeaders, headerValue } from '../runtime/headers.js';

export interface DeleteTarget {
  target: RouteTarget;
  /** The first affected source (in config order) that connects this destination. */
  sourceId: string;
  headers: RecordHeaders;
}

export interface PlannedDeletion {
  kind: 'deletion';
  userId: string;
  /** The affected sources: the request's `sourceIds`, else every configured source. */
  sourceIds: string[];
  /** Whether the request named its sources (`sourceIds`). */
  named: boolean;
  /** The time of the delete bodies: the request's `requestedAt`, else the record's time. */
  timestampMs: number;
  /** One per enabled destination, even when several affected sources share it. */
  targets: DeleteTarget[];
  key: Buffer;
  body: Buffer;
}

export type DeletionOutcome = PlannedDeletion | InvalidOutcome;

const SHAPE = 'send {"userId":"…","sourceIds":["…"],"requestedAt":"2026-05-01T12:00:00.000Z"} (sourceIds and requestedAt optional)';

export function planDeletion(record: InboundRecord, table: RoutingTable, nowMs: () => number = Date.now): DeletionOutcome {
  try {
    return plan(record, table, nowMs);
  } catch (error) {
    return internalError('deletion request', error);
  }
}

function bad(what: string): InvalidOutcome {
  return invalid('bad_deletion_request', `bad deletion request: ${what}; ${SHAPE}`);
}

function plan(record: InboundRecord, table: RoutingTable, nowMs: () => number): DeletionOutcome {
  const bytes = record.value;
  if (bytes === null || bytes.length === 0) return bad('the record is empty');
  if (!isUtf8(bytes)) return bad('the record is not valid UTF-8');
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    return bad(`not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('not a JSON object');
  const request = value as Record<string, unknown>;

  const userId = request.userId;
  if (typeof userId !== 'string' || userId === '') return bad('"userId" must be a non-empty string');

  let sourceIds: string[];
  const named = request.sourceIds !== undefined && request.sourceIds !== null;
  if (!named) {
    sourceIds = table.sources.map((s) => s.id);
  } else {
    const given = request.sourceIds;
    if (!Array.isArray(given) || !given.every((id): id is string => typeof id === 'string' && id !== '')) {
      return bad('"sourceIds" must be a list of source ids (non-empty strings)');
    }
    if (given.length === 0) return bad('"sourceIds" is empty; list at least one source id, or leave it out to cover every source');
    // NOTE: all or nothing. A typo in one id would otherwise leave that source's
    // receivers without their delete while the request looks handled.
    const unknown = given.filter((id) => !table.sourcesById.has(id));
    if (unknown.length > 0) {
      return bad(
        `unknown source ${unknown.map(quote).join(', ')}: no source has this id, so nothing was sent for this request; fix "sourceIds" and produce it again`,
      );
    }
    sourceIds = [...new Set(given)];
  }

  let timestampMs = recordTimestampMs(record.timestamp, nowMs());
  if (request.requestedAt !== undefined && request.requestedAt !== null) {
    const parsed = typeof request.requestedAt === 'string' ? parseTimestamp(request.requestedAt) : undefined;
    if (parsed === undefined) return bad('"requestedAt" is not an ISO 8601 date-time; send it like "2026-05-01T12:00:00.000Z" or leave it out');
    timestampMs = parsed;
  }

  const affected = new Set(sourceIds);
  const messageId = recordMessageId(record.topic, record.partition, record.offset, record.timestamp);
  const receivedAt = String(recordTimestampMs(record.timestamp, nowMs()));
  const traceparent = headerValue(record.headers, HEADER.traceparent);
  const targets: DeleteTarget[] = [];
  const seen = new Set<string>();
  for (const source of table.sources) {
    if (!affected.has(source.id)) continue;
    for (const target of source.destinations) {
      if (!target.enabled || seen.has(target.id)) continue;
      seen.add(target.id);
      const headers = freshDeliveryHeaders({ sourceId: source.idHeader, messageId, receivedAt, traceparent });
      targets.push({ target, sourceId: source.id, headers });
    }
  }
  return {
    kind: 'deletion',
    userId,
    sourceIds,
    named,
    timestampMs,
    targets,
    key: Buffer.from(userId, 'utf8'),
    body: Buffer.from(renderDeleteBody(userId, timestampMs), 'utf8'),
  };
}
