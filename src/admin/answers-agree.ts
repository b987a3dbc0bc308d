// The parts of the admin API's answers that the rooms below admin/ make and answers.ts
// writes out (it may import only files that import nothing, see there), held equal to the
// types of the code that makes them. Here each is compared with its maker's type, both
// ways: a field added, dropped, renamed or retyped on either side, an optional one made
// required, fails `tsc` on this file. Change answers.ts to follow, and the console's type
// check says what of the console no longer fits. Types only: nothing imports this file.
import type { CircuitState, DeadLetterFields, LifecycleState, TracedAnswer } from './answers.js';
import type { TracedAnswer as AttemptHistoryAnswer } from '../delivery/attempt-history.js';
import type { CircuitState as BreakerState } from '../delivery/circuit-breaker.js';
import type { deadLetterFields } from '../delivery/dlq/dead-letters.js';
import type { LifecycleState as DestinationLifecycleState } from '../lifecycle/lifecycle-state.js';

/** True when A and B are the same type (optional and readonly keys included, nested types too). */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** A mapped type (an Omit) as one object type, to compare it with an interface. */
type Flat<T> = { [K in keyof T]: T[K] };

/** Compiles only with `true`. */
type Holds<T extends true> = T;

/** Each entry compiles only while its two types are the same. */
export type AnswersAgree = [
  Holds<Same<CircuitState, BreakerState>>,
  Holds<Same<LifecycleState, DestinationLifecycleState>>,
  Holds<Same<DeadLetterFields, ReturnType<typeof deadLetterFields>>>,
  Holds<Same<TracedAnswer, Flat<AttemptHistoryAnswer>>>,
];
