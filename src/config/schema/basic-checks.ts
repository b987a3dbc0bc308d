// The checks of plain values: text, secrets, numbers, booleans, lists, a choice of words.
// Each returns the value or the problems it found, and carries its JSON Schema as `input`.

import { describe, describeSecret, fail, FROM_ENV, ok, orFromEnv, REQUIRED, withInput } from './check.js';
import type { Check, Checked, Problem } from './check.js';

export function checkText(value: unknown): Checked<string> {
  if (value === undefined) return fail(REQUIRED);
  if (typeof value !== 'string') return fail(`must be a string, got ${describe(value)}; quote it in YAML`);
  if (value.length === 0) return fail('must not be empty');
  return ok(value);
}
checkText.input = { type: 'string', minLength: 1 };

/** A secret (a token, a password, a write key): as checkText, but never quoted in a message. */
export function checkSecret(value: unknown): Checked<string> {
  if (value === undefined) return fail(REQUIRED);
  if (typeof value !== 'string') return fail(`must be a string, got ${describeSecret(value)}; quote it in YAML`);
  if (value.length === 0) return fail('must not be empty');
  return ok(value);
}
checkSecret.input = checkText.input;

// NOTE: integers and booleans also accept their string form, because a value that
// comes from `${ENV_VAR}` interpolation is always a string (interpolation happens
// after YAML parsing, by design), and `port: ${GATEWAY_PORT:-8080}` should work.
export function checkInt(min: number, max: number) {
  const input = { anyOf: [{ type: 'integer', minimum: min, maximum: max }, { type: 'string', pattern: '^\\d+$' }, FROM_ENV] };
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      return fail(`must be a whole number from ${min} to ${max}, got ${describe(value)}`);
    }
    return ok(n);
  });
}

/** A positive number, fractions allowed (0.5 requests per second is one every 2 s). */
export function checkPositiveNumber(max: number) {
  const input = { anyOf: [{ type: 'number', exclusiveMinimum: 0, maximum: max }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };
  return withInput(input, (value: unknown): Checked<number> => {
    if (value === undefined) return fail(REQUIRED);
    const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > max) {
      return fail(`must be a number above 0 and at most ${max}, got ${describe(value)}`);
    }
    return ok(n);
  });
}

export function checkBoolean(value: unknown): Checked<boolean> {
  if (value === true || value === 'true') return ok(true);
  if (value === false || value === 'false') return ok(false);
  return fail(`must be true or false, got ${describe(value)}`);
}
checkBoolean.input = { anyOf: [{ type: 'boolean' }, { enum: ['true', 'false'] }, FROM_ENV] };

export function checkList<T>(check: Check<T>, opts: { min?: number; max?: number; secret?: boolean } = {}) {
  const input = {
    type: 'array',
    items: check.input ?? {},
    ...(opts.min !== undefined && { minItems: opts.min }),
    ...(opts.max !== undefined && { maxItems: opts.max }),
  };
  return withInput(input, (value: unknown): Checked<T[]> => {
    if (value === undefined) return fail(REQUIRED);
    if (!Array.isArray(value)) return fail(`must be a list, got ${opts.secret === true ? describeSecret(value) : describe(value)}`);
    const problems: Problem[] = [];
    if (opts.min !== undefined && value.length < opts.min) {
      problems.push({ path: [], message: `needs at least ${opts.min} ${opts.min === 1 ? 'entry' : 'entries'}, got ${value.length}` });
    }
    if (opts.max !== undefined && value.length > opts.max) {
      problems.push({ path: [], message: `at most ${opts.max} entries, got ${value.length}` });
    }
    const out: T[] = [];
    value.forEach((item, i) => {
      const r = check(item);
      if (r.ok) out.push(r.value);
      else for (const p of r.problems) problems.push({ path: [i, ...p.path], message: p.message });
    });
    return problems.length > 0 ? { ok: false, problems } : ok(out);
  });
}

export function oneOf<T extends string>(allowed: readonly T[]) {
  return withInput(orFromEnv({ enum: allowed }), (value: unknown): Checked<T> => {
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return ok(value as T);
    return fail(`must be one of ${allowed.join(', ')}, got ${describe(value)}`);
  });
}

export function checkFiniteNumber(value: unknown): Checked<number> {
  if (typeof value === 'number' && Number.isFinite(value)) return ok(value);
  return fail(`must be a number, got ${describe(value)}`);
}

/** A fraction from 0 to 1 (also as a string, for `${NAME}` values). */
export function checkFraction(value: unknown): Checked<number> {
  const n = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 1) {
    return fail(`must be a fraction from 0 to 1 (0.1 keeps one event in ten), got ${describe(value)}`);
  }
  return ok(n);
}
checkFraction.input = { anyOf: [{ type: 'number', minimum: 0, maximum: 1 }, { type: 'string', pattern: '^\\d+(\\.\\d+)?$' }, FROM_ENV] };
