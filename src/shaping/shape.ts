// A destination's router-side shaping (docs/webhooks.md#shaping): `filter`, `sample`,
// `dropProperties` / `allowProperties`, then `transform`, in that order. Compiled once
// per config load; applied per call to the webhook body object, which every
// destination of the call shares and none modifies. Pure, and synchronous unless an
// expression needs JSONata's own (asynchronous) evaluation.
import { SwitchyardError } from '../errors.js';
import { compileExpression, effectiveBoolean, isJsonataFunction } from './expression.js';
import type { Evaluated, Expression } from './expression.js';
import { applyPropertyList, compilePropertyList, propertyPathProblem } from './property-lists.js';
import type { PropertyList } from './property-lists.js';
import { samplePoint, sampleKeeps } from './sample.js';

/** The settings keys, as the config holds them (docs/configuration.md#destinations). */
export interface ShapingSettings {
  filter?: string;
  sample?: number;
  dropProperties?: string[];
  allowProperties?: string[];
  transform?: string;
}

export interface Shaping {
  filter?: Expression;
  sample?: number;
  properties?: PropertyList;
  transform?: Expression;
  /** Whether the bytes sent differ from the call's shared body (a property list or a transform). */
  reshapes: boolean;
}

/**
 * The largest body a transform or a property list may produce. NOTE: far above any
 * sound result (a call is at most 32 KB) and far below what one Kafka record may hold,
 * so a runaway transform (`$pad("", 1e8)`) fails that destination instead of the
 * router's send.
 */
export const MAX_SHAPED_BODY_BYTES = 256 * 1024;

export type FilterStage = 'filter' | 'transform';

/** What a destination gets for one call. */
export type Shaped =
  /** Sent: its own bytes, or (`body` absent) the call's shared body. */
  | { kind: 'send'; body?: Buffer }
  | { kind: 'filtered'; reason: 'destination_filter' | 'sample' }
  /** An expression failed at run time, or the transform gave no JSON object or list: not sent. */
  | { kind: 'failed'; stage: FilterStage; error: string };

/** A problem with one of the keys, relative to `settings`. */
export interface ShapingProblem {
  path: (string | number)[];
  message: string;
}

export const SHAPING_KEYS = ['filter', 'sample', 'dropProperties', 'allowProperties', 'transform'] as const;

/** Whether any shaping key is set. */
export function hasShaping(settings: ShapingSettings): boolean {
  return SHAPING_KEYS.some((key) => settings[key] !== undefined);
}

/** Compile errors and bad paths: what check-config and a reload refuse. */
export function shapingProblems(settings: ShapingSettings): ShapingProblem[] {
  const problems: ShapingProblem[] = [];
  for (const key of ['filter', 'transform'] as const) {
    const text = settings[key];
    if (text === undefined) continue;
    const compiled = compileExpression(text);
    if (!compiled.ok) problems.push({ path: [key], message: `is not a JSONata expression that compiles: ${compiled.error}; fix the expression (see docs/webhooks.md#shaping)` });
  }
  if (settings.dropProperties !== undefined && settings.allowProperties !== undefined) {
    problems.push({ path: ['allowProperties'], message: 'give dropProperties or allowProperties, not both: allowProperties keeps only the listed keys of properties and traits, dropProperties removes the listed paths' });
  }
  for (const list of ['dropProperties', 'allowProperties'] as const) {
    settings[list]?.forEach((path, i) => {
      const problem = propertyPathProblem(list, path);
      if (problem !== undefined) problems.push({ path: [list, i], message: problem });
    });
  }
  return problems;
}

/** Thrown by compileShaping for settings the loader would have refused (a config built by hand). */
export class ShapingSettingsError extends SwitchyardError {
  readonly code = 'SHAPING_SETTINGS';
  readonly retriable = false;
}

/** The compiled shaping of a destination; undefined when it sets none of the keys. */
export function compileShaping(settings: ShapingSettings): Shaping | undefined {
  if (!hasShaping(settings)) return undefined;
  const problems = shapingProblems(settings);
  if (problems.length > 0) throw new ShapingSettingsError(problems.map((p) => `${p.path.join('.')}: ${p.message}`).join('; '));
  const expression = (text: string): Expression => {
    const compiled = compileExpression(text);
    if (!compiled.ok) throw new ShapingSettingsError(compiled.error);
    return compiled.expression;
  };
  const shaping: Shaping = { reshapes: false };
  if (settings.filter !== undefined) shaping.filter = expression(settings.filter);
  if (settings.sample !== undefined) shaping.sample = settings.sample;
  if (settings.dropProperties !== undefined) shaping.properties = compilePropertyList('drop', settings.dropProperties);
  else if (settings.allowProperties !== undefined) shaping.properties = compilePropertyList('allow', settings.allowProperties);
  if (settings.transform !== undefined) shaping.transform = expression(settings.transform);
  shaping.reshapes = shaping.properties !== undefined || shaping.transform !== undefined;
  return shaping;
}

/**
 * One call as the shaping of its destinations sees it: the body object (made on first
 * use, once for all destinations) and the messageId's sample point (likewise).
 */
export class ShapingInput {
  private bodyObject: Record<string, unknown> | undefined;
  private point: number | undefined;

  constructor(
    private readonly makeBody: () => Record<string, unknown>,
    readonly messageId: string,
  ) {}

  get body(): Record<string, unknown> {
    return (this.bodyObject ??= this.makeBody());
  }

  get samplePoint(): number {
    return (this.point ??= samplePoint(this.messageId));
  }
}

const SEND_SHARED: Shaped = { kind: 'send' };
const FILTERED: Shaped = { kind: 'filtered', reason: 'destination_filter' };
const SAMPLED_OUT: Shaped = { kind: 'filtered', reason: 'sample' };

/** What `shaping` makes of this call for its destination. */
export function shape(shaping: Shaping, input: ShapingInput): Shaped | Promise<Shaped> {
  if (shaping.filter === undefined) return afterFilter(shaping, input);
  const evaluated = shaping.filter.evaluate(input.body);
  return evaluated instanceof Promise ? evaluated.then((e) => filtered(shaping, input, e)) : filtered(shaping, input, evaluated);
}

function filtered(shaping: Shaping, input: ShapingInput, evaluated: Evaluated): Shaped | Promise<Shaped> {
  if (!evaluated.ok) return { kind: 'failed', stage: 'filter', error: evaluated.error };
  return effectiveBoolean(evaluated.value) ? afterFilter(shaping, input) : FILTERED;
}

function afterFilter(shaping: Shaping, input: ShapingInput): Shaped | Promise<Shaped> {
  if (shaping.sample !== undefined && !sampleKeeps(input.samplePoint, shaping.sample)) return SAMPLED_OUT;
  if (!shaping.reshapes) return SEND_SHARED;
  const listed = shaping.properties !== undefined ? applyPropertyList(input.body, shaping.properties) : input.body;
  if (shaping.transform === undefined) return bodyBytes(listed, 'transform', false);
  const evaluated = shaping.transform.evaluate(listed);
  return evaluated instanceof Promise ? evaluated.then((e) => transformed(e, true)) : transformed(evaluated, false);
}

function transformed(evaluated: Evaluated, byJsonata: boolean): Shaped {
  if (!evaluated.ok) return { kind: 'failed', stage: 'transform', error: evaluated.error };
  const value = evaluated.value;
  if (typeof value !== 'object' || value === null || isJsonataFunction(value)) {
    return { kind: 'failed', stage: 'transform', error: `the transform gave ${resultKind(value)}, not a JSON object or list; make its result an object such as {"user": userId}` };
  }
  return bodyBytes(value, 'transform', byJsonata);
}

function resultKind(value: unknown): string {
  if (value === undefined) return 'nothing (no part of the expression matched this call)';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'a function';
  return `a ${typeof value}`;
}

/** A JSONata function inside a result is left out, as JSON.stringify leaves out a JavaScript one. */
function withoutFunctions(_key: string, value: unknown): unknown {
  return typeof value === 'object' && value !== null && isJsonataFunction(value) ? undefined : value;
}

function bodyBytes(value: object, stage: FilterStage, byJsonata: boolean): Shaped {
  let text: string;
  try {
    text = byJsonata ? JSON.stringify(value, withoutFunctions) : JSON.stringify(value);
  } catch (error) {
    return { kind: 'failed', stage, error: `the result cannot be written as JSON (${(error as Error).message})` };
  }
  const body = Buffer.from(text, 'utf8');
  if (body.length > MAX_SHAPED_BODY_BYTES) {
    return { kind: 'failed', stage, error: `the result is ${body.length} bytes, over the ${MAX_SHAPED_BODY_BYTES}-byte limit of a shaped body` };
  }
  return { kind: 'send', body };
}
