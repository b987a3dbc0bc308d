import { createHash, createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { createSigner, decodeStandardSecret, standardSignature, webhookId } from '../../../src/delivery/signing.js';

// The Standard Webhooks test vector, as the spec's reference libraries test it
// (standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts, "sign function works").
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

const BODY = Buffer.from(
  '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}',
);
const NEW = 'whsec_bmV3LXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';
const OLD = 'whsec_b2xkLXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';

function headersOf(signer: ReturnType<typeof createSigner>, messageId: string | undefined, nowMs: number, body = BODY) {
  const headers: Record<string, string> = {};
  signer!(body, messageId, nowMs, headers);
  return headers;
}

describe('standardSignature', () => {
  it('matches the spec’s published test vector', () => {
    const key = decodeStandardSecret(VECTOR.secret)!;
    expect(standardSignature(key, VECTOR.msgId, VECTOR.timestamp, VECTOR.payload)).toBe(VECTOR.signature);
    expect(standardSignature(key, VECTOR.msgId, VECTOR.timestamp, Buffer.from(VECTOR.payload))).toBe(VECTOR.signature);
  });

  it('signs through createSigner the same way, with the attempt’s time in seconds', () => {
    const signer = createSigner({ signing: 'standard', secrets: [VECTOR.secret] });
    const headers = headersOf(signer, VECTOR.msgId, VECTOR.timestamp * 1000 + 999, Buffer.from(VECTOR.payload));
    expect(headers).toEqual({ 'webhook-id': VECTOR.msgId, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature });
  });
});

describe('decodeStandardSecret', () => {
  it.each([
    ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 24],
    ['whsec_c2VjcmV0', 6],
    ['whsec_c2VjcmV0LQ==', 7],
    ['whsec_c2VjcmV0LTE=', 8],
  ])('%s → %i key bytes', (secret, bytes) => {
    expect(decodeStandardSecret(secret)?.length).toBe(bytes);
  });

  it.each(['MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_', 'whsec_abc', 'whsec_c2VjcmV0LQ', 'whsec_c2Vj*mV0', 'whsec_c2VjcmV0LQ=', 'WHSEC_c2VjcmV0', 'whsec_c2Vj cmV0'])(
    '%j is not a whsec_<base64> secret',
    (secret) => {
      expect(decodeStandardSecret(secret)).toBeUndefined();
    },
  );
});

describe('createSigner', () => {
  const NOW = Date.UTC(2026, 4, 1, 12, 0, 0, 250);

  it('signs nothing without a secret', () => {
    expect(createSigner({ signing: 'segment', secrets: [] })).toBeUndefined();
    expect(createSigner({ signing: 'standard', secrets: [] })).toBeUndefined();
  });

  it('segment: X-Signature, hex HMAC-SHA1 keyed by the first secret of a rotation', () => {
    const expected = createHmac('sha1', 'new-secret').update(BODY).digest('hex');
    expect(headersOf(createSigner({ signing: 'segment', secrets: ['new-secret'] }), 'm-1', NOW)).toEqual({ 'x-signature': expected });
    expect(headersOf(createSigner({ signing: 'segment', secrets: ['new-secret', 'old-secret'] }), 'm-1', NOW)).toEqual({ 'x-signature': expected });
  });

  it('standard: one signature per secret, space-separated, each verified by the official library alone', () => {
    const headers = headersOf(createSigner({ signing: 'standard', secrets: [NEW, OLD] }), 'm-1', Date.now());
    expect(headers['webhook-id']).toBe('m-1');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    for (const secret of [NEW, OLD]) expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY.toString()));
    expect(() => new Webhook('whsec_b3RoZXItc2VjcmV0').verify(BODY, headers)).toThrow('No matching signature found');
  });

  it('standard: the timestamp is the attempt’s, and a later attempt signs anew', () => {
    const signer = createSigner({ signing: 'standard', secrets: [NEW] });
    const first = headersOf(signer, 'm-1', NOW);
    const retry = headersOf(signer, 'm-1', NOW + 60_000);
    expect(first['webhook-timestamp']).toBe(String(Math.floor(NOW / 1000)));
    expect(retry['webhook-timestamp']).toBe(String(Math.floor(NOW / 1000) + 60));
    expect(retry['webhook-id']).toBe(first['webhook-id']);
    expect(retry['webhook-signature']).not.toBe(first['webhook-signature']);
  });

  it('standard: without a message-id header the id is derived from the body, the same on every attempt', () => {
    const signer = createSigner({ signing: 'standard', secrets: [NEW] });
    const a = headersOf(signer, undefined, NOW);
    const b = headersOf(signer, '', NOW + 10_000);
    expect(a['webhook-id']).toMatch(/^sha256_[0-9a-f]{32}$/);
    expect(b['webhook-id']).toBe(a['webhook-id']);
    expect(headersOf(signer, undefined, NOW, Buffer.from('{"other":1}'))['webhook-id']).not.toBe(a['webhook-id']);
  });

  it.each([
    ['a line feed', 'm-1\nx'],
    ['a NUL', 'm\u00001'],
    ['a DEL', 'm\u007f1'],
    ['a Latin-1 letter', 'commande-é'],
    ['CJK', '注文-1'],
    ['an emoji', 'm-🎉'],
    ['a leading space', ' m-1'],
    ['a trailing tab', 'm-1\t'],
    ['257 characters', 'm'.repeat(257)],
  ])('standard: a messageId with %s becomes a header-safe id, the same on every attempt, that the official library verifies', (_what, messageId) => {
    const signer = createSigner({ signing: 'standard', secrets: [NEW] });
    const first = headersOf(signer, messageId, NOW);
    const expected = `msg_sha256_${createHash('sha256').update(messageId, 'utf8').digest('hex').slice(0, 32)}`;
    expect(first['webhook-id']).toBe(expected);
    expect(webhookId(messageId)).toBe(expected);
    expect(headersOf(signer, messageId, NOW + 10_000)['webhook-id']).toBe(expected);
    // What a receiver sees, signed now: its library verifies it.
    const live = headersOf(signer, messageId, Date.now());
    expect(live['webhook-id']).toBe(expected);
    expect(new Webhook(NEW).verify(BODY, live)).toEqual(JSON.parse(BODY.toString()));
  });

  it.each(['m-1', 'ajs-next-1714560000000-abc', '5b8c6a3e-3f8e-4a3c-9d1e-2f6b7c8d9e0f', 'a b', 'm'.repeat(256), '!~'])('standard: the messageId %j is the webhook-id as it is', (messageId) => {
    expect(webhookId(messageId)).toBe(messageId);
  });

  it('refuses a secret the config schema would have refused', () => {
    expect(() => createSigner({ signing: 'standard', secrets: ['plain'] })).toThrow('secret 1 is not one');
  });
});

describe('signing: custom', () => {
  const NOW = Date.UTC(2026, 4, 1, 12, 0, 0, 250);

  it('matches GitHub’s published X-Hub-Signature-256 example (prefix "sha256=", hex HMAC-SHA256 of the body)', () => {
    const signer = createSigner({ signing: 'custom', secrets: [], signature: { header: 'X-Hub-Signature-256', algorithm: 'sha256', encoding: 'hex', content: '{body}', prefix: 'sha256=', secret: "It's a Secret to Everybody" } });
    expect(headersOf(signer, 'm-1', NOW, Buffer.from('Hello, World!'))).toEqual({ 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' });
  });

  it('signs the content template with the timestamp and id it sends, keyed by the first shared secret', () => {
    const signer = createSigner({
      signing: 'custom',
      secrets: ['first-secret', 'second-secret'],
      signature: { header: 'X-Sig', algorithm: 'sha512', encoding: 'base64', content: 'v0:{id}:{timestamp}:{body}', timestampHeader: 'X-Sig-Time', idHeader: 'X-Sig-Id' },
    });
    const headers = headersOf(signer, 'm-1', NOW);
    const seconds = String(Math.floor(NOW / 1000));
    expect(headers).toEqual({
      'x-sig': createHmac('sha512', 'first-secret').update(`v0:m-1:${seconds}:${BODY.toString('utf8')}`).digest('base64'),
      'x-sig-time': seconds,
      'x-sig-id': 'm-1',
    });
  });

  it('[standard, custom] adds both schemes’ headers; each verifies alone', () => {
    const signer = createSigner({ signing: ['standard', 'custom'], secrets: [NEW], signature: { header: 'X-Legacy-Signature', algorithm: 'sha1', encoding: 'hex', content: '{body}', secret: 'legacy-secret' } });
    const now = Date.now();
    const headers = headersOf(signer, 'm-1', now);
    expect(headers['x-legacy-signature']).toBe(createHmac('sha1', 'legacy-secret').update(BODY).digest('hex'));
    expect(() => new Webhook(NEW).verify(BODY.toString('utf8'), headers)).not.toThrow();
  });
});
