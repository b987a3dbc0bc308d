// The JSON Schemas of a tracking plan (docs/tracking-plans.md), compiled with ajv: draft
// 2020-12 unless a schema's `$schema` names draft-07. Compiled once per schema text and
// kept, so the config's check at load and the router's table after it share the work,
// and a reload compiles only the schemas that changed.
import { Ajv } from 'ajv';
import type { ErrorObject, Options, ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// NOTE: ajv-formats is CommonJS; under NodeNext its plugin is the module's `default`.
const addFormats = addFormatsModule.default;

/** A JSON Schema as written in the config: an object, or `true` / `false`. */
export type JsonSchema = Record<string, unknown> | boolean;

/** A compiled schema: the data's errors, or none. */
export type SchemaValidator = (data: unknown) => readonly ErrorObject[];

export type CompiledSchema = { ok: true; validate: SchemaValidator } | { ok: false; error: string };

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;
const DRAFT_2020 = /^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;

// NOTE: `allErrors` so every violation of a call is reported, not the first; `verbose` so
// an error carries the schema beside it (the expected type of a missing property). Strict
// about keywords: a misspelt `requird` would otherwise check nothing, silently; strict
// about types and tuples it is not, as plans exported from other tools seldom are.
const OPTIONS: Options = { allErrors: true, verbose: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, allowUnionTypes: true };

interface Validators {
  draft07: Ajv;
  draft2020: Ajv2020;
}

function createValidators(): Validators {
  const draft07 = new Ajv(OPTIONS);
  const draft2020 = new Ajv2020(OPTIONS);
  addFormats(draft07);
  addFormats(draft2020);
  return { draft07, draft2020 };
}

let validators: Validators | undefined;
const compiled = new Map<string, CompiledSchema>();
/** Past this many distinct schemas the cache starts over (a long run of reloads, each changing every schema). */
const MAX_CACHED = 20_000;

/** The schema compiled (from the cache when the same text was compiled before), or why it does not compile. */
export function compileSchema(schema: unknown): CompiledSchema {
  if (typeof schema !== 'boolean' && (typeof schema !== 'object' || schema === null || Array.isArray(schema))) {
    return { ok: false, error: `must be a JSON Schema (a mapping such as { type: object, properties: {…} }, or true / false), got ${schema === null ? 'null' : Array.isArray(schema) ? 'a list' : typeof schema}` };
  }
  const text = JSON.stringify(schema);
  const known = compiled.get(text);
  if (known !== undefined) return known;
  const result = compileFresh(schema as JsonSchema);
  if (compiled.size >= MAX_CACHED) {
    compiled.clear();
    validators = undefined;
  }
  compiled.set(text, result);
  return result;
}

function compileFresh(schema: JsonSchema): CompiledSchema {
  const draft = typeof schema === 'object' ? schema.$schema : undefined;
  validators ??= createValidators();
  let ajv: Ajv | Ajv2020;
  if (draft === undefined || (typeof draft === 'string' && DRAFT_2020.test(draft))) ajv = validators.draft2020;
  else if (typeof draft === 'string' && DRAFT_07.test(draft)) ajv = validators.draft07;
  else {
    return {
      ok: false,
      error: `its $schema ${JSON.stringify(draft)} is not a draft Switchyard reads; use "https://json-schema.org/draft/2020-12/schema" (the default, when $schema is left out) or "http://json-schema.org/draft-07/schema#"`,
    };
  }
  // A copy: ajv keeps the object it compiled, and the config's own stays as loaded.
  const own: JsonSchema = typeof schema === 'boolean' ? schema : (JSON.parse(JSON.stringify(schema)) as Record<string, unknown>);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(own);
  } catch (error) {
    return { ok: false, error: `is not a JSON Schema that compiles: ${error instanceof Error ? error.message : String(error)}; fix the schema (see docs/tracking-plans.md#schemas)` };
  } finally {
    // NOTE: out of the instance's registry, so another version of a schema with the same
    // `$id` (after a reload) compiles too; the compiled function keeps what it needs.
    if (typeof own === 'object') ajv.removeSchema(own);
  }
  return { ok: true, validate: (data) => (validate(data) ? NO_ERRORS : (validate.errors ?? NO_ERRORS)) };
}

const NO_ERRORS: readonly ErrorObject[] = [];

export type { ErrorObject } from 'ajv';
