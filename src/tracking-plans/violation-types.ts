// The shapes of tracking-plan violations and of the violations view's summary
// (docs/tracking-plans.md#violations): types only.
// NOTE: this file imports nothing: the operator console (browser code, checked without
// Node's types) reads it through src/admin/answers.ts, and an import here would bring
// its file into the console's program (eslint.config.js holds this).

export type ViolationType = 'unplanned_event' | 'required_missing' | 'type_mismatch' | 'additional_property' | 'other';

export interface Violation {
  type: ViolationType;
  /** RFC 6901 pointer into the call: `/properties/total`, `/traits/email`, `/context/app`, `/event`. */
  pointer: string;
  /** A JSON type (`number`, `string|null`), or for `other` the rule broken (`must be >= 0`). */
  expected: string;
  /** The value's JSON type (`string`, `integer`, `null`…); `missing` when it is absent. */
  actual: string;
}

/** A `violations` record's value (src/router/plan-records.ts writes it). */
export interface ViolationRecordValue {
  messageId: string;
  source: string;
  type: string;
  event: string;
  plan?: string;
  mode: string;
  action: string;
  receivedAt: string;
  violations: Violation[];
  more?: number;
}

export interface ViolationGroup {
  source: string;
  event: string;
  /** Violating calls. */
  calls: number;
  /** Violations by type, of those the records list (a record lists at most 50: `more` says how many it left out). */
  byType: Partial<Record<ViolationType, number>>;
  /** How many of the calls were delivered as they came, delivered without what violated, or blocked. */
  byAction: Record<string, number>;
}

export interface ViolationsSummary {
  /** Records read, and of them those that were not a violations record (skipped). */
  read: number;
  unreadable: number;
  /** Per source and event, most violating calls first. */
  groups: ViolationGroup[];
  /** The latest records, newest first. */
  recent: ViolationRecordValue[];
}
