// What a source's tracking plan does to one call (docs/tracking-plans.md#modes): observe
// delivers it as it is, omit takes out what violates and delivers the rest, block delivers
// nothing. Pure: the call given is never modified (omit works on a copy).
import type { Call } from '../calls/index.js';
import type { SourcePlan, TrackingPlanMode } from './compiled-plan.js';
import { findViolations, unescapePointer } from './violations.js';
import type { Violation } from './violations.js';

export interface PlanVerdict {
  mode: TrackingPlanMode;
  violations: Violation[];
  /** Nothing of the call is delivered: it goes to `calls.blocked`. */
  blocked: boolean;
  /** The call to deliver: the one given (observe), or one without what violated (omit). */
  call: Call;
}

/** The verdict for a call that violates the plan; undefined when it violates nothing. */
export function applyPlan(source: SourcePlan, call: Call): PlanVerdict | undefined {
  const violations = findViolations(source.plan, call);
  if (violations.length === 0) return undefined;
  switch (source.mode) {
    case 'observe':
      return { mode: 'observe', violations, blocked: false, call };
    case 'block':
      return { mode: 'block', violations, blocked: true, call };
    case 'omit':
      // An unplanned event has nothing to take out: under omit it is not delivered at all.
      if (violations.some((v) => v.type === 'unplanned_event')) return { mode: 'omit', violations, blocked: true, call };
      return { mode: 'omit', violations, blocked: false, call: omitViolations(call, violations) };
  }
}

/** The objects of a call that a plan checks, by the pointer's first segment. */
const OBJECTS = ['properties', 'traits', 'context'] as const;
type CheckedObject = (typeof OBJECTS)[number];

/**
 * The call without the values that violate: for each violation below `properties`,
 * `traits` or `context`, the key that holds it in the nearest object (a value inside a
 * list takes the whole list out: `/properties/tags/1` removes `tags`). A violation of the
 * object as a whole (`required`, `minProperties`) takes nothing out.
 */
export function omitViolations(call: Call, violations: readonly Violation[]): Call {
  const copies: Partial<Record<CheckedObject, Record<string, unknown>>> = {};
  for (const violation of violations) {
    if (violation.type === 'required_missing' || violation.type === 'unplanned_event') continue;
    const segments = violation.pointer.split('/').slice(1).map(unescapePointer);
    const top = segments[0] as CheckedObject;
    if (!OBJECTS.includes(top) || segments.length < 2) continue;
    const original = call[top];
    if (original === undefined) continue;
    // NOTE: a copy through JSON, not structuredClone: it keeps own `__proto__` keys as
    // JSON.parse made them, so the rendered body is what JSON.stringify of the rest gives.
    const root = (copies[top] ??= JSON.parse(JSON.stringify(original)) as Record<string, unknown>);
    removeAt(root, segments.slice(1));
  }
  return { ...call, ...copies };
}

/** Deletes, along `path` from `root`, the key of the last object on the way. */
function removeAt(root: Record<string, unknown>, path: readonly string[]): void {
  let holder: Record<string, unknown> | undefined;
  let key: string | undefined;
  let node: unknown = root;
  for (const segment of path) {
    if (Array.isArray(node)) {
      node = node[Number(segment)];
    } else if (typeof node === 'object' && node !== null && Object.hasOwn(node, segment)) {
      holder = node as Record<string, unknown>;
      key = segment;
      node = holder[segment];
    } else {
      return; // not there: nothing to take out
    }
  }
  if (holder !== undefined && key !== undefined) delete holder[key];
}
