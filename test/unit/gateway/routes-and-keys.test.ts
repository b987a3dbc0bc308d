import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { matchRoute } from '../../../src/gateway/routes.js';
import { UNKNOWN_WRITE_KEY, authorizeHeader, readAuthorization, sourceIdForWriteKey } from '../../../src/gateway/write-key.js';

describe('matchRoute', () => {
  it.each([
    ['/v1/batch', '/v1/batch', 'batch'],
    ['/v1/import', '/v1/import', 'batch'],
    ['/v1/batch?debug=1', '/v1/batch', 'batch'],
    ['/v1/batch/', '/v1/batch', 'batch'],
    ['/v1/identify', '/v1/identify', 'identify'],
    ['/v1/track', '/v1/track', 'track'],
    ['/v1/page', '/v1/page', 'page'],
    ['/v1/screen', '/v1/screen', 'screen'],
    ['/v1/group', '/v1/group', 'group'],
    ['/v1/alias', '/v1/alias', 'alias'],
  ])('%s → %s (%s)', (target, template, kind) => {
    expect(matchRoute(target)).toEqual({ template, kind });
  });

  it.each(['/', '/v1', '/v1/Batch', '/v1/batch//', '/v2/batch', '/v1/batchx', '/v1/delete', '/metrics'])('%s matches nothing', (target) => {
    expect(matchRoute(target)).toBeUndefined();
  });
});

const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

describe('readAuthorization', () => {

  it.each([
    ['the write key as user name with an empty password', basic('wk-1:'), 'wk-1'],
    ['a password, which is ignored', basic('wk-1:whatever'), 'wk-1'],
    ['no colon at all', basic('wk-1'), 'wk-1'],
    ['a lower-case scheme', `basic ${Buffer.from('wk-1:').toString('base64')}`, 'wk-1'],
  ])('reads %s', (_what, header, writeKey) => {
    expect(readAuthorization(header)).toEqual({ kind: 'write-key', writeKey });
  });

  it('reports an absent header', () => {
    expect(readAuthorization(undefined)).toEqual({ kind: 'absent' });
    expect(readAuthorization('  ')).toEqual({ kind: 'absent' });
  });

  it('refuses another scheme with what to send instead', () => {
    const result = readAuthorization('Bearer abc');
    expect(result).toMatchObject({ kind: 'unusable' });
    expect(result.kind === 'unusable' && result.message).toContain('uses the "Bearer" scheme: send "Basic base64(<write key>:)"');
  });

  it('refuses an empty user name', () => {
    expect(readAuthorization(basic(':secret'))).toMatchObject({ kind: 'unusable' });
  });
});

describe('sourceIdForWriteKey', () => {
  function config(sources: unknown[]): Config {
    const text = JSON.stringify({
      sources,
      destinations: [{ id: 'd', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:1/h' }] } }],
    });
    const loaded = parseConfigText(text, 'test.yaml', {});
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    return loaded.config;
  }

  it('finds the source by its write key, and nothing for an unknown key', () => {
    const current = config([
      { id: 'web', writeKey: 'wk-web', destinations: ['d'] },
      { id: 'kafka-only', destinations: ['d'] },
    ]);
    expect(sourceIdForWriteKey(current, 'wk-web')).toBe('web');
    expect(sourceIdForWriteKey(current, 'wk-other')).toBeUndefined();
    expect(sourceIdForWriteKey(current, '')).toBeUndefined();
  });

  it('tells apart keys that differ in one character, and a key that is a prefix of another', () => {
    const current = config([
      { id: 'a', writeKey: 'wk-0001', destinations: ['d'] },
      { id: 'b', writeKey: 'wk-0002', destinations: ['d'] },
      { id: 'c', writeKey: 'wk-0001-long', destinations: ['d'] },
    ]);
    expect(['wk-0001', 'wk-0002', 'wk-0001-long', 'wk-000', 'wk-0001-lon'].map((key) => sourceIdForWriteKey(current, key))).toEqual(['a', 'b', 'c', undefined, undefined]);
  });

  it('places a request by its Authorization header before anything else is read', () => {
    const current = config([{ id: 'web', writeKey: 'wk-web', destinations: ['d'] }]);
    expect(authorizeHeader(current, basic('wk-web:'))).toEqual({ kind: 'source', sourceId: 'web' });
    expect(authorizeHeader(current, undefined)).toEqual({ kind: 'in-body' });
    expect(authorizeHeader(current, basic('wk-nope:'))).toEqual({ kind: 'refused', message: UNKNOWN_WRITE_KEY });
    expect(authorizeHeader(current, 'Bearer x')).toMatchObject({ kind: 'refused', message: expect.stringContaining('"Bearer" scheme') });
  });

  it('follows a reloaded config (a new object)', () => {
    const before = config([{ id: 'web', writeKey: 'wk-1', destinations: ['d'] }]);
    const after = config([{ id: 'web', writeKey: 'wk-2', destinations: ['d'] }]);
    expect(sourceIdForWriteKey(before, 'wk-1')).toBe('web');
    expect(sourceIdForWriteKey(after, 'wk-1')).toBeUndefined();
    expect(sourceIdForWriteKey(after, 'wk-2')).toBe('web');
  });
});
