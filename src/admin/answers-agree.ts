// The parts of the admin API's answers that the rooms below admin/ make, held equal to
// the types of the code that makes them. answers.ts writes these parts out (the console
// reads that file alone, see there); here each is compared with its maker's type, both
// ways: a field added, dropped, renamed or retyped on either side, an optional one made
// required, fails `tsc` on this file. Change answers.ts to follow, and the console's type
// check says what of the console no longer fits. Types only: nothing imports this file.
import type { DeadLetterFields, CircuitState, LastMinute, LifecycleState, TracedAnswer, Violation, ViolationGroup, ViolationRecord, ViolationType, ViolationsDocument } from './answers.js';
import type { TracedAnswer as AttemptHistoryAnswer } from '../delivery/attempt-history.js';
import type { CircuitState as BreakerState } from '../delivery/circuit-breaker.js';
import type { deadLetterFields } from '../delivery/dlq/dead-letters.js';
import type { LifecycleState as DestinationLifecycleState } from '../lifecycle/lifecycle-state.js';
import type { WindowFigures } from '../observability/recent-deliveries.js';
import type * as plans from '../tracking-plans/index.js';

/** True when A and B are the same type (optional and readonly keys included, nested types too). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** An intersection or a mapped type as one object type, to compare it with an interface. */
type Flat<T> = { [K in keyof T]: T[K] };

/** Compiles only with `true`. */
type Holds<T extends true> = T;

/** Each entry compiles only while its two types are the same. */
export type AnswersAgree = [
  Holds<Same<CircuitState, BreakerState>>,
  Holds<Same<LifecycleState, DestinationLifecycleState>>,
  Holds<Same<LastMinute, Flat<WindowFigures & { seconds: number }>>>,
  Holds<Same<DeadLetterFields, ReturnType<typeof deadLetterFields>>>,
  Holds<Same<TracedAnswer, Flat<AttemptHistoryAnswer>>>,
  Holds<Same<ViolationType, plans.ViolationType>>,
  Holds<Same<Violation, plans.Violation>>,
  Holds<Same<ViolationRecord, plans.ViolationRecordValue>>,
  Holds<Same<ViolationGroup, plans.ViolationGroup>>,
  Holds<Same<Flat<Omit<ViolationsDocument, 'since' | 'until' | 'complete'>>, Flat<plans.ViolationsSummary>>>,
];
