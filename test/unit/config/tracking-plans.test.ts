// `trackingPlans` and `sources[].trackingPlan` (docs/configuration.md#tracking-plans):
// what the loader (so check-config and every reload) takes, and what it refuses, with
// the path of the schema that does not compile.
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCheckConfig } from '../../../src/config/check-config.js';
import { loadConfigFile, parseConfigText } from '../../../src/config/load.js';
import { watchedConfigStore } from '../../../src/config/store.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { waitFor } from '../../support/wait-for.js';

const ORDER = { type: 'object', required: ['total'], properties: { total: { type: 'number' } } };

function file(plans: unknown[], sourcePlan: unknown = { id: 'web-plan', mode: 'block' }): string {
  return stringify({
    sources: [{ id: 'web', writeKey: 'k-web', trackingPlan: sourcePlan }],
    trackingPlans: plans,
  });
}

const errorsOf = (plans: unknown[], sourcePlan?: unknown) => {
  const result = parseConfigText(file(plans, sourcePlan), 'test.yaml', {});
  return result.ok ? [] : result.errors;
};

describe('tracking plans that load', () => {
  it('keeps each schema as written, with the defaults: unplannedEvents allow, mode observe', () => {
    const result = parseConfigText(
      file(
        [
          {
            id: 'web-plan',
            events: { 'Order Completed': ORDER },
            identify: { type: 'object', properties: { email: { type: 'string', format: 'email' } } },
            common: true,
          },
        ],
        { id: 'web-plan' },
      ),
      'test.yaml',
      {},
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.trackingPlans).toEqual([
      {
        id: 'web-plan',
        events: { 'Order Completed': ORDER },
        identify: { type: 'object', properties: { email: { type: 'string', format: 'email' } } },
        common: true,
        unplannedEvents: 'allow',
      },
    ]);
    expect(result.config.sources[0]!.trackingPlan).toEqual({ id: 'web-plan', mode: 'observe' });
  });

  it('takes draft-07 schemas when their $schema says so, and draft 2020-12 keywords by default', () => {
    const draft07 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', dependencies: { a: ['b'] } };
    const draft2020 = { type: 'object', prefixItems: [{ type: 'string' }], dependentRequired: { a: ['b'] } };
    expect(errorsOf([{ id: 'web-plan', events: { A: draft07, B: draft2020 }, unplannedEvents: 'violate' }])).toEqual([]);
  });

  it('a config without plans has an empty list', () => {
    const result = parseConfigText(stringify({ sources: [{ id: 'web' }] }), 'test.yaml', {});
    expect(result.ok && result.config.trackingPlans).toEqual([]);
  });
});

describe('tracking plans refused, each with its path', () => {
  it('a schema that does not compile names the event it belongs to', () => {
    const errors = errorsOf([{ id: 'web-plan', events: { 'Order Completed': { type: 'object', properties: { total: { type: 'numbr' } } } } }]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^test\.yaml: trackingPlans\[0\]\.events\["Order Completed"\]: is not a JSON Schema that compiles: schema is invalid: data\/properties\/total\/type must be equal to one of the allowed values/);
  });

  it('an unknown keyword (a typo) is refused, not ignored', () => {
    const errors = errorsOf([{ id: 'web-plan', events: {}, identify: { type: 'object', requird: ['email'] } }]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^test\.yaml: trackingPlans\[0\]\.identify: is not a JSON Schema that compiles: .*requird/);
  });

  it('an unknown format, a draft it does not read, a schema that is not one', () => {
    const errors = errorsOf([
      {
        id: 'web-plan',
        events: { A: { type: 'string', format: 'zipcode' }, B: 'object' },
        page: { $schema: 'http://json-schema.org/draft-04/schema#' },
      },
    ]);
    expect(errors).toEqual([
      expect.stringMatching(/^test\.yaml: trackingPlans\[0\]\.events\.A: is not a JSON Schema that compiles: .*zipcode/),
      'test.yaml: trackingPlans[0].events.B: must be a JSON Schema (a mapping such as { type: object, properties: {…} }, or true / false), got string',
      expect.stringMatching(/^test\.yaml: trackingPlans\[0\]\.page: its \$schema "http:\/\/json-schema\.org\/draft-04\/schema#" is not a draft Switchyard reads/),
    ]);
  });

  it('unknown keys, a bad mode, unplannedEvents, missing events', () => {
    const errors = errorsOf([{ id: 'web-plan', unplannedEvents: 'deny', track: {} }], { id: 'web-plan', mode: 'drop' });
    expect(errors).toEqual([
      expect.stringMatching(/^test\.yaml: sources\[0\]\.trackingPlan\.mode: must be one of .*observe.*omit.*block/),
      expect.stringMatching(/^test\.yaml: trackingPlans\[0\]\.events: is required/),
      expect.stringMatching(/^test\.yaml: trackingPlans\[0\]\.unplannedEvents: must be one of .*allow.*violate/),
      expect.stringMatching(/^test\.yaml: trackingPlans\[0\]\.track: unknown key "track"/),
    ]);
  });

  it('a source naming a plan that does not exist; two plans with one id', () => {
    const errors = errorsOf(
      [
        { id: 'web-plan', events: {} },
        { id: 'web-plan', events: {} },
      ],
      { id: 'web-pln' },
    );
    expect(errors).toEqual([
      'test.yaml: sources[0].trackingPlan.id: no tracking plan has id "web-pln"; did you mean "web-plan"?',
      'test.yaml: trackingPlans[1].id: "web-plan" is already used by trackingPlans[0]; tracking plan ids must be unique',
    ]);
  });
});

describe('check-config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-plans-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a plan whose schema does not compile, exit 1, naming the path', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, file([{ id: 'web-plan', events: { 'Order Completed': { type: 'object', required: 'total' } } }]));
    const out: string[] = [];
    const problems: string[] = [];
    expect(runCheckConfig(path, {}, (l) => out.push(l), (l) => problems.push(l))).toBe(1);
    expect(out).toEqual([]);
    expect(problems).toEqual([expect.stringMatching(new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: trackingPlans\\[0\\]\\.events\\["Order Completed"\\]: is not a JSON Schema that compiles`))]);
  });
});

describe('reload', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-plans-reload-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('applies a changed plan; refuses a schema that does not compile and keeps the running plan', async () => {
    const path = join(dir, 'switchyard.yaml');
    const replace = (text: string) => {
      writeFileSync(`${path}.next`, text);
      renameSync(`${path}.next`, path);
    };
    replace(file([{ id: 'web-plan', events: { 'Order Completed': ORDER } }]));
    const loaded = loadConfigFile(path, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const results: string[] = [];
    const store = watchedConfigStore({ file: path, initial: loaded.config, env: {}, logger: silentLogger(), intervalMs: 50, onReload: (r) => results.push(r) });
    try {
      replace(file([{ id: 'web-plan', events: { 'Order Completed': ORDER, 'Signed Up': true }, unplannedEvents: 'violate' }]));
      await waitFor(() => results.includes('applied'), { timeoutMs: 10_000, what: 'the new plan applied' });
      expect(Object.keys(store.current().trackingPlans[0]!.events)).toEqual(['Order Completed', 'Signed Up']);
      replace(file([{ id: 'web-plan', events: { 'Order Completed': { type: 'object', required: 'total' } } }]));
      await waitFor(() => results.includes('refused'), { timeoutMs: 10_000, what: 'the bad plan refused' });
      expect(store.current().trackingPlans[0]).toMatchObject({ events: { 'Order Completed': ORDER, 'Signed Up': true }, unplannedEvents: 'violate' });
    } finally {
      store.close();
    }
  });
});

describe('a plan in a file of its own (trackingPlans[].file)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-plan-files-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'switchyard.yaml');
  const put = (path: string, text: string) => {
    writeFileSync(`${path}.next`, text);
    renameSync(`${path}.next`, path);
  };
  const withPlanFile = (entry: Record<string, unknown> = {}) => stringify({ sources: [{ id: 'web', trackingPlan: { id: 'web-plan', mode: 'block' } }], trackingPlans: [{ id: 'web-plan', file: 'plans/web.yaml', ...entry }] });

  it('reads the plan from the file beside the config (YAML or JSON), keeping its id from the config', () => {
    mkdirSync(join(dir, 'plans'), { recursive: true });
    put(join(dir, 'plans', 'web.yaml'), JSON.stringify({ events: { 'Order Completed': ORDER }, unplannedEvents: 'violate' }));
    put(config, withPlanFile());
    const loaded = loadConfigFile(config, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    expect(loaded.config.trackingPlans).toEqual([{ id: 'web-plan', file: 'plans/web.yaml', events: { 'Order Completed': ORDER }, unplannedEvents: 'violate' }]);
    expect(loaded.files).toEqual([join(dir, 'plans', 'web.yaml')]);
  });

  it('refuses a file that is not there, a key given in both places, and names the file of a bad schema', () => {
    put(config, withPlanFile({ file: 'plans/missing.yaml' }));
    const missing = loadConfigFile(config, {});
    expect(missing.ok ? [] : missing.errors).toEqual([
      `${config}: trackingPlans[0].file: ${join(dir, 'plans', 'missing.yaml')} cannot be read (no such file); give the plan file's path relative to the config file`,
    ]);
    put(config, withPlanFile({ unplannedEvents: 'allow' }));
    const twice = loadConfigFile(config, {});
    expect(twice.ok ? [] : twice.errors).toEqual([`${config}: trackingPlans[0].unplannedEvents: is also in plans/web.yaml: give each key of the plan in one place`]);
    put(join(dir, 'plans', 'web.yaml'), stringify({ events: { 'Order Completed': { type: 'object', required: 'total' } } }));
    put(config, withPlanFile());
    const bad = loadConfigFile(config, {});
    expect(bad.ok ? [] : bad.errors).toEqual([expect.stringMatching(/trackingPlans\[0\]\.events\["Order Completed"\]: is not a JSON Schema that compiles: .* \(written in plans\/web\.yaml\)$/)]);
  });

  it('a change to the plan file alone reloads the config', async () => {
    put(join(dir, 'plans', 'web.yaml'), stringify({ events: { 'Order Completed': ORDER } }));
    put(config, withPlanFile());
    const loaded = loadConfigFile(config, {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const results: string[] = [];
    const store = watchedConfigStore({ file: config, initial: loaded.config, files: loaded.files, env: {}, logger: silentLogger(), intervalMs: 50, onReload: (r) => results.push(r) });
    try {
      put(join(dir, 'plans', 'web.yaml'), stringify({ events: { 'Order Completed': ORDER, 'Signed Up': true } }));
      await waitFor(() => results.includes('applied'), { timeoutMs: 10_000, what: 'the plan file change applied' });
      expect(Object.keys(store.current().trackingPlans[0]!.events)).toEqual(['Order Completed', 'Signed Up']);
    } finally {
      store.close();
    }
  });
});
