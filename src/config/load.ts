// Reading a config file: YAML → `${ENV}` interpolation → KAFKA_BROKERS override →
// schema → cross-checks. Every problem found on the way is collected, so an operator
// fixes the whole file in one go; each is one line `<file>: <path>: <what to do>`.

import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseDocument, type YAMLError } from 'yaml';
import { MASK, secretTextsOf } from './mask.js';
import { includePlanFiles } from './plan-files.js';
import { configSchema, crossCheck, isPlainObject, type Config, type IssuePath, type Problem, type ProxyConfig } from './schema.js';
import { readTlsMaterial } from './tls-files.js';

/** `files`: the other files the config was read from (tracking plans' `file`), watched with it. */
export type LoadResult = { ok: true; config: Config; files: string[] } | { ok: false; errors: string[] };

type Env = Record<string, string | undefined>;

export interface LoadOptions {
  /**
   * False for a command that serves no admin API (`dlq list`, `replay`, `trace`): an
   * `admin.token` whose variable is not set is then left out instead of refused, so an
   * operator needs only the secrets the command uses (docs/cli.md#operator-commands).
   */
  adminApi?: boolean;
}

/** `destinations[0].settings.webhooks[1].url`; `(top level)` for the root. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_][\w-]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out === '' ? '(top level)' : out;
}

/** Paths of secrets (docs/operations.md#security), as formatPath writes them. */
const SECRET_PATH = /^(admin\.token|kafka\.sasl\.password|kafka\.ssl\.(key|cert|passphrase|pfx)|sources\[\d+\]\.writeKey|destinations\[\d+\]\.settings\.sharedSecrets?(\[\d+\])?)$/;

// `$${` (a literal "${"), `${NAME}`, `${NAME:-default}`, or a "${" that is none of them.
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\{/g;

/** Where a value came out empty from a `${NAME}` whose variable is set but empty, and that NAME. */
type EmptyReferences = Map<string, string>;

function interpolateString(text: string, env: Env, path: IssuePath, problems: Problem[], empty: EmptyReferences): string {
  let emptyName: string | undefined;
  const out = text.replace(REFERENCE, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === '$${') return '${';
    if (name === undefined) {
      problems.push({
        path,
        message: 'has a "${" that is not ${NAME} or ${NAME:-default}; write $${ for a literal "${"',
      });
      return match;
    }
    const value = env[name];
    // Like the shell's ${NAME:-default}: an empty variable also takes the default,
    // since Kubernetes manifests often set a variable to "" rather than omit it.
    if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
    if (value === undefined) {
      // NOTE: a secret gets no default: a default token is a token everyone knows.
      const advice = SECRET_PATH.test(formatPath(path)) ? 'set it (a secret has no default)' : `set it, or give a default with \${${name}:-value}`;
      problems.push({ path, message: `environment variable ${name} is not set; ${advice}` });
      return match;
    }
    if (value === '') emptyName = name;
    return value;
  });
  if (out === '' && emptyName !== undefined) empty.set(formatPath(path), emptyName);
  return out;
}

/**
 * A copy of the parsed document with `${NAME}` replaced in string values (never in
 * keys). It runs after YAML parsing, so a value containing quotes, colons or newlines
 * cannot change the document's structure.
 */
function interpolate(value: unknown, env: Env, path: IssuePath, problems: Problem[], ancestors: Set<unknown>, empty: EmptyReferences): unknown {
  if (typeof value === 'string') return interpolateString(value, env, path, problems, empty);
  const isCollection = Array.isArray(value) || (isPlainObject(value) && [Object.prototype, null].includes(Object.getPrototypeOf(value)));
  if (!isCollection) return value;
  // A YAML alias can point at its own ancestor (`a: &x [*x]`); walking that would never end.
  if (ancestors.has(value)) {
    problems.push({ path, message: 'refers to itself through a YAML alias; write the value out' });
    return undefined;
  }
  ancestors.add(value);
  const copy = Array.isArray(value)
    ? value.map((item, i) => interpolate(item, env, [...path, i], problems, ancestors, empty))
    : Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, interpolate(v, env, [...path, k], problems, ancestors, empty)]),
      );
  ancestors.delete(value);
  return copy;
}

// One syntax slip makes the parser report a cascade of follow-on errors; the first few
// locate it, the rest are noise.
const MAX_YAML_ERRORS = 5;

function yamlProblem(file: string, lines: readonly string[], error: YAMLError): string {
  // With prettyErrors the message ends with " at line L, column C:" and a code excerpt;
  // the position goes in front instead, so the line keeps the `<file>: <where>:` form.
  const [firstLine = error.message] = error.message.split('\n');
  const what = firstLine.replace(/ at line \d+, column \d+:?$/, '');
  const at = error.linePos?.[0];
  const where = at ? `line ${at.line}, column ${at.col}` : '(YAML)';
  // NOTE: `{ key: ${NAME} }` is the classic slip: inside { } and [ ] YAML reads "{" and
  // "}" as structure, so a reference there must be quoted.
  const source = at ? (lines[at.line - 1] ?? '') : '';
  const hint = /[{[].*\$\{/.test(source) ? '; inside { } or [ ], quote values that use ${...}, e.g. "${NAME}"' : '';
  return `${file}: ${where}: ${what}; fix the YAML syntax${hint}`;
}

const samePath = (a: IssuePath, b: readonly PropertyKey[]) => a.length === b.length && a.every((k, i) => k === b[i]);

/** Problems from the schema, one per unknown key rather than one per object. */
function schemaProblems(raw: unknown): { config?: Config; problems: Problem[] } {
  const result = configSchema.safeParse(raw);
  if (result.success) return { config: result.data, problems: [] };
  const problems: Problem[] = [];
  for (const issue of result.error.issues) {
    const path = issue.path.map((k) => (typeof k === 'symbol' ? String(k) : k));
    if (issue.code === 'unrecognized_keys') {
      // schema.ts puts one message per key in `message`, one per line, in key order.
      const messages = issue.message.split('\n');
      issue.keys.forEach((key, i) => {
        problems.push({ path: [...path, key], message: messages[i] ?? `unknown key ${JSON.stringify(key)}` });
      });
    } else {
      problems.push({ path, message: issue.message });
    }
  }
  return { problems };
}

const SECTIONS = ['kafka', 'gateway', 'admin', 'delivery', 'shutdownTimeout', 'log', 'sources', 'destinations', 'audiences', 'trackingPlans'];

/**
 * Problems grouped by where they are in a file laid out like docs/configuration.md (section, then
 * entry), so the list reads top to bottom; within one place they keep the order found.
 */
function sortByPlace(problems: Problem[]): Problem[] {
  const place = (p: Problem): [number, number] => {
    const section = SECTIONS.indexOf(String(p.path[0]));
    const entry = p.path[1];
    return [section === -1 ? SECTIONS.length : section, typeof entry === 'number' ? entry : -1];
  };
  return problems
    .map((p) => ({ p, at: place(p) }))
    .sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1])
    .map(({ p }) => p);
}

const EMPTY_FILE =
  'is empty; a config needs at least one source (and kafka.brokers, unless localhost:9092 or KAFKA_BROKERS is right); start from config/example.yaml';

export function parseConfigText(text: string, file: string, env: Env, options: LoadOptions = {}): LoadResult {
  const doc = parseDocument(text, { prettyErrors: true });
  // Warnings (an unknown `!tag`, say) are refused too: a config that means something
  // other than it looks is worse than one that does not load.
  const yamlErrors = [...doc.errors, ...doc.warnings];
  if (yamlErrors.length > 0) {
    const lines = text.split(/\r?\n/);
    return { ok: false, errors: yamlErrors.slice(0, MAX_YAML_ERRORS).map((e) => yamlProblem(file, lines, e)) };
  }

  let parsed: unknown;
  try {
    parsed = doc.toJS();
  } catch (error) {
    // yaml throws here only for alias abuse (a "billion laughs" document).
    return { ok: false, errors: [`${file}: (YAML): ${(error as Error).message}; write the values out instead of aliasing them`] };
  }

  // An empty file (or one of comments only) is nearly always a mistake, such as a
  // ConfigMap key that did not mount; defaults alone route nothing.
  if (parsed === null || parsed === undefined) return { ok: false, errors: [`${file}: (file): ${EMPTY_FILE}`] };

  if (options.adminApi === false) parsed = withoutUnsetAdminToken(parsed, env);
  const envProblems: Problem[] = [];
  const emptyReferences: EmptyReferences = new Map();
  let raw = interpolate(parsed, env, [], envProblems, new Set(), emptyReferences);

  // docs/cli.md: KAFKA_BROKERS (comma-separated host:port) overrides kafka.brokers.
  // An empty variable counts as unset, as Kubernetes manifests often leave it "".
  const override = env.KAFKA_BROKERS?.trim();
  let overridden = false;
  if (override && isPlainObject(raw) && (raw.kafka === undefined || isPlainObject(raw.kafka))) {
    const brokers = override.split(',').map((b) => b.trim()).filter((b) => b !== '');
    raw = { ...raw, kafka: { ...raw.kafka, brokers } };
    overridden = true;
  }

  const included = includePlanFiles(raw, file);
  raw = included.raw;
  const { config, problems } = schemaProblems(raw);
  const all = [
    ...envProblems,
    ...included.problems,
    // A value whose variable is missing would also fail its own check; one error is enough.
    ...[...problems, ...crossCheck(raw)].filter((p) => !envProblems.some((e) => samePath(e.path, p.path))).map((p) => inPlanFile(p, included.fromFile)),
  ];
  if (all.length === 0 && config !== undefined) {
    all.push(...loadTlsFiles(config, dirname(file)));
    const fromEnv = environmentProxy(env);
    if (config.delivery.proxy === undefined && fromEnv !== undefined) {
      if (URL.canParse(fromEnv.url) && /^https?:$/.test(new URL(fromEnv.url).protocol)) config.delivery.proxy = fromEnv;
      else all.push({ path: ['delivery', 'proxy'], message: 'comes from HTTPS_PROXY or HTTP_PROXY, which is not an http:// or https:// URL; fix the variable (e.g. http://proxy.internal:3128) or set delivery.proxy' });
    }
    if (all.length === 0) return { ok: true, config, files: included.files };
  }

  // NOTE: messages at secret paths never quote the value (schema.ts); this also takes out
  // any secret a message elsewhere would quote (a secret pasted under the wrong key).
  const secrets = secretTextsOf(raw);
  const errors = sortByPlace(all).map((p) => {
    const where = formatPath(p.path);
    const fromEnv = overridden && p.path[0] === 'kafka' && p.path[1] === 'brokers' ? ' (the value comes from KAFKA_BROKERS)' : '';
    const emptyName = emptyReferences.get(where);
    const message =
      emptyName !== undefined && p.message === 'must not be empty'
        ? `is empty: the environment variable ${emptyName} is set but empty; give it a value`
        : p.message;
    return `${file}: ${where}: ${withoutSecrets(message, secrets)}${fromEnv}`;
  });
  return { ok: false, errors: [...new Set(errors)] };
}

/** A problem inside a plan read from its own file says so: its path is the plan's, its text the file's. */
function inPlanFile(problem: Problem, fromFile: ReadonlyMap<number, string>): Problem {
  const [section, index, key] = problem.path;
  if (section !== 'trackingPlans' || typeof index !== 'number' || key === undefined || key === 'id' || key === 'file') return problem;
  const planFile = fromFile.get(index);
  return planFile === undefined ? problem : { ...problem, message: `${problem.message} (written in ${planFile})` };
}

/**
 * The egress proxy of the environment (docs/webhooks.md#egress-proxy), for a config
 * that sets no `delivery.proxy`: HTTPS_PROXY, else HTTP_PROXY (lower-case names too, as
 * curl reads them), for every request; NO_PROXY's hosts bypass it. `env` is what the
 * composition root passed in, never process.env read here.
 */
function environmentProxy(env: Env): ProxyConfig | undefined {
  const pick = (name: string) => (env[name.toLowerCase()] ?? env[name])?.trim() || undefined;
  const url = pick('HTTPS_PROXY') ?? pick('HTTP_PROXY');
  if (url === undefined) return undefined;
  const noProxy = (pick('NO_PROXY') ?? '').split(/[,\s]+/).filter((entry) => entry !== '');
  return { url, noProxy, fromEnvironment: true };
}

/**
 * Reads the PEM files of each destination's `settings.tls` into its `material`
 * (tls-files.ts): at load, and so at every reload. Problems are at the key's path.
 */
function loadTlsFiles(config: Config, baseDir: string): Problem[] {
  const problems: Problem[] = [];
  config.destinations.forEach((destination, i) => {
    const { tls } = destination.settings;
    if (tls === undefined) return;
    const read = readTlsMaterial(tls, baseDir);
    if (read.ok) tls.material = read.material;
    else problems.push(...read.problems.map((p) => ({ path: ['destinations', i, 'settings', 'tls', ...p.path], message: p.message })));
  });
  return problems;
}

/** The document without `admin.token` when it is exactly a `${NAME}` whose variable is not set. */
function withoutUnsetAdminToken(parsed: unknown, env: Env): unknown {
  if (!isPlainObject(parsed) || !isPlainObject(parsed.admin) || typeof parsed.admin.token !== 'string') return parsed;
  const reference = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(parsed.admin.token);
  if (reference === null || env[reference[1]!] !== undefined) return parsed;
  const { token: _unset, ...admin } = parsed.admin;
  return { ...parsed, admin };
}

/** Secrets shorter than this are not searched for in messages (they would match by chance); their own messages never quote them. */
const MIN_MASKED_IN_MESSAGES = 4;

function withoutSecrets(message: string, secrets: readonly string[]): string {
  let out = message;
  for (const secret of secrets) {
    if (secret.length >= MIN_MASKED_IN_MESSAGES && out.includes(secret)) out = out.split(secret).join(MASK);
  }
  return out;
}

export function loadConfigFile(file: string, env: Env, options: LoadOptions = {}): LoadResult {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT'
        ? 'no such file; pass --config PATH or set SWITCHYARD_CONFIG (see config/example.yaml)'
        : code === 'EACCES'
          ? 'permission denied; make the file readable by this user'
          : code === 'EISDIR'
            ? 'is a directory; give the path of a YAML file'
            : `cannot be read (${(error as Error).message})`;
    return { ok: false, errors: [`${file}: (file): ${why}`] };
  }
  return parseConfigText(text, file, env, options);
}
