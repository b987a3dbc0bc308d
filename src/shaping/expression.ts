// A destination's JSONata expressions, `filter` and `transform` (docs/webhooks.md#shaping):
// compiled once per config load, evaluated per call within a bound. Pure: the only
// clock read is JSONata's own evaluation timeout (and `$now()`, if an expression asks).
import jsonata from 'jsonata';
import { compileFastPath, NEEDS_FULL_EVALUATION, truthy } from './fast-path.js';
import type { FastPath } from './fast-path.js';

/**
 * The bound of one evaluation (docs/webhooks.md#time-and-size-bounds): steps (JSONata's
 * entries into its evaluator, counted by its entry hook), nesting depth and sequence
 * length, checked by JSONata as it goes; a bounded evaluation fails like any other
 * (`transform_error`).
 * NOTE: a count of steps, not a time, decides: a sound expression then never fails
 * because the host was loaded or the process paused for a garbage collection, and a
 * call gets the same answer on every replica and after a restart. Measured on a loaded
 * host (load average 15 on two cores): evaluations of about 10 µs of work took up to
 * 95 ms of wall time (scheduling, garbage collection), and the route bench with
 * JSONata's own 100 ms timeout as the only bound wrote 188 of 1.62 million records fewer
 * than expected (none missing once the fast path took those expressions). 25,000 steps
 * take 25-250 ms there (far more than any expression over a 32 KB call needs), the cost
 * of a runaway expression per call. A long time (`timeoutMs`) is kept as a backstop for
 * a few very slow steps; an evaluation that hits it is tried once more before it fails.
 */
export const EVALUATION_BOUNDS = { maxSteps: 25_000, maxDepth: 500, maxSequence: 100_000, timeoutMs: 5_000 } as const;

const STEPS = Symbol('steps');
const ENTRY_HOOK = Symbol.for('jsonata.__evaluate_entry');
const TIMEOUT = 'D1012';

/** Counts an evaluation's steps on its own frame and stops it past the bound. */
function countStep(expr: { position?: number }, _input: unknown, environment: { base: Record<symbol, number> }): void {
  const base = environment.base;
  const steps = (base[STEPS] ?? 0) + 1;
  base[STEPS] = steps;
  if (steps > EVALUATION_BOUNDS.maxSteps) {
    throw {
      code: 'steps',
      position: expr.position,
      message: `stopped after ${EVALUATION_BOUNDS.maxSteps} evaluation steps, the bound of one evaluation (an endless or very long loop?)`,
    };
  }
}

/** What evaluating gave: the value (undefined when nothing matched) or why it failed. */
export type Evaluated = { ok: true; value: unknown } | { ok: false; error: string };

export interface Expression {
  /** The expression as written in the config. */
  readonly text: string;
  /**
   * Evaluates over `input` (a webhook body object, never modified). Synchronous when the
   * expression and this input stay within the fast path (fast-path.ts); otherwise
   * JSONata itself, which is asynchronous.
   */
  evaluate(input: Record<string, unknown>): Evaluated | Promise<Evaluated>;
}

export type Compiled = { ok: true; expression: Expression } | { ok: false; error: string };

interface JsonataError {
  code?: string;
  position?: number;
  token?: string;
  message?: string;
}

function describeError(error: unknown, scrub = false): string {
  if (typeof error !== 'object' || error === null) return String(error);
  const e = error as JsonataError;
  let message = e.message ?? String(error);
  if (scrub) message = withoutCallValues(message, e);
  if (e.code === undefined) return message;
  if (e.code === 'steps') return e.position !== undefined ? `${message} (at character ${e.position})` : message;
  return e.position !== undefined ? `${message} (JSONata ${e.code}, at character ${e.position})` : `${message} (JSONata ${e.code})`;
}

/**
 * A run-time error's message without the call's values JSONata quotes in it (`The values
 * "ada@example.com" and 5 either side of operator ">"…`): they may be user ids or
 * personal data, and the message goes to logs. Strings, objects and lists are quoted
 * in JSON in those messages, so they are found exactly; a bare number or boolean is
 * left (it is no identifier, and replacing "5" would garble the text).
 */
function withoutCallValues(message: string, error: JsonataError & { value?: unknown; value2?: unknown }): string {
  let out = message;
  for (const value of [error.value, error.value2]) {
    if (typeof value !== 'string' && (typeof value !== 'object' || value === null)) continue;
    let quoted: string | undefined;
    try {
      quoted = JSON.stringify(value);
    } catch {
      quoted = undefined;
    }
    if (quoted !== undefined) out = out.split(quoted).join('(a value of the call)');
  }
  return out;
}

/** Compiles `text`; a syntax error comes back with JSONata's message and position. */
export function compileExpression(text: string): Compiled {
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(text, { timeout: EVALUATION_BOUNDS.timeoutMs, stack: EVALUATION_BOUNDS.maxDepth, sequence: EVALUATION_BOUNDS.maxSequence });
    // (JSONata binds a symbol as well as a name; its typings say string)
    compiled.assign(ENTRY_HOOK as unknown as string, countStep);
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
  const fast: FastPath | undefined = compileFastPath(compiled.ast());
  const full = async (input: Record<string, unknown>): Promise<Evaluated> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return { ok: true, value: await compiled.evaluate(input) };
      } catch (error) {
        if (attempt === 1 && (error as JsonataError | null)?.code === TIMEOUT) continue;
        return { ok: false, error: describeError(error, true) };
      }
    }
  };
  const evaluate =
    fast === undefined
      ? full
      : (input: Record<string, unknown>): Evaluated | Promise<Evaluated> => {
          const value = fast(input);
          return value === NEEDS_FULL_EVALUATION ? full(input) : { ok: true, value };
        };
  return { ok: true, expression: { text, evaluate } };
}

/**
 * JSONata's effective boolean value (its `$boolean`), which decides a filter: false,
 * 0, "", null, an empty object or list, a function, and no match at all are false.
 */
export function effectiveBoolean(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 1 ? effectiveBoolean(value[0]) : value.some((item) => effectiveBoolean(item));
  if (typeof value === 'object' && value !== null && isJsonataFunction(value)) return false;
  // Anything else as the fast path casts it (a JavaScript function: false).
  return truthy(value) === true;
}

/** A JSONata lambda or built-in function as a value (an object JSON cannot carry). */
export function isJsonataFunction(value: object): boolean {
  const v = value as Record<string, unknown>;
  return v._jsonata_lambda === true || v._jsonata_function === true;
}
