// What a call breaks of its source's tracking plan (docs/tracking-plans.md#violations):
// ajv's errors turned into violations with a type, the JSON pointer into the call, the
// expected and the actual type. Pure.
import type { Call } from '../calls/index.js';
import type { CompiledPlan, PlanPart } from './compiled-plan.js';
import type { ErrorObject, SchemaValidator } from './plan-schemas.js';
import type { Violation } from './violation-types.js';

export type { Violation, ViolationType } from './violation-types.js';

/** What the plan says about an event not in it: the expected and the actual of its violation. */
const UNPLANNED: Omit<Violation, 'actual'> = { type: 'unplanned_event', pointer: '/event', expected: 'an event of the plan' };

/**
 * The violations of `call` against `plan`: a track's `properties` against its event's
 * schema (or `unplanned_event` when the plan has none and says `unplannedEvents:
 * violate`), an identify's or group's `traits`, a page's or screen's `properties`, and
 * every call's `context` against `common`. An absent object is checked as `{}`, so its
 * required keys are reported missing.
 */
export function findViolations(plan: CompiledPlan, call: Call): Violation[] {
  const found: Violation[] = [];
  switch (call.type) {
    case 'track': {
      const schema = plan.events.get(call.event ?? '');
      if (schema !== undefined) check(schema, call.properties, '/properties', found);
      else if (plan.unplannedEvents === 'violate') found.push({ ...UNPLANNED, actual: 'string' });
      break;
    }
    case 'identify':
    case 'group':
      checkPart(plan, call.type, call.traits, '/traits', found);
      break;
    case 'page':
    case 'screen':
      checkPart(plan, call.type, call.properties, '/properties', found);
      break;
    case 'alias':
      break;
  }
  checkPart(plan, 'common', call.context, '/context', found);
  return found;
}

function checkPart(plan: CompiledPlan, part: PlanPart, data: Record<string, unknown> | undefined, at: string, found: Violation[]): void {
  const schema = plan.parts[part];
  if (schema !== undefined) check(schema, data, at, found);
}

function check(validate: SchemaValidator, data: Record<string, unknown> | undefined, at: string, found: Violation[]): void {
  const root = data ?? {};
  const errors = validate(root);
  if (errors.length === 0) return;
  const seen = new Set<string>();
  for (const error of errors) {
    const violation = toViolation(error, at);
    if (violation === undefined) continue;
    const key = `${violation.type} ${violation.pointer}`;
    if (seen.has(key)) continue;
    seen.add(key);
    found.push(violation);
  }
}

/**
 * One ajv error as a violation; undefined for an error that only repeats others (`if`:
 * its `then` or `else` reports what failed).
 */
export function toViolation(error: ErrorObject, at: string): Violation | undefined {
  const path = at + error.instancePath;
  switch (error.keyword) {
    case 'if':
      return undefined;
    case 'required': {
      const missing = String((error.params as { missingProperty: string }).missingProperty);
      const property = propertySchema(error.parentSchema, missing);
      return { type: 'required_missing', pointer: `${path}/${escapePointer(missing)}`, expected: property === undefined ? 'present' : typeOfSchema(property), actual: 'missing' };
    }
    case 'type': {
      const expected = (error.params as { type: string | string[] }).type;
      return { type: 'type_mismatch', pointer: path, expected: Array.isArray(expected) ? expected.join('|') : expected, actual: jsonType(error.data) };
    }
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const params = error.params as { additionalProperty?: string; unevaluatedProperty?: string };
      const name = String(params.additionalProperty ?? params.unevaluatedProperty);
      const parent = error.data as Record<string, unknown> | undefined;
      return { type: 'additional_property', pointer: `${path}/${escapePointer(name)}`, expected: 'absent', actual: jsonType(parent?.[name]) };
    }
    default:
      return { type: 'other', pointer: path, expected: error.message ?? `to pass "${error.keyword}"`, actual: jsonType(error.data) };
  }
}

/** The schema of a property named by `required`, when the same schema declares it. */
function propertySchema(parent: unknown, name: string): unknown {
  if (typeof parent !== 'object' || parent === null) return undefined;
  const properties = (parent as { properties?: unknown }).properties;
  if (typeof properties !== 'object' || properties === null || !Object.hasOwn(properties, name)) return undefined;
  return (properties as Record<string, unknown>)[name];
}

function typeOfSchema(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return 'present';
  const type = (schema as { type?: unknown }).type;
  if (typeof type === 'string') return type;
  if (Array.isArray(type)) return type.join('|');
  return 'present';
}

/** JSON Schema's name of a value's type (`integer` for whole numbers). */
export function jsonType(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** RFC 6901: `~` → `~0`, `/` → `~1`. */
export function escapePointer(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function unescapePointer(segment: string): string {
  return segment.replaceAll('~1', '/').replaceAll('~0', '~');
}
