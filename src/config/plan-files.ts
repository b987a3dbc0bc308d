// `trackingPlans[].file` (docs/configuration.md#trackingplans): a large plan kept in a file
// of its own, YAML or JSON, beside the config. The file holds the plan's keys (events,
// identify, …, unplannedEvents); the config names the plan's `id` and the file, whose
// path is relative to the config file's directory. Read when the config is loaded, and
// watched with it, so a change to the plan's file reloads the config.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { isPlainObject } from './schema.js';
import type { Problem } from './schema.js';

export interface IncludedPlans {
  /** The document with each `file` plan's keys in place (the `file` key kept). */
  raw: unknown;
  problems: Problem[];
  /** The plan files read (absolute paths): watched beside the config file. */
  files: string[];
  /** Which plan entries came from which file (as written), for the messages. */
  fromFile: Map<number, string>;
}

export function includePlanFiles(raw: unknown, configFile: string): IncludedPlans {
  const result: IncludedPlans = { raw, problems: [], files: [], fromFile: new Map() };
  if (!isPlainObject(raw) || !Array.isArray(raw.trackingPlans)) return result;
  const plans = raw.trackingPlans.map((entry: unknown, i) => {
    if (!isPlainObject(entry) || entry.file === undefined) return entry;
    const where = ['trackingPlans', i, 'file'];
    if (typeof entry.file !== 'string' || entry.file === '') {
      result.problems.push({ path: where, message: 'must be the path of a YAML or JSON file holding the plan, relative to the config file' });
      return entry;
    }
    const path = resolve(dirname(configFile), entry.file);
    result.files.push(path);
    const read = readPlan(path);
    if (!read.ok) {
      result.problems.push({ path: where, message: read.message });
      // No `events: is required` after it: the file is the problem.
      return { events: {}, ...entry };
    }
    const twice = Object.keys(read.plan).filter((key) => key !== 'file' && Object.hasOwn(entry, key));
    for (const key of twice) result.problems.push({ path: ['trackingPlans', i, key], message: `is also in ${entry.file}: give each key of the plan in one place` });
    if (Object.hasOwn(read.plan, 'file')) result.problems.push({ path: where, message: `${entry.file} has a "file" key of its own: a plan file cannot name another` });
    result.fromFile.set(i, entry.file);
    return { ...read.plan, ...entry };
  });
  result.raw = { ...raw, trackingPlans: plans };
  return result;
}

function readPlan(path: string): { ok: true; plan: Record<string, unknown> } | { ok: false; message: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    return { ok: false, message: `${path} cannot be read (${why}); give the plan file's path relative to the config file` };
  }
  const doc = parseDocument(text, { prettyErrors: false });
  const error = [...doc.errors, ...doc.warnings][0];
  if (error !== undefined) return { ok: false, message: `${path} is not valid YAML or JSON: ${error.message.split('\n')[0]}` };
  let plan: unknown;
  try {
    plan = doc.toJS();
  } catch (caught) {
    return { ok: false, message: `${path}: ${(caught as Error).message}` };
  }
  if (!isPlainObject(plan)) return { ok: false, message: `${path} must hold a mapping of the plan's keys (events, identify, group, page, screen, common, unplannedEvents)` };
  return { ok: true, plan };
}
