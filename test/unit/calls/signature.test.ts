import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signBody } from '../../../src/calls/index.js';

/** The receiver's side, written independently: HMAC-SHA1 over the body's UTF-8 bytes. */
function expectedSignature(body: string, secret: string): string {
  return createHmac('sha1', Buffer.from(secret, 'utf8')).update(Buffer.from(body, 'utf8')).digest('hex');
}

describe('signBody', () => {
  it('matches the RFC 2202 HMAC-SHA1 test vector', () => {
    expect(signBody('what do ya want for nothing?', 'Jefe')).toBe('effcdf6ae5eb2fa2d27416d5f184df9c259a7c79');
  });

  const bodies: Array<[string, string, string]> = [
    [
      'the docs/webhooks.md track body',
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}',
      'hooks-main-secret',
    ],
    [
      'the docs/webhooks.md alias body',
      '{"version":1,"type":"alias","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"anon-7","User ID":"u-1"}',
      's3cr3t',
    ],
    ['a body with accents and CJK', '{"type":"delete","userId":"ユーザー-Zoë","timestamp":"2026-05-01T12:00:00.000Z"}', 'k'],
    ['a body with astral characters', '{"version":1,"type":"track","event":"🚀 Launched","properties":{"😀":"𝄞"}}', 'k'],
    ['a unicode secret', '{"a":1}', 'clé-🔑-秘密'],
    ['an empty body', '', 'k'],
  ];
  it.each(bodies)('signs %s as lowercase hex HMAC-SHA1 of its UTF-8 bytes', (_name, body, secret) => {
    const signature = signBody(body, secret);
    expect(signature).toMatch(/^[0-9a-f]{40}$/);
    expect(signature).toBe(expectedSignature(body, secret));
  });

  it('gives the same signature for the body as a string and as UTF-8 bytes', () => {
    const body = '{"version":1,"type":"track","event":"Zoë 🚀"}';
    expect(signBody(Buffer.from(body, 'utf8'), 'k')).toBe(signBody(body, 'k'));
  });

  it('depends on the secret and on every byte of the body', () => {
    const body = '{"version":1,"type":"identify","userId":"u-1"}';
    expect(signBody(body, 'a')).not.toBe(signBody(body, 'b'));
    expect(signBody(body, 'a')).not.toBe(signBody(body.replace('u-1', 'u-2'), 'a'));
  });
});
