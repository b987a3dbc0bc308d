// What the router writes for a call that violates its source's tracking plan
// (docs/tracking-plans.md#records): one record on `violations`, and, when the plan
// blocked the call, the call as received on `calls.blocked` with its violations. Pure.
import type { InboundRecord, OutboundRecord } from '../kafka/index.js';
import type { Violation } from '../tracking-plans/index.js';
import type { RoutedCall } from './plan-call.js';
import { HEADER } from '../runtime/headers.js';

/** Header of a `calls.blocked` record: the JSON list of the call's violations. */
export const VIOLATIONS_HEADER = 'violations';

/**
 * The violations a record lists; a call breaking more (a 32 KB call can hold a thousand
 * extra properties) says how many more in `more`. The metric counts them all.
 */
export const MAX_RECORDED_VIOLATIONS = 50;

/** The `event` label of switchyard_tracking_plan_violations_total and the records' `event`. */
export const UNPLANNED_EVENT_LABEL = '(unplanned)';

/**
 * A track's event name (one of the plan's, or `(unplanned)`: a label per name a producer
 * makes up would grow without bound), else the call's type.
 */
export function violationEventLabel(routed: RoutedCall): string {
  if (routed.type !== 'track') return routed.type;
  const event = routed.call.event ?? '';
  return routed.source.trackingPlan?.plan.events.has(event) === true ? event : UNPLANNED_EVENT_LABEL;
}

/** What a violating call became: `delivered` as it is (observe), `omitted` (delivered without what violated), or `blocked`. */
export type PlanAction = 'delivered' | 'omitted' | 'blocked';

export function planAction(routed: RoutedCall): PlanAction {
  const tracking = routed.tracking!;
  return tracking.blocked ? 'blocked' : tracking.mode === 'omit' ? 'omitted' : 'delivered';
}

/**
 * The `violations` record: key the delivery key (userId, else anonymousId), value
 * `{"messageId","source","type","event","plan","mode","action","receivedAt","violations":[…],"more"?}`.
 */
export function violationRecord(routed: RoutedCall): OutboundRecord {
  const tracking = routed.tracking!;
  const listed = tracking.violations.slice(0, MAX_RECORDED_VIOLATIONS);
  const more = tracking.violations.length - listed.length;
  const value = {
    messageId: routed.messageId,
    source: routed.source.id,
    type: routed.type,
    event: routed.type === 'track' ? (routed.call.event ?? '') : routed.type,
    plan: routed.source.trackingPlan?.plan.id,
    mode: tracking.mode,
    action: planAction(routed),
    receivedAt: new Date(routed.receivedAtMs).toISOString(),
    violations: listed,
    more: more > 0 ? more : undefined,
  };
  return {
    key: routed.key,
    value: JSON.stringify(value),
    headers: { [HEADER.sourceId]: routed.source.idHeader, [HEADER.messageId]: routed.messageId },
    timestamp: routed.timestamp,
  };
}

/**
 * The `calls.blocked` record: the call exactly as received (key, bytes, headers,
 * timestamp), with the `source-id` it was routed for, the `message-id` it was given (a
 * replay keeps it: src/router/replay-blocked.ts) and its `violations`.
 */
export function blockedRecord(record: InboundRecord, routed: RoutedCall): OutboundRecord {
  return {
    key: record.key,
    value: record.value,
    headers: {
      ...record.headers,
      [HEADER.sourceId]: routed.source.idHeader,
      [HEADER.messageId]: routed.messageId,
      [VIOLATIONS_HEADER]: JSON.stringify(recorded(routed.tracking!.violations)),
    },
    timestamp: record.timestamp,
  };
}

function recorded(violations: readonly Violation[]): readonly Violation[] {
  return violations.length > MAX_RECORDED_VIOLATIONS ? violations.slice(0, MAX_RECORDED_VIOLATIONS) : violations;
}
