import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { maskConfig, printableUrl, secretsOf, webhookLabel } from '../../../src/config/mask.js';
import type { Config } from '../../../src/config/schema.js';

const SECRETS = {
  adminToken: 'admin-token-1f3a',
  writeKey: 'write-key-9c2e',
  saslPassword: 'sasl-password-77aa',
  sslKey: '-----BEGIN PRIVATE KEY-----\nkey-material-5d1c\n-----END PRIVATE KEY-----',
  sslCert: '-----BEGIN CERTIFICATE-----\ncert-material-0b8f\n-----END CERTIFICATE-----',
  sslPassphrase: 'ssl-passphrase-4e6d',
  sharedSecret: 'shared-secret-a0b1',
  authHeader: 'Bearer header-token-c2d3',
  urlPassword: 'url-password-e4f5',
};

function configWithSecrets(): Config {
  const text = `
kafka:
  ssl:
    rejectUnauthorized: true
    ca: public-ca-text
    key: \${SSL_KEY}
    cert: \${SSL_CERT}
    passphrase: \${SSL_PASSPHRASE}
  sasl: { mechanism: scram-sha-512, username: switchyard, password: "\${SASL_PASSWORD}" }
admin: { token: "\${ADMIN_TOKEN}" }
sources:
  - { id: web, writeKey: "\${WRITE_KEY}", destinations: [hooks-main] }
destinations:
  - id: hooks-main
    type: webhooks
    settings:
      sharedSecret: \${SHARED_SECRET}
      webhooks:
        - url: https://user:\${URL_PASSWORD}@hooks.example.com/a
          headers: { Authorization: "\${AUTH_HEADER}", X-Team: growth }
`;
  const result = parseConfigText(text, 'secrets.yaml', {
    SSL_KEY: SECRETS.sslKey,
    SSL_CERT: SECRETS.sslCert,
    SSL_PASSPHRASE: SECRETS.sslPassphrase,
    SASL_PASSWORD: SECRETS.saslPassword,
    ADMIN_TOKEN: SECRETS.adminToken,
    WRITE_KEY: SECRETS.writeKey,
    SHARED_SECRET: SECRETS.sharedSecret,
    URL_PASSWORD: SECRETS.urlPassword,
    AUTH_HEADER: SECRETS.authHeader,
  });
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

describe('maskConfig', () => {
  it('prints no secret value', () => {
    const printed = stringify(maskConfig(configWithSecrets()));
    for (const [name, secret] of Object.entries(SECRETS)) {
      // The distinctive part of each secret, so a partial leak is caught too.
      const marker = secret.match(/[a-z]+-[a-z]+-[0-9a-f]{4}|[a-z]+-material-[0-9a-f]{4}/)?.[0];
      expect(marker, name).toBeDefined();
      expect(printed, name).not.toContain(marker);
    }
  });

  it('replaces each secret with **** and keeps everything else', () => {
    const masked = maskConfig(configWithSecrets()) as Config;
    expect(masked.admin.token).toBe('****');
    expect(masked.sources[0]?.writeKey).toBe('****');
    expect(masked.kafka.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'switchyard', password: '****' });
    expect(masked.kafka.ssl).toEqual({ rejectUnauthorized: true, ca: 'public-ca-text', key: '****', cert: '****', passphrase: '****' });
    const settings = masked.destinations[0]?.settings;
    expect(settings?.sharedSecret).toBe('****');
    // A URL is printed as its origin: user info, path and query may hold a token.
    expect(settings?.webhooks[0]).toEqual({
      url: 'https://hooks.example.com/****',
      headers: { Authorization: '****', 'X-Team': 'growth' },
    });
  });

  it('leaves the config it was given untouched', () => {
    const config = configWithSecrets();
    const before = structuredClone(config);
    maskConfig(config);
    expect(config).toEqual(before);
  });

  it('does not invent fields that were not set', () => {
    const result = parseConfigText('sources: [{ id: web }]\n', 'minimal.yaml', {});
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const masked = maskConfig(result.config) as Config;
    expect(masked.admin).toEqual({ port: 9464, host: '127.0.0.1', allowedHosts: [] });
    expect(masked.kafka.sasl).toBeUndefined();
  });
});

describe('sharedSecrets', () => {
  const text = `
sources: [{ id: web, destinations: [hooks-main] }]
destinations:
  - id: hooks-main
    type: webhooks
    settings:
      signing: standard
      sharedSecrets: ["\${NEW}", "\${OLD}"]
      webhooks: [{ url: https://hooks.example.com/a }]
`;
  const result = parseConfigText(text, 'rotation.yaml', { NEW: 'whsec_bmV3LXNlY3JldC0x', OLD: 'whsec_b2xkLXNlY3JldC0y' });
  if (!result.ok) throw new Error(result.errors.join('\n'));

  it('masks each secret of a rotation', () => {
    const masked = maskConfig(result.config) as Config;
    expect(masked.destinations[0]?.settings.sharedSecrets).toEqual(['****', '****']);
    expect(stringify(masked)).not.toContain('whsec_');
  });

  it('lists both for redacting logs', () => {
    expect(secretsOf(result.config)).toEqual(expect.arrayContaining(['whsec_bmV3LXNlY3JldC0x', 'whsec_b2xkLXNlY3JldC0y']));
  });
});

describe('secretsOf', () => {
  it('lists every secret value, and the secret parts of each URL, longest first', () => {
    const secrets = secretsOf(configWithSecrets());
    expect([...secrets].sort()).toEqual([...Object.values(SECRETS), 'user', '/a'].sort());
    for (let i = 1; i < secrets.length; i++) {
      expect(secrets[i - 1]!.length).toBeGreaterThanOrEqual(secrets[i]!.length);
    }
  });

  it('is empty when nothing secret is configured', () => {
    const result = parseConfigText('gateway: { port: 1 }\nsources: [{ id: web }]\n', 'plain.yaml', {});
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(secretsOf(result.config)).toEqual([]);
  });
});

describe('webhook URLs', () => {
  const url = 'https://usertoken:pass%40word@hooks.example.com:8443/services/PATHSECRET?sig=QUERY%2FSECRET&team=growth#frag';

  it('print as their origin without user info, and with their index', () => {
    expect(printableUrl(url)).toBe('https://hooks.example.com:8443');
    expect(webhookLabel(1, url)).toBe('webhooks[1] https://hooks.example.com:8443');
    expect(printableUrl('https://hooks.example.com')).toBe('https://hooks.example.com');
    expect(printableUrl('not a url')).toBe('(a URL that does not parse)');
  });

  it('give every secret part to the log scrubber, raw and decoded', () => {
    const result = parseConfigText(
      `sources: [{ id: web }]\ndestinations: [{ id: d, type: webhooks, settings: { webhooks: [{ url: "${url}" }] } }]\n`,
      'url.yaml',
      {},
    );
    if (!result.ok) throw new Error(result.errors.join('\n'));
    const secrets = secretsOf(result.config);
    expect(secrets).toEqual(
      expect.arrayContaining(['usertoken', 'pass%40word', 'pass@word', '/services/PATHSECRET', 'QUERY%2FSECRET', 'QUERY/SECRET', 'sig=QUERY%2FSECRET&team=growth']),
    );
    expect((maskConfig(result.config) as Config).destinations[0]?.settings.webhooks[0]?.url).toBe('https://hooks.example.com:8443/****');
  });
});

describe('a Kafka destination of another cluster', () => {
  const text = `
sources: [{ id: web, destinations: [lake] }]
destinations:
  - id: lake
    type: kafka
    settings:
      topic: events
      headers: { x-api-token: header-token-4e1b, team: growth }
      cluster:
        brokers: [lake-kafka:9093]
        tls: { key: lake-key-material-8c3d, ca: lake-ca-public }
        sasl: { mechanism: plain, username: sy, password: lake-password-2a9f }
`;
  const result = parseConfigText(text, 'lake.yaml', {});
  if (!result.ok) throw new Error(result.errors.join('\n'));

  it('prints no secret of its cluster or headers, and keeps the rest', () => {
    const printed = stringify(maskConfig(result.config));
    for (const secret of ['lake-password-2a9f', 'lake-key-material-8c3d', 'header-token-4e1b']) expect(printed).not.toContain(secret);
    for (const kept of ['lake-ca-public', 'growth', 'lake-kafka:9093']) expect(printed).toContain(kept);
  });

  it('gives those secrets to the log scrubber', () => {
    expect(secretsOf(result.config)).toEqual(expect.arrayContaining(['lake-password-2a9f', 'lake-key-material-8c3d', 'header-token-4e1b']));
  });
});
