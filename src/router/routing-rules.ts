// The routing rules of docs/configuration.md#routing, as pure functions of a call and its source.
import type { Call } from '../calls/index.js';
import type { CompiledTrackFilter, RouteTarget, RoutingSource } from './routing-table.js';

/**
 * Why a connected destination does not get an event (the `reason` label of
 * events_filtered): the routing rules here, the source's tracking plan blocking the call
 * (plan-call.ts), then the destination's shaping (plan-call.ts, `shapeRoutes`): its
 * `filter`, its `sample`, or an expression that failed on this call.
 */
export type FilterReason = 'disabled' | 'integrations' | 'track_filter' | 'destination_filter' | 'sample' | 'transform_error' | 'tracking_plan';

export type RouteDecision =
  /** `body`: this destination's own bytes (a property list or transform made them); else the call's shared body. */
  | { target: RouteTarget; routed: true; body?: Buffer }
  /** `error` (transform_error only): what failed, for the log and the trace; it quotes none of the call's values. */
  | { target: RouteTarget; routed: false; reason: FilterReason; error?: string };

/**
 * Whether a call's `integrations` object lets it reach the destination named
 * `catalogName`. Keys are case-sensitive (the seed): `{"webhooks": false}` does not
 * address `Webhooks`.
 * - `true` or an options object → on; `false` → off;
 * - absent (or any other value) → off when `All` is `false`, else on.
 * No `integrations` at all: on.
 */
export function integrationsAllow(integrations: Record<string, unknown> | undefined, catalogName: string): boolean {
  if (integrations === undefined) return true;
  const own = Object.hasOwn(integrations, catalogName) ? integrations[catalogName] : undefined;
  if (own === true) return true;
  if (own === false) return false;
  if (typeof own === 'object' && own !== null && !Array.isArray(own)) return true;
  return !(Object.hasOwn(integrations, 'All') && integrations.All === false);
}

/** Whether the source's business-level track filter lets this call through. Only track calls are filtered. */
export function trackFilterAllows(filter: CompiledTrackFilter | undefined, call: Pick<Call, 'type' | 'event'>): boolean {
  if (filter === undefined || call.type !== 'track') return true;
  // validateCall guarantees an event on track calls; an absent one matches no list entry.
  const event = call.event ?? '';
  return filter.kind === 'block' ? !filter.events.has(event) : filter.events.has(event);
}

/**
 * One decision per destination connected to the source, in the source's order. The
 * rules apply in docs/configuration.md#routing order and the first that filters names the reason:
 * disabled destination, then `integrations`, then the source's track filter.
 */
export function decideRoutes(call: Pick<Call, 'type' | 'event' | 'integrations'>, source: RoutingSource): RouteDecision[] {
  const tracked = trackFilterAllows(source.trackFilter, call);
  const decisions: RouteDecision[] = [];
  for (const target of source.destinations) {
    if (!target.enabled) decisions.push({ target, routed: false, reason: 'disabled' });
    else if (!integrationsAllow(call.integrations, target.catalogName)) decisions.push({ target, routed: false, reason: 'integrations' });
    else if (!tracked) decisions.push({ target, routed: false, reason: 'track_filter' });
    else decisions.push({ target, routed: true });
  }
  return decisions;
}
