import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { CONFIG_JSON_SCHEMA_PATH, configJsonSchemaText } from '../../../src/config/json-schema.js';
import { parseConfigText } from '../../../src/config/load.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const SCHEMA_FILE = join(ROOT, CONFIG_JSON_SCHEMA_PATH);
const committed = readFileSync(SCHEMA_FILE, 'utf8');
const schema = JSON.parse(committed) as Record<string, unknown>;

// strict: a keyword ajv does not know, or one that cannot apply, is a bug in the schema.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
const validate = ajv.compile(schema);

const EXAMPLE_CONFIGS = [
  'config/example.yaml',
  'deploy/kubernetes/base/switchyard.yaml',
  'deploy/kubernetes/overlays/example/switchyard.yaml',
];

const errorsOf = (doc: unknown) => (validate(doc) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));

describe('config/switchyard.schema.json', () => {
  it('is what npm run schema generates from src/config/schema.ts', () => {
    // A plain equality check would print 600 lines of diff; the message says what to do.
    expect(committed === configJsonSchemaText(), `${CONFIG_JSON_SCHEMA_PATH} is stale: run npm run schema and commit it`).toBe(true);
  });

  it('declares JSON Schema draft 2020-12, the draft ajv/dist/2020 validates', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });

  it('gives every config key a type, so an editor can check and complete it', () => {
    const untyped: string[] = [];
    const walk = (node: unknown, path: string) => {
      if (typeof node !== 'object' || node === null) return;
      const properties = (node as { properties?: Record<string, unknown> }).properties ?? {};
      for (const [key, value] of Object.entries(properties)) {
        const typed = ['type', 'anyOf', 'oneOf', '$ref', 'const', 'enum'].some((k) => k in (value as object));
        if (!typed) untyped.push(`${path}${key}`);
        walk(value, `${path}${key}.`);
        walk((value as { items?: unknown }).items, `${path}${key}[].`);
      }
    };
    walk(schema, '');
    expect(untyped, 'give these fields an input schema (field(check, input) in src/config/schema.ts), then run npm run schema').toEqual([]);
  });
});

describe.each(EXAMPLE_CONFIGS)('%s', (file) => {
  const text = readFileSync(join(ROOT, file), 'utf8');

  it('names the schema on its first line, by a path that reaches it', () => {
    const [first = ''] = text.split('\n');
    const match = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
    expect(match, `first line of ${file}`).not.toBeNull();
    expect(resolve(ROOT, dirname(file), match?.[1] ?? '')).toBe(SCHEMA_FILE);
  });

  it('validates against the schema', () => {
    expect(errorsOf(parse(text))).toEqual([]);
  });
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw YAML documents, deliberately wrong
type Doc = Record<string, any>;
const example = (): Doc => parse(readFileSync(join(ROOT, 'config/example.yaml'), 'utf8')) as Doc;

/**
 * Changes to config/example.yaml, and whether the result is a valid config. The schema
 * and the loader must agree on each: an editor that flags a file the daemon loads, or
 * passes one it refuses, misleads.
 */
const cases: [string, (d: Doc) => void, boolean][] = [
  ['six webhooks', (d) => (d.destinations[0].settings.webhooks = Array.from({ length: 6 }, (_, i) => ({ url: `https://h${i}.example.com/` }))), false],
  ['five webhooks', (d) => (d.destinations[0].settings.webhooks = Array.from({ length: 5 }, (_, i) => ({ url: `https://h${i}.example.com/` }))), true],
  ['no webhooks', (d) => (d.destinations[0].settings.webhooks = []), false],
  ['an unknown top-level key', (d) => (d.kafkaa = {}), false],
  ['an unknown key in a destination', (d) => (d.destinations[0].enabeld = true), false],
  ['an ftp:// webhook URL', (d) => (d.destinations[1].settings.webhooks[0].url = 'ftp://files.example.com/x'), false],
  ['a webhook URL without a scheme', (d) => (d.destinations[1].settings.webhooks[0].url = 'hooks.example.com/x'), false],
  ['an HTTPS:// URL in capitals', (d) => (d.destinations[1].settings.webhooks[0].url = 'HTTPS://hooks.example.com/x'), true],
  ['a webhook URL from the environment', (d) => (d.destinations[1].settings.webhooks[0].url = '${AUDIT_URL:-https://audit.example.com/}'), true],
  ['a duration without a unit', (d) => (d.delivery.timeout = '5'), false],
  ['a duration written as a number', (d) => (d.delivery.timeout = 5), false],
  ['a duration from the environment', (d) => (d.delivery.timeout = '${TIMEOUT:-5s}'), true],
  ['a retry tier with a space', (d) => (d.delivery.retryTiers = ['10 s']), false],
  ['a port out of range', (d) => (d.gateway.port = 70000), false],
  ['a port as a quoted number', (d) => (d.gateway.port = '8081'), true],
  ['a port from the environment', (d) => (d.gateway.port = '${GATEWAY_PORT:-8080}'), true],
  ['an unknown log level', (d) => (d.log.level = 'loud'), false],
  ['a broker without a port', (d) => (d.kafka.brokers = ['localhost']), false],
  ['no brokers', (d) => (d.kafka.brokers = []), false],
  ['a destination id with a space', (d) => (d.destinations[1].id = 'hooks audit'), false],
  ['a destination of another type', (d) => (d.destinations[1].type = 'amplitude'), false],
  ['a reserved header in another case', (d) => (d.destinations[0].settings.webhooks[0].headers = { 'x-SIGNATURE': 'x' }), false],
  ['a header name with a space', (d) => (d.destinations[0].settings.webhooks[0].headers = { 'X Team': 'x' }), false],
  ['no sources', (d) => delete d.sources, false],
  ['an empty source list', (d) => (d.sources = []), false],
  ['a source with only an id', (d) => (d.sources = [{ id: 'web' }]) && (d.audiences = []), true],
  ['a track filter with both lists', (d) => (d.sources[0].trackFilter.allowEvents = ['Signed Up']), false],
  ['a trait rule with two operators', (d) => (d.audiences[0].rule.all[0].equals = 'pro'), false],
  ['a trait rule with no operator', (d) => delete d.audiences[0].rule.all[0].in, false],
  ['a rule of an unknown kind', (d) => (d.audiences[0].rule = { some: [] }), false],
  ['a nested not rule', (d) => (d.audiences[0].rule = { not: { any: [{ trait: 'plan', exists: true }] } }), true],
  ['an event rule with a bad window', (d) => (d.audiences[0].rule.all[1].within = 'a month'), false],
  ['ssl with TLS options', (d) => (d.kafka.ssl = { rejectUnauthorized: true }), true],
  ['sharedSecrets while rotating', (d) => (d.destinations[1].settings.sharedSecrets = ['new-secret', 'old-secret']), true],
  ['sharedSecret and sharedSecrets both', (d) => (d.destinations[0].settings.sharedSecrets = ['new-secret', 'old-secret']), false],
  ['three sharedSecrets', (d) => (d.destinations[1].settings.sharedSecrets = ['a', 'b', 'c']), false],
  ['standard signing with a whsec_ secret', (d) => Object.assign(d.destinations[1].settings, { signing: 'standard', sharedSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }), true],
  ['standard signing with two whsec_ secrets', (d) => Object.assign(d.destinations[1].settings, { signing: 'standard', sharedSecrets: ['whsec_bmV3', 'whsec_b2xk'] }), true],
  ['standard signing with a plain secret', (d) => Object.assign(d.destinations[1].settings, { signing: 'standard', sharedSecret: 'plain-secret' }), false],
  ['standard signing with no secret', (d) => (d.destinations[1].settings.signing = 'standard'), false],
  ['an unknown signing scheme', (d) => (d.destinations[0].settings.signing = 'svix'), false],
  ['the private-network guard on', (d) => (d.delivery.blockPrivateNetworks = true), true],
  ['the private-network guard as a word', (d) => (d.delivery.blockPrivateNetworks = 'yes'), false],
  ['sasl with an unknown mechanism', (d) => (d.kafka.sasl = { mechanism: 'kerberos', username: 'u', password: 'p' }), false],
];

describe('the schema and the loader agree', () => {
  it.each(cases)('%s', (_name, change, valid) => {
    const doc = example();
    change(doc);
    const schemaErrors = errorsOf(doc);
    const loaded = parseConfigText(stringify(doc), 'test.yaml', { SWITCHYARD_ADMIN_TOKEN: 'a-token' });
    expect(loaded.ok, loaded.ok ? 'the loader accepts it' : loaded.errors.join('\n')).toBe(valid);
    if (valid) expect(schemaErrors).toEqual([]);
    else expect(schemaErrors).not.toEqual([]);
  });
});
