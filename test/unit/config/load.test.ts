import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfigFile, parseConfigText, type LoadResult } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';

const FILE = 'test.yaml';
const EXAMPLE = fileURLToPath(new URL('../../../config/example.yaml', import.meta.url));

function loaded(result: LoadResult): Config {
  if (!result.ok) throw new Error(`expected the config to load, got:\n${result.errors.join('\n')}`);
  return result.config;
}

function failed(result: LoadResult): string[] {
  if (result.ok) throw new Error('expected the config to be refused, but it loaded');
  return result.errors;
}

// The cases below write deliberately wrong documents, which no precise type admits.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- raw YAML document under test
type Doc = Record<string, any>;

/** A small valid config as a plain object, for cases that change one thing in it. */
function base(): Doc {
  return {
    sources: [{ id: 'web', writeKey: 'k-web', destinations: ['hooks-main'] }],
    destinations: [
      {
        id: 'hooks-main',
        type: 'webhooks',
        settings: { webhooks: [{ url: 'https://hooks.example.com/a', headers: { 'X-Team': 'growth' } }] },
      },
    ],
    audiences: [
      {
        name: 'High Value Users',
        sources: ['web'],
        destinations: ['hooks-main'],
        rule: { trait: 'plan', equals: 'pro' },
      },
    ],
  };
}

/** The least a config needs besides defaults; for cases about other sections. */
const SOURCE = 'sources: [{ id: web }]\n';
/** sources[].limits left out (docs/configuration.md#sources). */
const DEFAULT_LIMITS = { callsPerSecond: 2_000, bytesPerSecond: 8 * 1_048_576, burst: 5 };

const parse = (doc: unknown, env: Record<string, string | undefined> = {}) => parseConfigText(stringify(doc), FILE, env);

describe('sources[].limits', () => {
  it('takes calls per second, a size per second and a burst in seconds', () => {
    expect(loaded(parse({ sources: [{ id: 'web', limits: { callsPerSecond: 0.5, bytesPerSecond: '2MB', burst: 10 } }] })).sources[0]?.limits).toEqual({
      callsPerSecond: 0.5,
      bytesPerSecond: 2 * 1_048_576,
      burst: 10,
    });
    expect(loaded(parse({ sources: [{ id: 'web', limits: { burst: 1 } }] })).sources[0]?.limits).toEqual({ ...DEFAULT_LIMITS, burst: 1 });
  });

  it.each<[unknown, string]>([
    [{ callsPerSecond: 0 }, 'sources[0].limits.callsPerSecond: must be a number above 0 and at most 1000000, got number 0'],
    [{ bytesPerSecond: 1000 }, 'sources[0].limits.bytesPerSecond: number 1000 is not a size; write a number with a unit B, KB or MB (1 KB = 1,024 bytes), e.g. "512KB" or "1MB"'],
    [{ bytesPerSecond: '10B' }, 'sources[0].limits.bytesPerSecond: "10B" is outside 1KB to 1024MB; give a size in that range'],
    [{ burst: 7200 }, 'sources[0].limits.burst: must be a number above 0 and at most 3600, got number 7200'],
    [{ calls: 5 }, 'sources[0].limits.calls'],
  ])('refuses %j', (limits, message) => {
    expect(failed(parse({ sources: [{ id: 'web', limits }] })).join('\n')).toContain(message);
  });
});

describe('admin.allowedHosts', () => {
  it('takes host names and addresses, lower-cased, and refuses a URL or a port', () => {
    expect(loaded(parse({ admin: { allowedHosts: ['Switchyard-Admin.monitoring.svc', '10.0.0.7', '::1'] }, sources: [{ id: 'web' }] })).admin.allowedHosts).toEqual([
      'switchyard-admin.monitoring.svc',
      '10.0.0.7',
      '::1',
    ]);
    expect(failed(parse({ admin: { allowedHosts: ['http://admin.example:9464'] }, sources: [{ id: 'web' }] }))).toEqual([
      `${FILE}: admin.allowedHosts[0]: "http://admin.example:9464" is not a host name: give the name a client puts in the Host header, without scheme, port or path (e.g. switchyard-admin.monitoring.svc)`,
    ]);
  });
});

describe('config/example.yaml', () => {
  it('loads with the values the file and the defaults give', () => {
    const config = loaded(loadConfigFile(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: 'a' }));
    expect(config.kafka.brokers).toEqual(['localhost:9092']);
    expect(config.gateway).toEqual({ port: 8080, host: '0.0.0.0' });
    // No built-in token, and the admin port on loopback (where any token will do).
    expect(config.admin).toEqual({ port: 9464, host: '127.0.0.1', token: 'a', allowedHosts: [] });
    expect(config.delivery).toEqual({
      timeoutMs: 5_000,
      retryTiers: [
        { name: '10s', ms: 10_000 },
        { name: '1m', ms: 60_000 },
        { name: '10m', ms: 600_000 },
        { name: '1h', ms: 3_600_000 },
      ],
      maxRetryWindowMs: 14_400_000,
      concurrencyPerDestination: 64,
      bufferBudgetBytes: 64 * 1024 * 1024,
        transactionalMoves: true,
      blockPrivateNetworks: false,
    });
    expect(config.sources).toEqual([
      { id: 'web', writeKey: 'web-demo-key', destinations: ['hooks-main'], trackFilter: { blockEvents: ['Debug Ping'] }, limits: DEFAULT_LIMITS },
      { id: 'server', writeKey: 'server-demo-key', destinations: ['hooks-main', 'hooks-audit'], limits: DEFAULT_LIMITS },
    ]);
    expect(config.destinations).toEqual([
      {
        id: 'hooks-main',
        type: 'webhooks',
        enabled: true,
        settings: {
          webhooks: [{ url: 'http://127.0.0.1:4000/segment', headers: { 'X-Team': 'growth' } }],
          sharedSecret: 'demo-shared-secret',
          signing: 'segment',
          ordering: 'none',
        },
      },
      {
        id: 'hooks-audit',
        type: 'webhooks',
        enabled: true,
        settings: { webhooks: [{ url: 'http://127.0.0.1:4000/audit', headers: {} }], signing: 'segment', ordering: 'none' },
      },
    ]);
    expect(config.audiences).toEqual([
      {
        name: 'High Value Users',
        sources: ['web', 'server'],
        destinations: ['hooks-main'],
        rule: {
          all: [
            { trait: 'plan', in: ['pro', 'enterprise'] },
            { event: 'Order Completed', atLeast: 3, withinMs: 30 * 86_400_000 },
          ],
        },
      },
    ]);
  });

  it('has no built-in admin token: without SWITCHYARD_ADMIN_TOKEN, or with it empty, it is refused, naming the variable', () => {
    expect(failed(loadConfigFile(EXAMPLE, {}))).toEqual([
      `${EXAMPLE}: admin.token: environment variable SWITCHYARD_ADMIN_TOKEN is not set; set it (a secret has no default)`,
    ]);
    // The review's finding: `${SWITCHYARD_ADMIN_TOKEN:-dev-admin-token}` took the default for an empty variable.
    expect(failed(loadConfigFile(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: '' }))).toEqual([
      `${EXAMPLE}: admin.token: is empty: the environment variable SWITCHYARD_ADMIN_TOKEN is set but empty; give it a value`,
    ]);
  });

  it('leaves an unset admin token out for a command that serves no admin API, and only then', () => {
    expect(loaded(loadConfigFile(EXAMPLE, {}, { adminApi: false })).admin.token).toBeUndefined();
    expect(loaded(loadConfigFile(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: 'tok-1' }, { adminApi: false })).admin.token).toBe('tok-1');
    // Set but empty is still a mistake worth saying, as is any other unset secret.
    expect(failed(loadConfigFile(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: '' }, { adminApi: false }))).toEqual([
      `${EXAMPLE}: admin.token: is empty: the environment variable SWITCHYARD_ADMIN_TOKEN is set but empty; give it a value`,
    ]);
    expect(failed(parseConfigText('admin: { token: "${TOK}" }\nsources: [{ id: web, writeKey: "${WK}" }]\n', 'f.yaml', {}, { adminApi: false }))).toEqual([
      'f.yaml: sources[0].writeKey: environment variable WK is not set; set it (a secret has no default)',
    ]);
    expect(failed(loadConfigFile(EXAMPLE, {}, { adminApi: true }))).toHaveLength(1);
  });

  it('takes secrets from the environment when they are set', () => {
    const config = loaded(
      loadConfigFile(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: 'tok-1', WEB_WRITE_KEY: 'wk-1', HOOKS_MAIN_SECRET: 's-1' }),
    );
    expect(config.admin.token).toBe('tok-1');
    expect(config.sources[0]?.writeKey).toBe('wk-1');
    expect(config.destinations[0]?.settings.sharedSecret).toBe('s-1');
  });
});

describe('defaults', () => {
  it('fills every section left out', () => {
    const config = loaded(parseConfigText(SOURCE, FILE, {}));
    expect(config).toEqual({
      kafka: { brokers: ['localhost:9092'], clientId: 'switchyard', topicPrefix: 'switchyard.', partitions: 12, replicationFactor: 1, transactions: true },
      gateway: { port: 8080, host: '0.0.0.0' },
      admin: { port: 9464, host: '127.0.0.1', allowedHosts: [] },
      delivery: {
        timeoutMs: 5_000,
        retryTiers: [
          { name: '10s', ms: 10_000 },
          { name: '1m', ms: 60_000 },
          { name: '10m', ms: 600_000 },
          { name: '1h', ms: 3_600_000 },
        ],
        maxRetryWindowMs: 4 * 3_600_000,
        concurrencyPerDestination: 64,
        bufferBudgetBytes: 64 * 1024 * 1024,
        transactionalMoves: true,
        blockPrivateNetworks: false,
      },
      router: { dedupeWindowMs: 3_600_000 },
      shutdownTimeoutMs: 25_000,
      log: { level: 'info' },
      sources: [{ id: 'web', destinations: [], limits: DEFAULT_LIMITS }],
      destinations: [],
      audiences: [],
      trackingPlans: [],
      operations: { webhooks: [] },
    });
  });

  it('accepts port 0 and values given as strings by interpolation', () => {
    const config = loaded(
      parseConfigText(`gateway: { port: 0 }\nadmin: { port: "\${ADMIN_PORT}" }\n${SOURCE}`, FILE, { ADMIN_PORT: '9999' }),
    );
    expect(config.gateway.port).toBe(0);
    expect(config.admin.port).toBe(9999);
  });

  it('fills defaults inside a destination', () => {
    const config = loaded(parse(base()));
    expect(config.destinations[0]?.enabled).toBe(true);
    expect(config.destinations[0]?.settings.signing).toBe('segment');
    expect(config.sources[0]?.trackFilter).toBeUndefined();
  });
});

describe('a config that would route nothing', () => {
  const EMPTY = `${FILE}: (file): is empty; a config needs at least one source (and kafka.brokers, unless localhost:9092 or KAFKA_BROKERS is right); start from config/example.yaml`;
  const NO_SOURCE = `${FILE}: sources: needs at least one source (where calls come from: an id, a writeKey and the destinations it feeds); see config/example.yaml`;

  it.each([
    ['an empty file', ''],
    ['blank lines', '\n  \n\n'],
    ['comments only', '# kafka:\n#   brokers: [k:9092]\n'],
    ['an explicit null document', '~\n'],
    ['a document marker only', '---\n'],
  ])('refuses %s with one line that says what a config needs', (_name, text) => {
    expect(failed(parseConfigText(text, FILE, {}))).toEqual([EMPTY]);
  });

  it('refuses an empty file even when KAFKA_BROKERS is set', () => {
    expect(failed(parseConfigText('', FILE, { KAFKA_BROKERS: 'k:1' }))).toEqual([EMPTY]);
  });

  it.each([
    ['no sources key', 'kafka: { brokers: [k:9092] }\n'],
    ['an empty source list', 'kafka: { brokers: [k:9092] }\nsources: []\n'],
  ])('refuses %s', (_name, text) => {
    expect(failed(parseConfigText(text, FILE, {}))).toEqual([NO_SOURCE]);
  });

  it('reports a missing source alongside the other problems of the file', () => {
    const doc = base();
    delete doc.sources;
    doc.audiences = [];
    doc.gateway = { port: -1 };
    expect(failed(parse(doc))).toEqual([
      `${FILE}: gateway.port: must be a whole number from 0 to 65535, got number -1`,
      NO_SOURCE,
    ]);
  });

  it('names a null source list as such', () => {
    expect(failed(parseConfigText('sources:\n', FILE, {}))).toEqual([`${FILE}: sources: must be a list, got null (an empty value)`]);
  });
});

type Mutation = (doc: Doc) => void;

describe('signing and secrets', () => {
  const settingsOf = (settings: Record<string, unknown>) => {
    const doc = base();
    Object.assign(doc.destinations[0].settings, settings);
    return loaded(parse(doc)).destinations[0]!.settings;
  };

  it.each([
    ['one secret, segment', { sharedSecret: 's-1' }],
    ['two secrets while rotating, segment', { sharedSecrets: ['s-new', 's-old'] }],
    ['one secret, standard', { signing: 'standard', sharedSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
    ['two secrets, standard, with padding', { signing: 'standard', sharedSecrets: ['whsec_c2VjcmV0LW5ldw==', 'whsec_c2VjcmV0LW9sZA=='] }],
    ['a whsec_ secret kept as written with segment', { signing: 'segment', sharedSecret: 'whsec_not base64, and fine here' }],
  ])('accepts %s', (_name, settings) => {
    expect(settingsOf(settings)).toMatchObject({ signing: 'segment', ...settings });
  });

  it('reads a whsec_ secret from the environment before checking it', () => {
    const doc = base();
    Object.assign(doc.destinations[0].settings, { signing: 'standard', sharedSecrets: ['${NEW}', '${OLD}'] });
    const config = loaded(parseConfigText(stringify(doc), FILE, { NEW: 'whsec_bmV3', OLD: 'whsec_b2xk' }));
    expect(config.destinations[0]!.settings.sharedSecrets).toEqual(['whsec_bmV3', 'whsec_b2xk']);
    expect(failed(parseConfigText(stringify(doc), FILE, { NEW: 'whsec_bmV3', OLD: 'old-style' }))).toEqual([
      `${FILE}: destinations[0].settings.sharedSecrets[1]: is not a Standard Webhooks secret; with signing: standard a secret is "whsec_" followed by the key in base64, e.g. whsec_ and the output of \`openssl rand -base64 32\``,
    ]);
  });

  it('turns the private-network guard on', () => {
    const doc = base();
    doc.delivery = { blockPrivateNetworks: true };
    expect(loaded(parse(doc)).delivery.blockPrivateNetworks).toBe(true);
  });
});

describe('a config with one problem is refused, naming the path', () => {
  const cases: [string, Mutation, string, string][] = [
    [
      'six webhooks',
      (d) => (d.destinations[0].settings.webhooks = Array.from({ length: 6 }, (_, i) => ({ url: `https://h${i}.example.com/` }))),
      'destinations[0].settings.webhooks',
      'at most 5 entries, got 6',
    ],
    ['no webhooks', (d) => (d.destinations[0].settings.webhooks = []), 'destinations[0].settings.webhooks', 'at least 1 entry, got 0'],
    [
      'a URL without http(s)://',
      (d) => (d.destinations[0].settings.webhooks[0].url = 'hooks.example.com/segment'),
      'destinations[0].settings.webhooks[0].url',
      'must be an absolute http:// or https:// URL; add the scheme, e.g. https://<host>/<path>',
    ],
    [
      'an ftp:// URL',
      (d) => d.destinations[0].settings.webhooks.push({ url: 'ftp://x' }),
      'destinations[0].settings.webhooks[1].url',
      'must be an absolute http:// or https:// URL, not "ftp://"',
    ],
    [
      'a relative URL',
      (d) => (d.destinations[0].settings.webhooks[0].url = '/segment'),
      'destinations[0].settings.webhooks[0].url',
      'must be an absolute http:// or https:// URL',
    ],
    [
      'an unknown destination id in a source',
      (d) => d.sources[0].destinations.push('hooks-mian'),
      'sources[0].destinations[1]',
      'no destination has id "hooks-mian"; did you mean "hooks-main"?',
    ],
    [
      'an unknown destination id in an audience',
      (d) => (d.audiences[0].destinations = ['nowhere']),
      'audiences[0].destinations[0]',
      'no destination has id "nowhere"',
    ],
    [
      'an unknown source id in an audience',
      (d) => (d.audiences[0].sources = ['mobile']),
      'audiences[0].sources[0]',
      'no source has id "mobile"',
    ],
    [
      'a header value with CR/LF',
      (d) => (d.destinations[0].settings.webhooks[0].headers['X-Team'] = 'growth\r\nX-Evil: 1'),
      'destinations[0].settings.webhooks[0].headers.X-Team',
      'contains a carriage return (CR)',
    ],
    [
      'a header value with LF only',
      (d) => (d.destinations[0].settings.webhooks[0].headers['X-Team'] = 'a\nb'),
      'destinations[0].settings.webhooks[0].headers.X-Team',
      'contains a line feed (LF)',
    ],
    [
      'a header value with NUL',
      (d) => (d.destinations[0].settings.webhooks[0].headers['X-Team'] = 'a\0b'),
      'destinations[0].settings.webhooks[0].headers.X-Team',
      'contains a NUL character',
    ],
    [
      'a reserved header, in any case',
      (d) => (d.destinations[0].settings.webhooks[0].headers['content-TYPE'] = 'text/plain'),
      'destinations[0].settings.webhooks[0].headers.content-TYPE',
      'header "content-TYPE" is reserved',
    ],
    [
      'X-Signature as a static header',
      (d) => (d.destinations[0].settings.webhooks[0].headers['X-Signature'] = 'abc'),
      'destinations[0].settings.webhooks[0].headers.X-Signature',
      'is reserved',
    ],
    [
      'traceparent as a static header',
      (d) => (d.destinations[0].settings.webhooks[0].headers.traceparent = '00-x'),
      'destinations[0].settings.webhooks[0].headers.traceparent',
      'is reserved',
    ],
    [
      'an illegal header name',
      (d) => (d.destinations[0].settings.webhooks[0].headers['X Team'] = 'a'),
      'destinations[0].settings.webhooks[0].headers["X Team"]',
      'is not a legal HTTP header name',
    ],
    [
      'a misspelt top-level section key',
      (d) => (d.kafka = { brokerz: ['b:9092'] }),
      'kafka.brokerz',
      'unknown key "brokerz"; did you mean "brokers"?',
    ],
    [
      'a misspelt key deep inside',
      (d) => (d.destinations[0].settings.sharedSecrett = 'x'),
      'destinations[0].settings.sharedSecrett',
      'unknown key "sharedSecrett"',
    ],
    [
      'a misspelt key inside an audience rule',
      (d) => (d.audiences[0].rule = { all: [{ event: 'Signed Up', atLeast: 1, withn: '30d' }] }),
      'audiences[0].rule.all[0].withn',
      'unknown key "withn"; did you mean "within"?',
    ],
    [
      'a duplicate source id',
      (d) => d.sources.push({ id: 'web', writeKey: 'k-other' }),
      'sources[1].id',
      '"web" is already used by sources[0]',
    ],
    [
      'a duplicate destination id',
      (d) => d.destinations.push(structuredClone(d.destinations[0])),
      'destinations[1].id',
      '"hooks-main" is already used by destinations[0]',
    ],
    [
      'a duplicate audience name',
      (d) => d.audiences.push(structuredClone(d.audiences[0])),
      'audiences[1].name',
      'is already used by audiences[0]',
    ],
    [
      'two audience names with one trait key',
      (d) => d.audiences.push({ ...structuredClone(d.audiences[0]), name: 'high-value users' }),
      'audiences[1].name',
      'trait key "high_value_users" is the same as that of audiences[0]',
    ],
    [
      'a write key used twice',
      (d) => d.sources.push({ id: 'server', writeKey: 'k-web' }),
      'sources[1].writeKey',
      'already used by sources[0]',
    ],
    [
      'a destination id that cannot be a topic name',
      (d) => {
        d.destinations[0].id = 'hooks/main';
        d.sources[0].destinations = ['hooks/main'];
        d.audiences[0].destinations = [];
      },
      'destinations[0].id',
      'only letters, digits, ".", "_" and "-"',
    ],
    [
      'a topic prefix that cannot be in a topic name',
      (d) => (d.kafka = { topicPrefix: 'switch yard.' }),
      'kafka.topicPrefix',
      'only letters, digits, ".", "_" and "-"',
    ],
    [
      'a group prefix that cannot start a group id an ACL pattern covers',
      (d) => (d.kafka = { groupPrefix: 'staging/switchyard' }),
      'kafka.groupPrefix',
      'the group prefix starts every consumer group id of this deployment; use only letters, digits, ".", "_" and "-"',
    ],
    ['a group prefix that is not a string', (d) => (d.kafka = { groupPrefix: 7 }), 'kafka.groupPrefix', 'must be a string, got number 7'],
    [
      'destination ids that differ only by "." and "_"',
      (d) => d.destinations.push({ ...structuredClone(d.destinations[0]), id: 'hooks_main' }, { ...structuredClone(d.destinations[0]), id: 'hooks.main' }),
      'destinations[2].id',
      'differ only by "." and "_"',
    ],
    ['a duration without a unit', (d) => (d.delivery = { timeout: 5 }), 'delivery.timeout', 'number 5 is not a duration'],
    ['a duration with a bad unit', (d) => (d.shutdownTimeout = '25 sec'), 'shutdownTimeout', '"25 sec" is not a duration'],
    ['no retry tiers', (d) => (d.delivery = { retryTiers: [] }), 'delivery.retryTiers', 'at least 1 entry, got 0'],
    ['a retry tier twice', (d) => (d.delivery = { retryTiers: ['10s', '1m', '10s'] }), 'delivery.retryTiers[2]', 'tier "10s" is listed twice'],
    ['a bad retry tier', (d) => (d.delivery = { retryTiers: ['10s', 'soon'] }), 'delivery.retryTiers[1]', '"soon" is not a duration'],
    [
      'a trait rule with two operators',
      (d) => (d.audiences[0].rule = { trait: 'plan', equals: 'pro', exists: true }),
      'audiences[0].rule',
      'exactly one operator',
    ],
    [
      'a trait rule with no operator',
      (d) => (d.audiences[0].rule = { not: { trait: 'plan' } }),
      'audiences[0].rule.not',
      'exactly one operator',
    ],
    [
      'an event rule with a bad window',
      (d) => (d.audiences[0].rule = { event: 'Order Completed', atLeast: 3, within: '30 days' }),
      'audiences[0].rule.within',
      'is not a duration',
    ],
    [
      'a track filter with both lists',
      (d) => (d.sources[0].trackFilter = { blockEvents: ['a'], allowEvents: ['b'] }),
      'sources[0].trackFilter',
      'exactly one of blockEvents or allowEvents, got both',
    ],
    ['an out-of-range port', (d) => (d.gateway = { port: 65536 }), 'gateway.port', 'from 0 to 65535'],
    ['a broker without a port', (d) => (d.kafka = { brokers: ['localhost'] }), 'kafka.brokers[0]', 'must be host:port'],
    ['an unknown log level', (d) => (d.log = { level: 'verbose' }), 'log.level', 'must be one of fatal, error, warn, info, debug, trace'],
    ['a destination of another type', (d) => (d.destinations[0].type = 'email'), 'destinations[0].type', 'must be "webhooks"'],
    ['a section that is not a mapping', (d) => (d.gateway = [8080]), 'gateway', 'must be a mapping'],
    ['a missing required key', (d) => delete d.destinations[0].settings.webhooks[0].url, 'destinations[0].settings.webhooks[0].url', 'is required'],
    [
      'sharedSecret and sharedSecrets both',
      (d) => Object.assign(d.destinations[0].settings, { sharedSecret: 'a', sharedSecrets: ['b', 'a'] }),
      'destinations[0].settings.sharedSecrets',
      'give sharedSecret or sharedSecrets, not both',
    ],
    ['three shared secrets', (d) => (d.destinations[0].settings.sharedSecrets = ['a', 'b', 'c']), 'destinations[0].settings.sharedSecrets', 'at most 2 entries, got 3'],
    ['an empty list of shared secrets', (d) => (d.destinations[0].settings.sharedSecrets = []), 'destinations[0].settings.sharedSecrets', 'needs at least 1 entry'],
    ['an empty shared secret in the list', (d) => (d.destinations[0].settings.sharedSecrets = ['a', '']), 'destinations[0].settings.sharedSecrets[1]', 'must not be empty'],
    ['the same secret twice', (d) => (d.destinations[0].settings.sharedSecrets = ['a', 'a']), 'destinations[0].settings.sharedSecrets[1]', 'is the same secret as sharedSecrets[0]'],
    ['an unknown signing scheme', (d) => (d.destinations[0].settings.signing = 'svix'), 'destinations[0].settings.signing', 'must be one of segment, standard, custom, got "svix"'],
    ['standard signing without a secret', (d) => (d.destinations[0].settings.signing = 'standard'), 'destinations[0].settings.signing', 'signing: standard needs a secret'],
    [
      'standard signing with a secret that is not whsec_',
      (d) => Object.assign(d.destinations[0].settings, { signing: 'standard', sharedSecret: 'plain-secret-value' }),
      'destinations[0].settings.sharedSecret',
      'is not a Standard Webhooks secret; with signing: standard a secret is "whsec_" followed by the key in base64',
    ],
    [
      'standard signing with a whsec_ secret that is not base64',
      (d) => Object.assign(d.destinations[0].settings, { signing: 'standard', sharedSecrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_not*base64!'] }),
      'destinations[0].settings.sharedSecrets[1]',
      'is not a Standard Webhooks secret',
    ],
    ['standard signing with an empty whsec_ secret', (d) => Object.assign(d.destinations[0].settings, { signing: 'standard', sharedSecret: 'whsec_' }), 'destinations[0].settings.sharedSecret', 'is not a Standard Webhooks secret'],
    ['webhook-signature as a static header', (d) => (d.destinations[0].settings.webhooks[0].headers['Webhook-Signature'] = 'v1,x'), 'destinations[0].settings.webhooks[0].headers.Webhook-Signature', 'is reserved (set by Switchyard with signing: standard)'],
    ['blockPrivateNetworks not a boolean', (d) => (d.delivery = { blockPrivateNetworks: 'yes' }), 'delivery.blockPrivateNetworks', 'must be true or false, got "yes"'],
  ];

  it('never quotes a secret in its messages', () => {
    const doc = base();
    Object.assign(doc.destinations[0].settings, { signing: 'standard', sharedSecrets: ['whsec_c2VjcmV0', 'top-secret-value'] });
    const errors = failed(parse(doc));
    expect(errors).toHaveLength(1);
    expect(errors.join('\n')).not.toContain('top-secret-value');
  });

  it('the base config itself loads', () => {
    expect(loaded(parse(base())).sources).toHaveLength(1);
  });

  it.each(cases)('%s', (_name, mutate, path, what) => {
    const doc = base();
    mutate(doc);
    const errors = failed(parse(doc));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^${escape(`${FILE}: ${path}: `)}`));
    expect(errors[0]).toContain(what);
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('every problem is reported at once', () => {
  it('names all three problems of a config with three', () => {
    const doc = base();
    doc.kafka = { brokerz: ['b:9092'] };
    doc.destinations[0].settings.webhooks[0].url = 'ftp://x';
    doc.sources[0].destinations.push('nowhere');
    const errors = failed(parse(doc));
    expect(errors).toEqual([
      `${FILE}: kafka.brokerz: unknown key "brokerz"; did you mean "brokers"?`,
      `${FILE}: sources[0].destinations[1]: no destination has id "nowhere"; known destination ids: hooks-main`,
      `${FILE}: destinations[0].settings.webhooks[0].url: must be an absolute http:// or https:// URL, not "ftp://"`,
    ]);
  });

  it('reports a wrong webhook count and a bad entry together', () => {
    const doc = base();
    doc.destinations[0].settings.webhooks = Array.from({ length: 6 }, () => ({ url: 'https://x.example.com' }));
    doc.destinations[0].settings.webhooks[3].url = 'nope';
    const errors = failed(parse(doc));
    expect(errors).toHaveLength(2);
    expect(errors.some((e) => e.startsWith(`${FILE}: destinations[0].settings.webhooks: at most 5 entries, got 6`))).toBe(true);
    expect(errors.some((e) => e.startsWith(`${FILE}: destinations[0].settings.webhooks[3].url:`))).toBe(true);
  });
});

describe('YAML syntax errors', () => {
  it.each([
    ['kafka:\n  brokers: [a:1\nfoo: 1\n', 'line 3, column 1'],
    ['a: b: c\n', 'line 1, column 4'],
    ['kafka: {}\nkafka: {}\n', 'line 2, column 1'],
  ])('%j is reported with its line and column', (text, where) => {
    const errors = failed(parseConfigText(text, FILE, {}));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^${escape(`${FILE}: ${where}: `)}`));
    expect(errors[0]).not.toContain('\n');
  });

  it('hints at quoting when an unquoted ${...} breaks a flow mapping, and stops after a few errors', () => {
    const errors = failed(parseConfigText('admin: { token: ${TOKEN}, port: 1 }\ngateway: { port: 1 }\n', FILE, { TOKEN: 't' }));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.length).toBeLessThanOrEqual(5);
    expect(errors[0]).toMatch(/^test\.yaml: line 1, column \d+: .*quote values that use \$\{\.\.\.\}/);
  });

  it('accepts the same reference quoted', () => {
    expect(loaded(parseConfigText(`admin: { token: "\${TOKEN}", port: 1 }\n${SOURCE}`, FILE, { TOKEN: 't' })).admin.token).toBe('t');
  });

  it('refuses an unknown tag rather than guessing what it meant', () => {
    const errors = failed(parseConfigText('admin: { token: !secret abc }\n', FILE, {}));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^test\.yaml: line 1, column 17: .*Unresolved tag: !secret/);
  });

  it('refuses a top level that is not a mapping', () => {
    expect(failed(parseConfigText('- a\n- b\n', FILE, {}))).toEqual([`${FILE}: (top level): must be a mapping (key: value), got a list`]);
  });
});

describe('${ENV} interpolation', () => {
  const admin = (text: string, env: Record<string, string | undefined>) =>
    parseConfigText(`admin:\n  token: ${text}\n${SOURCE}`, FILE, env);

  it.each([
    ['${TOKEN}', { TOKEN: 'abc' }, 'abc'],
    ['"${TOKEN:-fallback}"', {}, 'fallback'],
    ['"${TOKEN:-fallback}"', { TOKEN: '' }, 'fallback'],
    ['"${TOKEN:-fallback}"', { TOKEN: 'set' }, 'set'],
    ['"${TOKEN:-}x"', {}, 'x'],
    ['"pre-${A}-${B}-post"', { A: '1', B: '2' }, 'pre-1-2-post'],
    ['"$${TOKEN}"', { TOKEN: 'abc' }, '${TOKEN}'],
    ['"cost: $5"', {}, 'cost: $5'],
    // A value that looks like YAML stays one string: interpolation runs after parsing.
    ['${TOKEN}', { TOKEN: 'x\nkafka: {brokers: [evil:1]}\n"' }, 'x\nkafka: {brokers: [evil:1]}\n"'],
  ] as const)('%s with %j gives %j', (text, env, expected) => {
    const config = loaded(admin(text, env));
    expect(config.admin.token).toBe(expected);
    expect(config.kafka.brokers).toEqual(['localhost:9092']);
  });

  it('names the missing variable and the path', () => {
    const doc = base();
    doc.destinations[0].settings.sharedSecret = '${HOOKS_MAIN_SECRET}';
    expect(failed(parse(doc))).toEqual([
      `${FILE}: destinations[0].settings.sharedSecret: environment variable HOOKS_MAIN_SECRET is not set; set it (a secret has no default)`,
    ]);
  });

  it('reports a missing variable once, not also as the bad value it leaves behind', () => {
    const doc = base();
    doc.destinations[0].settings.webhooks[0].url = '${HOOK_URL}';
    const errors = failed(parse(doc));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('destinations[0].settings.webhooks[0].url: environment variable HOOK_URL is not set');
  });

  it('refuses a malformed reference', () => {
    const errors = failed(admin('"${not a name}"', {}));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^test\.yaml: admin\.token: .*write \$\$\{ for a literal/);
  });

  it('does not touch keys', () => {
    const doc = base();
    doc.destinations[0].settings.webhooks[0].headers = { 'X-${NAME}': 'v' };
    const errors = failed(parse(doc, { NAME: 'Team' }));
    expect(errors[0]).toContain('is not a legal HTTP header name');
  });
});

describe('KAFKA_BROKERS', () => {
  const withBrokers = `kafka:\n  brokers: [file-broker:9092]\n${SOURCE}`;

  it.each([
    ['b1:9092,b2:9093', ['b1:9092', 'b2:9093']],
    [' b1:9092 , b2:9093 ,', ['b1:9092', 'b2:9093']],
    [undefined, ['file-broker:9092']],
    ['', ['file-broker:9092']],
  ])('%j gives brokers %j', (value, brokers) => {
    expect(loaded(parseConfigText(withBrokers, FILE, { KAFKA_BROKERS: value })).kafka.brokers).toEqual(brokers);
  });

  it('applies when the file has no kafka section', () => {
    expect(loaded(parseConfigText(SOURCE, FILE, { KAFKA_BROKERS: 'k:1' })).kafka.brokers).toEqual(['k:1']);
  });

  it('is validated, and the error says where the value came from', () => {
    const errors = failed(parseConfigText(withBrokers, FILE, { KAFKA_BROKERS: 'good:1,bad' }));
    expect(errors).toEqual([`${FILE}: kafka.brokers[1]: "bad" must be host:port, e.g. localhost:9092 (the value comes from KAFKA_BROKERS)`]);
  });
});

describe('loadConfigFile', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names a missing file in its one error', () => {
    const file = join(dir, 'missing.yaml');
    const errors = failed(loadConfigFile(file, {}));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^${escape(file)}: .*no such file`));
  });

  it('names a directory given as the file', () => {
    const errors = failed(loadConfigFile(dir, {}));
    expect(errors).toEqual([`${dir}: (file): is a directory; give the path of a YAML file`]);
  });

  it('prefixes every error with the file it read', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, `gateway: { port: -1 }\nlog: { level: loud }\n${SOURCE}`);
    const errors = failed(loadConfigFile(file, {}));
    expect(errors).toHaveLength(2);
    for (const error of errors) expect(error.startsWith(`${file}: `)).toBe(true);
  });
});

describe('an unset variable outside a secret path', () => {
  it('may be given a default, and the message says how', () => {
    expect(failed(parseConfigText(`kafka: { clientId: "\${CLIENT_ID}" }\n${SOURCE}`, FILE, {}))).toEqual([
      `${FILE}: kafka.clientId: environment variable CLIENT_ID is not set; set it, or give a default with \${CLIENT_ID:-value}`,
    ]);
  });
});

describe('the admin port: no open port with a weak token', () => {
  const admin = (host: string | undefined, token: string | undefined) =>
    parseConfigText(stringify({ admin: { port: 1, ...(host === undefined ? {} : { host }), ...(token === undefined ? {} : { token }) }, sources: [{ id: 'web' }] }), FILE, {});
  const STRONG = '3f9a0c7e1b5d4a2f';
  const ELSEWHERE = 'admin.host is "0.0.0.0", reachable from other machines';
  const GENERATE = 'generate one with `openssl rand -hex 32`, or bind the admin port to 127.0.0.1';

  it.each([
    ['a one-character token', '0.0.0.0', 'x', `is shorter than 16 characters and ${ELSEWHERE}: anyone who reaches the port could guess it; ${GENERATE}`],
    ['15 characters', '0.0.0.0', 'a'.repeat(15), `is shorter than 16 characters and ${ELSEWHERE}: anyone who reaches the port could guess it; ${GENERATE}`],
    ['the old example token', '0.0.0.0', 'dev-admin-token', `is a placeholder from the examples and ${ELSEWHERE}: set a token of your own; ${GENERATE}`],
    ['the Secret placeholder', '0.0.0.0', 'CHANGE-ME-admin-token', `is a placeholder from the examples and ${ELSEWHERE}: set a token of your own; ${GENERATE}`],
  ])('refuses %s on a non-loopback host, without quoting it', (_case, host, token, message) => {
    const errors = failed(admin(host, token));
    expect(errors).toEqual([`${FILE}: admin.token: ${message}`]);
  });

  it('names the host in the refusal', () => {
    expect(failed(admin('10.1.2.3', 'short'))[0]).toContain('admin.host is "10.1.2.3", reachable from other machines');
    expect(failed(admin('::', 'short'))[0]).toContain('admin.host is "::"');
  });

  it.each([
    ['a strong token on 0.0.0.0', '0.0.0.0', STRONG],
    ['no token on 0.0.0.0 (the admin API is off)', '0.0.0.0', undefined],
    ['a short token on the default host, 127.0.0.1', undefined, 'x'],
    ['a short token on ::1', '::1', 'x'],
    ['a short token on localhost', 'localhost', 'x'],
  ])('accepts %s', (_case, host, token) => {
    const config = loaded(admin(host, token));
    expect(config.admin.token).toBe(token);
    expect(config.admin.host).toBe(host ?? '127.0.0.1');
  });
});

describe('a value at a secret path is never quoted in an error', () => {
  const SECRET = '98765432';
  it.each([
    ['kafka.sasl.password', { kafka: { sasl: { mechanism: 'plain', username: 'u', password: 98765432 } } }, 'must be a string, got a number (not shown: it is a secret); quote it in YAML'],
    ['admin.token', { admin: { token: 98765432 } }, 'must be a string, got a number (not shown: it is a secret); quote it in YAML'],
    ['sources[0].writeKey', { sources: [{ id: 'web', writeKey: 98765432 }] }, 'must be a string, got a number (not shown: it is a secret); quote it in YAML'],
  ])('%s', (path, doc, message) => {
    const errors = failed(parseConfigText(stringify({ sources: [{ id: 'web' }], ...doc }), FILE, {}));
    expect(errors).toEqual([`${FILE}: ${path}: ${message}`]);
    expect(errors.join('\n')).not.toContain(SECRET);
  });

  it('not in a destination either: secrets, a credential header, a URL with user info, path and query', () => {
    const doc = base();
    doc.destinations[0].settings.sharedSecrets = 'whsec_bm90LWEtbGlzdC1zZWNyZXQ=';
    doc.destinations[0].settings.webhooks = [
      { url: 'https://hooks.example.com/a', headers: { Authorization: 98765432 } },
      { url: 'ftp://usertoken:pass-word-1@hooks.example.com/services/PATHSECRET?sig=QUERYSECRET' },
      { url: 'usertoken:pass-word-1@hooks.example.com/services/PATHSECRET?sig=QUERYSECRET' },
    ];
    const text = failed(parse(doc)).join('\n');
    for (const secret of [SECRET, 'whsec_', 'usertoken', 'pass-word-1', 'PATHSECRET', 'QUERYSECRET']) expect(text).not.toContain(secret);
    expect(text).toContain('destinations[0].settings.sharedSecrets: must be a list, got a string (not shown: it is a secret)');
    expect(text).toContain('destinations[0].settings.webhooks[0].headers.Authorization: header value must be a string, got a number (not shown: it is a secret)');
    expect(text).toContain('destinations[0].settings.webhooks[1].url: must be an absolute http:// or https:// URL, not "ftp://"');
  });

  it('nor a secret that a message elsewhere would quote (a secret pasted under the wrong key)', () => {
    const errors = failed(parseConfigText(`admin: { token: "s3cr3t-t0ken-value", port: "s3cr3t-t0ken-value" }\n${SOURCE}`, FILE, {}));
    expect(errors).toEqual([`${FILE}: admin.port: must be a whole number from 0 to 65535, got "****"`]);
  });
});
