// Tracking plans (docs/tracking-plans.md): each schema compiled here, so a file with
// one that does not compile is refused, with its path, at load and at a reload.

import { PLAN_PARTS, compileSchema } from '../../tracking-plans/index.js';
import type { JsonSchema, TrackingPlanConfig } from '../../tracking-plans/index.js';
import { oneOf } from './basic-checks.js';
import { describe, fail, isPlainObject, ok, prefixed, REQUIRED } from './check.js';
import type { Checked, InputSchema, Problem } from './check.js';
import { field, nonEmptyText, strictObject } from './zod-fields.js';

const PLAN_SCHEMA_INPUT: InputSchema = { type: ['object', 'boolean'], description: 'a JSON Schema (draft 2020-12, or draft-07 when its $schema says so)' };

function checkPlanSchema(value: unknown): Checked<JsonSchema> {
  if (value === undefined) return fail(REQUIRED);
  const compiled = compileSchema(value);
  return compiled.ok ? ok(value as JsonSchema) : fail(compiled.error);
}
checkPlanSchema.input = PLAN_SCHEMA_INPUT;

function checkPlanEvents(value: unknown): Checked<Record<string, JsonSchema>> {
  if (value === undefined) return fail('is required; give each planned event the schema of its properties, e.g. events: { "Order Completed": { type: object } }, or events: {}');
  if (!isPlainObject(value)) return fail(`must be a mapping of event name to the JSON Schema of its properties, got ${describe(value)}`);
  const problems: Problem[] = [];
  for (const [name, schema] of Object.entries(value)) {
    const checked = checkPlanSchema(schema);
    if (!checked.ok) problems.push(...prefixed(checked.problems, [name]));
  }
  return problems.length > 0 ? { ok: false, problems } : ok(value as Record<string, JsonSchema>);
}
checkPlanEvents.input = { type: 'object', additionalProperties: PLAN_SCHEMA_INPUT };

export const trackingPlanSchema = strictObject({
  id: nonEmptyText,
  file: nonEmptyText.optional(),
  events: field(checkPlanEvents),
  ...Object.fromEntries(PLAN_PARTS.map((part) => [part, field(checkPlanSchema).optional()])),
  unplannedEvents: field(oneOf(['allow', 'violate'] as const)).prefault('allow'),
})
  // As written, `events` may be in the plan's `file` instead (src/config/plan-files.ts puts it in place before this schema runs).
  .meta({ required: ['id'], anyOf: [{ required: ['events'], properties: { events: true } }, { required: ['file'], properties: { file: true } }] })
  .transform((plan): TrackingPlanConfig => {
    const out: TrackingPlanConfig = { id: plan.id, events: plan.events, unplannedEvents: plan.unplannedEvents };
    if (plan.file !== undefined) out.file = plan.file;
    for (const part of PLAN_PARTS) {
      const schema = (plan as Record<string, unknown>)[part];
      if (schema !== undefined) out[part] = schema as JsonSchema;
    }
    return out;
  });
