// What every check of the config is made of: the problems it reports, how a value reads in
// a message, and the JSON Schema of what it accepts (config/switchyard.schema.json).

// Check functions: value in, value or problems out.

export type IssuePath = (string | number)[];
export interface Problem {
  path: IssuePath;
  message: string;
}
export type Checked<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

export const ok = <T>(value: T): Checked<T> => ({ ok: true, value });
export const fail = (message: string, path: IssuePath = []): { ok: false; problems: Problem[] } => ({
  ok: false,
  problems: [{ path, message }],
});

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How a value reads in an error message: `"ftp://x"`, `number 42`, `a list`. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  }
  return `${typeof value} ${String(value)}`;
}

/**
 * How a secret's value reads in an error message: its type only. NOTE: a value at a
 * secret path is never quoted (check-config output and the log of a refused reload end
 * up in CI logs and log stores); docs/operations.md#security.
 */
export function describeSecret(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value} (not shown: it is a secret)`;
}

/**
 * Static webhook headers that look like credentials (`Authorization`, `X-Api-Key`,
 * `X-Auth-Token`, ...). Receivers often authenticate with one of these instead of the
 * signature; masking a harmless header by mistake costs less than printing a token.
 */
export const SENSITIVE_NAME = /auth|token|secret|key|passw|cookie|session|credential|signature/i;

// What each check accepts, as JSON Schema: config/switchyard.schema.json (npm run
// schema) is generated from these, so an editor can check a file as it is written.
// It describes the YAML as written, before `${NAME}` is replaced: any value may then
// be a reference, which only the loader can resolve and check.

export type InputSchema = Record<string, unknown>;
/** A check function, with the JSON Schema of what it accepts when it has one. */
export type Check<T> = ((value: unknown) => Checked<T>) & { input?: InputSchema };

export const withInput = <T>(input: InputSchema, check: (value: unknown) => Checked<T>): Check<T> =>
  Object.assign(check, { input });

export const ENV_REFERENCE_INPUT: InputSchema = {
  type: 'string',
  pattern: '\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}',
  description: 'a ${NAME} or ${NAME:-default} reference, replaced by the environment variable NAME when the file is loaded',
};
// Shared definitions sit once in the generated file's `$defs` (see configSchema in ../schema.ts).
export const FROM_ENV: InputSchema = { $ref: '#/$defs/envReference' };
export const orFromEnv = (input: InputSchema): InputSchema => ({ anyOf: [input, FROM_ENV] });

/** `[Hh][Tt]...`: JSON Schema patterns take no flags, so case is spelled out. */
export const anyCase = (text: string) =>
  text.replace(/[a-z]/gi, (c) => `[${c.toUpperCase()}${c.toLowerCase()}]`);

export const REQUIRED = 'is required; add it';

export function prefixed(problems: Problem[], prefix: IssuePath): Problem[] {
  return problems.map((p) => ({ path: [...prefix, ...p.path], message: p.message }));
}
