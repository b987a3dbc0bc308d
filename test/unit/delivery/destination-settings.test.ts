import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { prepareDestination } from '../../../src/delivery/destination-settings.js';
import { TokenSource, TokenSources } from '../../../src/delivery/token-source.js';

const version = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const YAML = `
sources:
  - id: web
destinations:
  - id: hooks
    type: webhooks
    settings:
      sharedSecret: s3cret-value
      webhooks:
        - url: https://hooks.example.com/segment?team=growth
          headers: { X-Team: growth }
        - url: https://bot:pa55word@k.example.com/in?api_key=abcdef123
`;

function load(): Config {
  const result = parseConfigText(YAML, 'test.yaml', {});
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

describe('prepareDestination', () => {
  const config = load();
  const prepared = prepareDestination(config.destinations[0]!);

  it('builds each entry’s headers in contract order', () => {
    expect(prepared.targets[0]!.headers).toEqual({ 'content-type': 'application/json', 'user-agent': `switchyard/${version}`, 'X-Team': 'growth' });
    expect(Object.keys(prepared.targets[0]!.headers)).toEqual(['content-type', 'user-agent', 'X-Team']);
    expect(prepared.targets[0]!.target).toEqual({ url: 'https://hooks.example.com/segment?team=growth', origin: 'https://hooks.example.com', path: '/segment?team=growth' });
  });

  it('turns user:password in a URL into Basic authorization', () => {
    expect(prepared.targets[1]!.headers.authorization).toBe(`Basic ${Buffer.from('bot:pa55word').toString('base64')}`);
  });

  it('prints URLs as their index and origin: no user info, path or query', () => {
    expect(prepared.printableUrls).toEqual(['webhooks[0] https://hooks.example.com', 'webhooks[1] https://k.example.com']);
  });

  it('signs with the secret (segment: X-Signature, keyed by the secret as written)', () => {
    const headers: Record<string, string> = {};
    prepared.sign!(Buffer.from('{"a":1}'), 'm-1', Date.UTC(2026, 4, 1), headers);
    expect(headers).toEqual({ 'x-signature': createHmac('sha1', 's3cret-value').update('{"a":1}').digest('hex') });
  });
});

describe('prepareDestination: settings.retry.stopOn', () => {
  const withRetry = (retry: string) =>
    parseConfigText(`sources: [{ id: web }]\ndestinations:\n  - id: hooks\n    type: webhooks\n    settings:\n      webhooks: [{ url: https://hooks.example.com/ }]\n${retry}`, 'test.yaml', {});

  it('carries the listed statuses as a set, and nothing when none are listed', () => {
    for (const [retry, expected] of [
      ['      retry: { stopOn: [410, 404] }\n', new Set([410, 404])],
      ['      retry: { stopOn: [] }\n', undefined],
      ['      retry: { maxWindow: 1h }\n', undefined],
      ['', undefined],
    ] as const) {
      const result = withRetry(retry);
      if (!result.ok) throw new Error(result.errors.join('\n'));
      expect(prepareDestination(result.config.destinations[0]!).stopOn).toEqual(expected);
    }
  });
});

describe('prepareDestination with settings.auth', () => {
  const withAuth = (auth: string) => {
    const result = parseConfigText(
      `
sources: [{ id: web }]
destinations:
  - id: hooks
    type: webhooks
    settings:
      auth: ${auth}
      webhooks: [{ url: 'http://127.0.0.1:9/a' }, { url: 'http://u:p@127.0.0.1:9/b' }]
`,
      'test.yaml',
      {},
    );
    if (!result.ok) throw new Error(result.errors.join('\n'));
    return result.config.destinations[0]!;
  };

  it('basic and bearer set the same Authorization on every URL, over one from user info', () => {
    const basic = prepareDestination(withAuth('{ basic: { username: "sy", password: "pä55:word" } }'));
    for (const { headers } of basic.targets) expect(headers.authorization).toBe(`Basic ${Buffer.from('sy:pä55:word', 'utf8').toString('base64')}`);
    const bearer = prepareDestination(withAuth('{ bearer: { token: "tok-123" } }'));
    for (const { headers } of bearer.targets) expect(headers.authorization).toBe('Bearer tok-123');
    expect(bearer.oauth2).toBeUndefined();
  });

  it('oauth2 takes its token source from the deliverer, and refuses to go without one', () => {
    const destination = withAuth('{ oauth2: { tokenUrl: "http://127.0.0.1:9/t", clientId: c, clientSecret: s } }');
    expect(() => prepareDestination(destination)).toThrow('destination hooks has auth.oauth2 but its settings were prepared without token sources');
    const sources = new TokenSources((_id, oauth2) => new TokenSource({ config: oauth2, userAgent: 'u', postForm: () => Promise.reject(new Error('unused')), counted: () => undefined }));
    const prepared = prepareDestination(destination, sources);
    expect(prepared.oauth2).toBe(sources.of('hooks', destination.settings.auth && 'oauth2' in destination.settings.auth ? destination.settings.auth.oauth2 : ({} as never)));
    // Per request, not static: the token changes.
    expect(prepared.targets[0]!.headers.authorization).toBeUndefined();
  });
});
