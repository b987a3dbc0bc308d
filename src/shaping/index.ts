// Router-side shaping of what each destination receives (docs/webhooks.md#shaping):
// JSONata filter and transform, sampling, property lists. Pure, part of the base.
export { EVALUATION_BOUNDS, compileExpression, effectiveBoolean } from './expression.js';
export type { Evaluated, Expression } from './expression.js';
export { ALLOW_ROOTS, BODY_FIELDS, applyPropertyList, compilePropertyList, propertyPathProblem } from './property-lists.js';
export type { PropertyList } from './property-lists.js';
export { sampleKeeps, samplePoint } from './sample.js';
export { MAX_SHAPED_BODY_BYTES, SHAPING_KEYS, ShapingInput, ShapingSettingsError, compileShaping, hasShaping, shape, shapingProblems } from './shape.js';
export type { FilterStage, Shaped, Shaping, ShapingProblem, ShapingSettings } from './shape.js';
