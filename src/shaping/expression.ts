// A destination's JSONata expressions, `filter` and `transform` (docs/webhooks.md#shaping):
// compiled once per config load, evaluated per call within a bound. Pure: the only
// clock read is JSONata's own evaluation timeout (and `$now()`, if an expression asks).
import jsonata from 'jsonata';
import { compileFastPath, NEEDS_FULL_EVALUATION, truthy } from './fast-path.js';
import type { FastPath } from './fast-path.js';

/**
 * The bound of one evaluation (docs/webhooks.md#time-and-size-bounds). JSONata checks
 * the time and the nesting depth on entering each step, and the length of each sequence
 * it builds; a bounded evaluation fails like any other (`transform_error`).
 * NOTE: generous on purpose: an expression over one call takes microseconds, and a
 * timeout of a sound expression (a GC pause, a loaded host) would cost that
 * destination the event. The bound is against a runaway expression, which costs the
 * router at most this per call.
 */
export const EVALUATION_BOUNDS = { timeoutMs: 100, maxDepth: 500, maxSequence: 100_000 } as const;

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
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
  const fast: FastPath | undefined = compileFastPath(compiled.ast());
  const full = async (input: Record<string, unknown>): Promise<Evaluated> => {
    try {
      return { ok: true, value: await compiled.evaluate(input) };
    } catch (error) {
      return { ok: false, error: describeError(error, true) };
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
