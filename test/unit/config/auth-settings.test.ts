// `settings.auth` of a destination (docs/webhooks.md#authentication): what loads, the
// path-qualified errors, and that its secrets never show in check-config's output or
// in a message about a bad file.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { maskConfig, secretsOf } from '../../../src/config/mask.js';

const FILE = 'test.yaml';
const ENV = { CLIENT_SECRET: 'client-secret-8e1f2a', BEARER: 'bearer-token-77c9d0', PASSWORD: 'basic-password-41b3', TOKEN_PATH: 'tenant-5f0c' };

function withSettings(extra: Record<string, unknown>, headers: Record<string, string> = {}) {
  const doc = {
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/in', headers }], ...extra } }],
  };
  return parseConfigText(stringify(doc), FILE, ENV);
}

function auth(extra: Record<string, unknown>) {
  const loaded = withSettings({ auth: extra });
  if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
  return loaded.config.destinations[0]!.settings.auth;
}

describe('settings.auth', () => {
  it('loads basic, bearer and oauth2 (clientAuth body by default), with ${} secrets', () => {
    expect(auth({ basic: { username: 'switchyard', password: '${PASSWORD}' } })).toEqual({ basic: { username: 'switchyard', password: ENV.PASSWORD } });
    expect(auth({ bearer: { token: '${BEARER}' } })).toEqual({ bearer: { token: ENV.BEARER } });
    expect(auth({ oauth2: { tokenUrl: 'http://127.0.0.1:9/oauth/token', clientId: 'sy', clientSecret: '${CLIENT_SECRET}' } })).toEqual({
      oauth2: { tokenUrl: 'http://127.0.0.1:9/oauth/token', clientId: 'sy', clientSecret: ENV.CLIENT_SECRET, clientAuth: 'body' },
    });
    expect(auth({ oauth2: { tokenUrl: 'https://127.0.0.1:9/t', clientId: 'sy', clientSecret: 'x', scope: 'events:write', audience: 'https://api.internal', clientAuth: 'basic' } })).toEqual({
      oauth2: { tokenUrl: 'https://127.0.0.1:9/t', clientId: 'sy', clientSecret: 'x', scope: 'events:write', audience: 'https://api.internal', clientAuth: 'basic' },
    });
  });

  it.each([
    [{}, 'destinations[0].settings.auth: give exactly one of basic, bearer, oauth2, got none'],
    [{ basic: { username: 'a', password: 'b' }, bearer: { token: 't' } }, 'destinations[0].settings.auth: give exactly one of basic, bearer, oauth2, got basic and bearer'],
    [{ bearer: {} }, 'destinations[0].settings.auth.bearer.token: is required; add it'],
    [{ oauth2: { tokenUrl: 'ftp://127.0.0.1/t', clientId: 'a', clientSecret: 'b' } }, 'destinations[0].settings.auth.oauth2.tokenUrl: must be an absolute http:// or https:// URL, not "ftp://"'],
    [{ oauth2: { tokenUrl: 'http://127.0.0.1/t', clientId: 'a', clientSecret: 'b', clientAuth: 'header' } }, 'destinations[0].settings.auth.oauth2.clientAuth: must be one of body, basic, got "header"'],
    [{ oauth2: { tokenUrl: 'http://127.0.0.1/t', clientId: 'a', clientSecret: 'b', grant: 'password' } }, 'destinations[0].settings.auth.oauth2.grant: unknown key "grant"'],
  ])('refuses %j', (value, message) => {
    const loaded = withSettings({ auth: value });
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors.some((e) => e.startsWith(`${FILE}: ${message}`))).toBe(true);
  });

  it('refuses a static Authorization header beside settings.auth, naming the header', () => {
    const loaded = withSettings({ auth: { bearer: { token: 't' } } }, { authorization: 'Bearer other' });
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors).toContain(
      `${FILE}: destinations[0].settings.webhooks[0].headers.authorization: settings.auth sets the Authorization header; remove this one, or remove settings.auth and keep the static header`,
    );
  });

  it('never quotes a secret in an error about the file', () => {
    const loaded = withSettings({ auth: { oauth2: { tokenUrl: 'http://127.0.0.1/t', clientId: 'a', clientSecret: 42_424_242, clientAuth: 'x' } } });
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors.join('\n')).not.toContain('42424242');
    expect(loaded.errors.join('\n')).toContain('clientSecret: must be a string, got a number (not shown: it is a secret)');
  });

  it('check-config masks the password, the token, the client secret and the token URL past its origin; the log scrubber knows them', () => {
    const loaded = parseConfigText(
      stringify({
        sources: [{ id: 'web', destinations: ['a', 'b', 'c'] }],
        destinations: [
          { id: 'a', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/a' }], auth: { basic: { username: 'sy', password: '${PASSWORD}' } } } },
          { id: 'b', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/b' }], auth: { bearer: { token: '${BEARER}' } } } },
          {
            id: 'c',
            type: 'webhooks',
            settings: { webhooks: [{ url: 'http://127.0.0.1:9/c' }], auth: { oauth2: { tokenUrl: 'http://127.0.0.1:9/${TOKEN_PATH}/token', clientId: 'sy', clientSecret: '${CLIENT_SECRET}' } } },
          },
        ],
      }),
      FILE,
      ENV,
    );
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const printed = JSON.stringify(maskConfig(loaded.config));
    for (const secret of Object.values(ENV)) expect(printed).not.toContain(secret);
    const masked = maskConfig(loaded.config) as { destinations: { settings: { auth: unknown } }[] };
    expect(masked.destinations.map((d) => d.settings.auth)).toEqual([
      { basic: { username: 'sy', password: '****' } },
      { bearer: { token: '****' } },
      { oauth2: { tokenUrl: 'http://127.0.0.1:9/****', clientId: 'sy', clientSecret: '****', clientAuth: 'body' } },
    ]);
    const scrubbed = secretsOf(loaded.config);
    for (const secret of [ENV.CLIENT_SECRET, ENV.BEARER, ENV.PASSWORD]) expect(scrubbed).toContain(secret);
    expect(scrubbed.some((s) => s.includes(ENV.TOKEN_PATH))).toBe(true);
  });
});
