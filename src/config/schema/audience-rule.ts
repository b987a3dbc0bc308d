// The audience rule grammar (docs/configuration.md#audiences): `all`, `any`, `not`, trait and event
// rules, checked by hand with messages that point into the rule, and its JSON Schema.

import { checkFiniteNumber, checkInt, checkList, checkText } from './basic-checks.js';
import { describe, fail, isPlainObject, ok, prefixed } from './check.js';
import type { Checked, InputSchema } from './check.js';
import { checkDuration } from './quantities.js';
import { unknownKeyProblems } from './unknown-keys.js';

export interface TraitRule {
  trait: string;
  equals?: unknown;
  in?: unknown[];
  exists?: boolean;
  gt?: number;
  gte?: number;
  lt?: number;
  lte?: number;
}

/** `within: 30d` in YAML becomes `withinMs`. */
export interface EventRule {
  event: string;
  atLeast: number;
  withinMs?: number;
}

export type AudienceRule =
  | { all: AudienceRule[] }
  | { any: AudienceRule[] }
  | { not: AudienceRule }
  | TraitRule
  | EventRule;

// Audience rules are recursive and their kind is told by which key is present, so
// they are checked by hand: a zod union would answer "Invalid input" for a typo deep
// inside an `all:`.

const RULE_KINDS = ['all', 'any', 'not', 'trait', 'event'] as const;
const TRAIT_OPERATORS = ['equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] as const;
// Deep enough for any real rule; stops a pathological file before the stack does.
const MAX_RULE_DEPTH = 32;

export function checkAudienceRule(value: unknown, depth = 0): Checked<AudienceRule> {
  const shape = `a rule is a mapping with exactly one of: ${RULE_KINDS.join(', ')}`;
  if (!isPlainObject(value)) return fail(`${shape}; got ${describe(value)}`);
  if (depth > MAX_RULE_DEPTH) return fail(`rules are nested more than ${MAX_RULE_DEPTH} deep`);
  const kinds = RULE_KINDS.filter((k) => k in value);
  const [kind] = kinds;
  if (kind === undefined || kinds.length > 1) {
    const got = kinds.length > 1 ? `got ${kinds.join(' and ')}` : `got keys ${Object.keys(value).join(', ') || '(none)'}`;
    return fail(`${shape}; ${got}`);
  }
  switch (kind) {
    case 'all':
    case 'any': {
      const problems = unknownKeyProblems(value, [kind]);
      const list = checkList((item) => checkAudienceRule(item, depth + 1), { min: 1 })(value[kind]);
      if (!list.ok) problems.push(...prefixed(list.problems, [kind]));
      if (problems.length > 0 || !list.ok) return { ok: false, problems };
      return ok(kind === 'all' ? { all: list.value } : { any: list.value });
    }
    case 'not': {
      const problems = unknownKeyProblems(value, ['not']);
      const inner = checkAudienceRule(value.not, depth + 1);
      if (!inner.ok) problems.push(...prefixed(inner.problems, ['not']));
      if (problems.length > 0 || !inner.ok) return { ok: false, problems };
      return ok({ not: inner.value });
    }
    case 'trait':
      return checkTraitRule(value);
    case 'event':
      return checkEventRule(value);
  }
}

function checkTraitRule(value: Record<string, unknown>): Checked<TraitRule> {
  const problems = unknownKeyProblems(value, ['trait', ...TRAIT_OPERATORS]);
  const trait = checkText(value.trait);
  if (!trait.ok) problems.push(...prefixed(trait.problems, ['trait']));
  const operators = TRAIT_OPERATORS.filter((op) => op in value);
  if (operators.length !== 1) {
    problems.push({
      path: [],
      message: `a trait rule needs exactly one operator of ${TRAIT_OPERATORS.join(', ')}; got ${operators.length === 0 ? 'none' : operators.join(' and ')}`,
    });
  }
  const operands: Partial<Record<(typeof TRAIT_OPERATORS)[number], unknown>> = {};
  for (const op of operators) {
    const operand = value[op];
    let r: Checked<unknown>;
    if (op === 'equals') {
      r = operand === undefined || operand === null || typeof operand === 'object'
        ? fail(`must be a string, number or boolean, got ${describe(operand)}`)
        : ok(operand);
    } else if (op === 'in') {
      r = checkList((item) => (item !== null && typeof item === 'object' ? fail(`must be a string, number or boolean, got ${describe(item)}`) : ok(item)), { min: 1 })(operand);
    } else if (op === 'exists') {
      r = typeof operand === 'boolean' ? ok(operand) : fail(`must be true or false, got ${describe(operand)}`);
    } else {
      r = checkFiniteNumber(operand);
    }
    if (!r.ok) problems.push(...prefixed(r.problems, [op]));
    else operands[op] = r.value;
  }
  if (problems.length > 0 || !trait.ok) return { ok: false, problems };
  // Each operand was checked above against its operator's type.
  return ok({ trait: trait.value, ...operands } as TraitRule);
}

function checkEventRule(value: Record<string, unknown>): Checked<EventRule> {
  const problems = unknownKeyProblems(value, ['event', 'atLeast', 'within']);
  const event = checkText(value.event);
  if (!event.ok) problems.push(...prefixed(event.problems, ['event']));
  const atLeast = checkInt(1, Number.MAX_SAFE_INTEGER)(value.atLeast);
  if (!atLeast.ok) problems.push(...prefixed(atLeast.problems, ['atLeast']));
  const within = value.within === undefined ? ok(undefined) : checkDuration(value.within);
  if (!within.ok) problems.push(...prefixed(within.problems, ['within']));
  if (problems.length > 0 || !event.ok || !atLeast.ok || !within.ok) return { ok: false, problems };
  const rule: EventRule = { event: event.value, atLeast: atLeast.value };
  if (within.value !== undefined) rule.withinMs = within.value;
  return ok(rule);
}

/** Where the rule's JSON Schema sits in the generated file: rules nest, so it refers to itself. */
export const AUDIENCE_RULE_REF: InputSchema = { $ref: '#/$defs/audienceRule' };

function ruleInput(properties: Record<string, InputSchema>, required: string[], extra: InputSchema = {}): InputSchema {
  return { type: 'object', properties, required, additionalProperties: false, ...extra };
}

const SCALAR: InputSchema = { type: ['string', 'number', 'boolean'] };
const NUMBER: InputSchema = { type: 'number' };

/** The JSON Schema of checkAudienceRule: one of the five kinds, told apart by their key. */
export const AUDIENCE_RULE_INPUT: InputSchema = {
  description: `a rule is a mapping with exactly one of: ${RULE_KINDS.join(', ')}`,
  oneOf: [
    ruleInput({ all: { type: 'array', minItems: 1, items: AUDIENCE_RULE_REF } }, ['all']),
    ruleInput({ any: { type: 'array', minItems: 1, items: AUDIENCE_RULE_REF } }, ['any']),
    ruleInput({ not: AUDIENCE_RULE_REF }, ['not']),
    // `trait` and exactly one operator.
    ruleInput(
      {
        trait: checkText.input,
        equals: SCALAR,
        in: { type: 'array', minItems: 1, items: SCALAR },
        exists: { type: 'boolean' },
        gt: NUMBER,
        gte: NUMBER,
        lt: NUMBER,
        lte: NUMBER,
      },
      ['trait'],
      { minProperties: 2, maxProperties: 2 },
    ),
    ruleInput(
      { event: checkText.input, atLeast: checkInt(1, Number.MAX_SAFE_INTEGER).input ?? {}, within: checkDuration.input },
      ['event', 'atLeast'],
    ),
  ],
};
