// Tracking plans (docs/tracking-plans.md): a JSON Schema per event, checked per call.
export { PLAN_PARTS, compilePlan } from './compiled-plan.js';
export type { CompiledPlan, PlanPart, SourcePlan, SourcePlanConfig, TrackingPlanConfig, TrackingPlanMode, UnplannedEvents } from './compiled-plan.js';
export { applyPlan, omitViolations } from './apply-plan.js';
export type { PlanVerdict } from './apply-plan.js';
export { compileSchema } from './plan-schemas.js';
export type { JsonSchema } from './plan-schemas.js';
export { findViolations } from './violations.js';
export type { Violation, ViolationType } from './violations.js';
export { readViolationRecord, summarizeViolations } from './violations-summary.js';
export type { ViolationGroup, ViolationRecordValue, ViolationsSummary } from './violations-summary.js';
