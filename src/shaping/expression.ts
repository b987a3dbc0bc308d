// A destination's JSONata expressions, `filter` and `transform` (docs/webhooks.md#shaping):
// compiled once per config load, evaluated per call within bounds of steps and time.
// Pure but for the clocks: the time budget's (evaluation-budget.ts), JSONata's own
// timeout, and `$now()`, if an expression asks.
import jsonata from 'jsonata';
import { evalRefused, sort } from './built-ins.js';
import { BudgetClock } from './evaluation-budget.js';
import type { Budget } from './evaluation-budget.js';
import { compileFastPath, NEEDS_FULL_EVALUATION, truthy } from './fast-path.js';
import { LinearRegExp, regexProblems } from './linear-regex.js';
import type { FastPath } from './fast-path.js';

/**
 * The bounds of one evaluation (docs/webhooks.md#time-and-size-bounds): steps (JSONata's
 * entries into its evaluator, counted by its entry hook), its own time (`budgetMs`,
 * evaluation-budget.ts), nesting depth and sequence length; a bounded evaluation fails
 * like any other (`transform_error`). Regexes run in linear time (linear-regex.ts) and
 * `$sort` in n·log n (built-ins.ts), so no single step can run long on a call of 32 KB.
 * NOTE: the time budget bounds what a step count cannot see (work inside built-in
 * functions) and what one call may take from the router's thread, which the calls of a
 * batch share and, in a process that also runs the gateway, its requests: 30 ms, tried
 * once more before the evaluation fails (a garbage collection or a descheduled thread
 * is charged to whichever evaluation was running), so a runaway call holds the thread
 * about 60 ms at most. Not less: on a busy 2-core host a sound `$map` over 1,000 numbers
 * took up to tens of ms, and a budget of a few ms would fail such expressions whenever
 * the host is busy. The step bound names an endless loop when it comes first; which of
 * the two stops a runaway depends on the host's speed. Evaluations of a few µs of work
 * took many times that counted from their start (the others' steps in between), which is
 * why the budget counts only their own time (figures:
 * docs/benchmarks.md#figures-behind-the-code). `timeoutMs` (JSONata's own clock, from
 * the start) stays as a backstop.
 */
export const EVALUATION_BOUNDS = { maxSteps: 25_000, budgetMs: 30, maxDepth: 500, maxSequence: 100_000, timeoutMs: 5_000 } as const;

const STEPS = Symbol('steps');
const BUDGET = Symbol('budget');
const ENTRY_HOOK = Symbol.for('jsonata.__evaluate_entry');
const TIMEOUT = 'D1012';
const OVER_BUDGET = 'budget';

/**
 * How long evaluations may hold the router's thread before a step waits a turn of the
 * event loop. NOTE: the calls of a batch are evaluated at once, all of it microtasks:
 * without a pause, a batch of runaway calls (each cut at its budget) kept the process's
 * /healthz waiting in test/integration/shaping-runaway.test.ts (docs/benchmarks.md#figures-behind-the-code).
 */
const HOLD_MS = 10;

const clock = new BudgetClock(() => performance.now(), HOLD_MS);
/**
 * The budget of the evaluation being started. NOTE: JSONata runs an evaluation's first
 * step synchronously inside `evaluate()`, so the step hook finds it here and keeps it on
 * that evaluation's own frame.
 */
let starting: Budget | undefined;

/**
 * Counts an evaluation's steps and time on its own frame and stops it past either bound;
 * returns a promise (JSONata awaits it) when the step is to wait a turn of the event loop.
 */
function countStep(expr: { position?: number }, _input: unknown, environment: { base: Record<symbol, unknown> }): Promise<void> | undefined {
  const base = environment.base;
  let budget = base[BUDGET] as Budget | undefined;
  if (budget === undefined) {
    budget = starting ?? { spentMs: 0 };
    base[BUDGET] = budget;
  }
  const steps = ((base[STEPS] as number | undefined) ?? 0) + 1;
  base[STEPS] = steps;
  if (steps > EVALUATION_BOUNDS.maxSteps) {
    throw {
      code: 'steps',
      position: expr.position,
      message: `stopped after ${EVALUATION_BOUNDS.maxSteps} evaluation steps, the bound of one evaluation (an endless or very long loop?)`,
    };
  }
  if (!clock.step(budget, EVALUATION_BOUNDS.budgetMs)) throw overBudget(expr.position);
  return clock.yieldDue() ? new Promise((resolve) => setImmediate(resolve)) : undefined;
}

function overBudget(position: number | undefined): { code: string; position: number | undefined; message: string } {
  return {
    code: OVER_BUDGET,
    position,
    message: `stopped after ${EVALUATION_BOUNDS.budgetMs} ms, the time budget of one evaluation (too much work for one call: a long loop, a large sort?)`,
  };
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
  if (e.code === 'steps' || e.code === OVER_BUDGET || e.code === 'regex' || e.code === 'eval') return e.position !== undefined ? `${message} (at character ${e.position})` : message;
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

/** Compiles `text`; a syntax error, or a regex that needs backtracking, comes back with why and where. */
export function compileExpression(text: string): Compiled {
  let compiled: jsonata.Expression;
  try {
    compiled = jsonata(text, {
      timeout: EVALUATION_BOUNDS.timeoutMs,
      stack: EVALUATION_BOUNDS.maxDepth,
      sequence: EVALUATION_BOUNDS.maxSequence,
      RegexEngine: LinearRegExp as unknown as RegExpConstructor,
    } as jsonata.JsonataOptions);
    // (JSONata binds a symbol as well as a name; its typings say string)
    compiled.assign(ENTRY_HOOK as unknown as string, countStep);
    compiled.registerFunction('sort', sort, '<af?:a>');
    compiled.registerFunction('eval', evalRefused, '<sx?:x>');
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
  const refused = regexProblems(compiled.ast());
  if (refused.length > 0) return { ok: false, error: refused.join('; ') };
  const fast: FastPath | undefined = compileFastPath(compiled.ast());
  const full = async (input: Record<string, unknown>): Promise<Evaluated> => {
    for (let attempt = 1; ; attempt++) {
      const budget: Budget = { spentMs: 0 };
      let pending: Promise<unknown>;
      starting = budget;
      try {
        pending = compiled.evaluate(input);
      } finally {
        starting = undefined;
      }
      let failure: unknown;
      try {
        const value: unknown = await pending;
        // The last step's work (a built-in's) is charged here, at the end.
        if (clock.end(budget, EVALUATION_BOUNDS.budgetMs)) return { ok: true, value };
        failure = overBudget(undefined);
      } catch (error) {
        clock.end(budget, EVALUATION_BOUNDS.budgetMs);
        failure = error;
      }
      const code = (failure as JsonataError | null)?.code;
      if (attempt === 1 && (code === TIMEOUT || code === OVER_BUDGET)) continue;
      return { ok: false, error: describeError(failure, true) };
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
