import { describe, expect, it } from 'vitest';
import { DEFAULT_TOKEN_LIFETIME_MS, readTokenAnswer, tokenRequest, tokenUseEnd } from '../../../src/delivery/oauth2-token.js';

const ENDPOINT = 'http://127.0.0.1:9';

describe('tokenRequest', () => {
  it('clientAuth body: the credentials in the form, scope and audience beside them', () => {
    const request = tokenRequest({ tokenUrl: `${ENDPOINT}/t`, clientId: 'sy id', clientSecret: 's&c=r+t', scope: 'a b', audience: 'https://api', clientAuth: 'body' }, 'switchyard/1');
    expect(request.body).toBe('grant_type=client_credentials&scope=a+b&audience=https%3A%2F%2Fapi&client_id=sy+id&client_secret=s%26c%3Dr%2Bt');
    expect(request.headers).toEqual({ 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': 'switchyard/1' });
  });

  it('clientAuth basic: id and secret form-encoded, joined by ":", in Authorization (RFC 6749 section 2.3.1), not in the form', () => {
    const request = tokenRequest({ tokenUrl: `${ENDPOINT}/t`, clientId: 'sy:id', clientSecret: 's&c r', clientAuth: 'basic' }, 'switchyard/1');
    expect(request.body).toBe('grant_type=client_credentials');
    expect(Buffer.from(request.headers.authorization!.slice('Basic '.length), 'base64').toString('utf8')).toBe('sy%3Aid:s%26c+r');
  });
});

describe('tokenUseEnd', () => {
  it.each([
    [2_000, 1_800],
    [60_000, 54_000],
    [3_600_000, 3_570_000],
  ])('a token living %d ms is used for %d ms', (lifetime, used) => {
    expect(tokenUseEnd(1_000, lifetime)).toBe(1_000 + used);
  });
});

describe('readTokenAnswer', () => {
  it('a Bearer token with expires_in (a number or a string) is used until its expiry less the margin, counted from the request', () => {
    expect(readTokenAnswer(ENDPOINT, 200, '{"access_token":"tok-1","token_type":"Bearer","expires_in":2}', 10_000)).toEqual({ ok: true, token: 'tok-1', useUntilMs: 11_800 });
    expect(readTokenAnswer(ENDPOINT, 200, '{"access_token":"tok-1","token_type":"bearer","expires_in":"60"}', 0)).toEqual({ ok: true, token: 'tok-1', useUntilMs: 54_000 });
  });

  it('without expires_in (or with a useless one) the default lifetime applies', () => {
    for (const body of ['{"access_token":"t"}', '{"access_token":"t","expires_in":0}', '{"access_token":"t","expires_in":"soon"}']) {
      expect(readTokenAnswer(ENDPOINT, 200, body, 0)).toEqual({ ok: true, token: 't', useUntilMs: tokenUseEnd(0, DEFAULT_TOKEN_LIFETIME_MS) });
    }
  });

  it.each([
    [503, '', `token endpoint ${ENDPOINT} answered 503 Service Unavailable`],
    [401, '{"error":"invalid_client","error_description":"secret abc wrong"}', `token endpoint ${ENDPOINT} answered 401 Unauthorized (invalid_client)`],
    [400, '{"error":"bad\\ncode"}', `token endpoint ${ENDPOINT} answered 400 Bad Request`],
    [200, '<html>', `token endpoint ${ENDPOINT} answered 200 with a body that is not a JSON object`],
    [200, '{"token":"t"}', `token endpoint ${ENDPOINT} answered 200 without an access_token`],
    [200, '{"access_token":"a\\nb"}', `token endpoint ${ENDPOINT} answered 200 with an access_token that cannot go in a header`],
    [200, '{"access_token":"t","token_type":"mac"}', `token endpoint ${ENDPOINT} issued a token of type "mac"; only Bearer tokens are sent`],
  ])('%d %s fails: %s', (status, body, reason) => {
    expect(readTokenAnswer(ENDPOINT, status, body, 0)).toEqual({ ok: false, reason });
  });
});
