// Zod wiring: a check function becomes a zod schema whose problems keep their messages and
// paths, and whose JSON Schema is the check's `input`.

import { z } from 'zod';
import { checkInt, checkList, checkSecret, checkText } from './basic-checks.js';
import { describe, REQUIRED } from './check.js';
import type { Check } from './check.js';
import { unknownKeyMessage } from './unknown-keys.js';

/**
 * A zod schema that runs a check function and reports its problems at their paths;
 * `input` (by default the check's own) becomes its JSON Schema.
 */
export function field<T>(check: Check<T>, input = check.input) {
  const schema = z.unknown().transform((value, ctx): T => {
    const result = check(value);
    if (result.ok) return result.value;
    for (const p of result.problems) {
      ctx.issues.push({ code: 'custom', message: p.message, input: value, path: p.path });
    }
    return z.NEVER;
  });
  return input === undefined ? schema : schema.meta(input);
}

/**
 * `z.strictObject` whose unknown-key issue carries one message per key, joined by
 * newlines in the order of `issue.keys` (load.ts splits them back into one error per key).
 */
export function strictObject<S extends z.core.$ZodLooseShape>(shape: S) {
  const known = Object.keys(shape);
  return z.strictObject(shape, {
    error: (issue) => {
      if (issue.code === 'unrecognized_keys') return issue.keys.map((k) => unknownKeyMessage(k, known)).join('\n');
      if (issue.code === 'invalid_type') {
        return issue.input === undefined ? REQUIRED : `must be a mapping (key: value), got ${describe(issue.input)}`;
      }
      return undefined;
    },
  });
}

export function list<T extends z.ZodType>(element: T, whenMissing = REQUIRED) {
  return z.array(element, {
    error: (issue) =>
      issue.code === 'invalid_type'
        ? issue.input === undefined
          ? whenMissing
          : `must be a list, got ${describe(issue.input)}`
        : undefined,
  });
}

export const nonEmptyText = field(checkText);
export const secretText = field(checkSecret);
export const idList = field(checkList(checkText));
export const port = field(checkInt(0, 65535));
