// The token cache of an oauth2 destination, with the clock and the token endpoint in
// the test's hands: one request in flight, renewal at expiry less the margin, a 401
// renewing once, a failing endpoint held for FAILURE_HOLD_MS.
import { describe, expect, it } from 'vitest';
import type { FormAnswer } from '../../../src/delivery/http-sender.js';
import { FAILURE_HOLD_MS, TokenSource, TokenSources } from '../../../src/delivery/token-source.js';

const CONFIG = { tokenUrl: 'http://127.0.0.1:9/tenant-secret/token?x=1', clientId: 'sy', clientSecret: 'secret', clientAuth: 'body' as const };

function fixture() {
  let now = 1_000_000;
  const pending: ((answer: FormAnswer) => void)[] = [];
  const requests: { origin: string; path: string; body: string }[] = [];
  const results: string[] = [];
  const source = new TokenSource({
    config: CONFIG,
    userAgent: 'switchyard/test',
    now: () => now,
    postForm: (target, body) => {
      requests.push({ origin: target.origin, path: target.path, body });
      return new Promise((resolve) => pending.push(resolve));
    },
    counted: (result) => results.push(result),
  });
  const answer = (a: FormAnswer) => pending.shift()!(a);
  const issue = (token: string, expiresIn = 2) => answer({ status: 200, body: JSON.stringify({ access_token: token, token_type: 'Bearer', expires_in: expiresIn }) });
  return { source, requests, results, answer, issue, advance: (ms: number) => (now += ms) };
}

describe('TokenSource', () => {
  it('64 callers at once make one token request and all get its token; it is fresh until expiry less the margin', async () => {
    const f = fixture();
    expect(f.source.fresh()).toBeUndefined();
    const waiting = Array.from({ length: 64 }, () => f.source.token());
    expect(f.requests).toHaveLength(1);
    expect(f.requests[0]).toMatchObject({ origin: 'http://127.0.0.1:9', path: '/tenant-secret/token?x=1' });
    expect(f.requests[0]!.body).toContain('grant_type=client_credentials');
    f.issue('tok-1');
    for (const outcome of await Promise.all(waiting)) expect(outcome).toMatchObject({ ok: true, token: 'tok-1' });
    f.advance(1_799);
    expect(f.source.fresh()).toBe('tok-1');
    f.advance(1);
    expect(f.source.fresh()).toBeUndefined();
    const next = f.source.token();
    expect(f.requests).toHaveLength(2);
    f.issue('tok-2');
    expect(await next).toMatchObject({ token: 'tok-2' });
    expect(f.results).toEqual(['issued', 'issued']);
  });

  it('after a 401, one renewal for every request that saw the rejected token; a token renewed already is not renewed again', async () => {
    const f = fixture();
    const first = f.source.token();
    f.issue('tok-1', 60);
    await first;
    const rejections = Array.from({ length: 10 }, () => f.source.afterRejection('tok-1'));
    expect(f.requests).toHaveLength(1 + 1);
    f.issue('tok-2', 60);
    for (const outcome of await Promise.all(rejections)) expect(outcome).toMatchObject({ token: 'tok-2' });
    // A late 401 to the old token: the new one is the answer, no request.
    expect(await f.source.afterRejection('tok-1')).toMatchObject({ token: 'tok-2' });
    expect(f.requests).toHaveLength(2);
    // A 401 to the current token: renewed.
    const again = f.source.afterRejection('tok-2');
    expect(f.requests).toHaveLength(3);
    f.issue('tok-3', 60);
    expect(await again).toMatchObject({ token: 'tok-3' });
  });

  it('a failing endpoint: the failure names the origin (not the path) and the status, and is the answer for FAILURE_HOLD_MS without a new request', async () => {
    const f = fixture();
    const first = f.source.token();
    f.answer({ status: 503, body: 'down' });
    const failed = await first;
    expect(failed).toEqual({ ok: false, reason: 'token endpoint http://127.0.0.1:9 answered 503 Service Unavailable' });
    expect(await f.source.token()).toEqual(failed);
    expect(await f.source.afterRejection('tok-0')).toEqual(failed);
    expect(f.requests).toHaveLength(1);
    f.advance(FAILURE_HOLD_MS);
    const retried = f.source.token();
    expect(f.requests).toHaveLength(2);
    f.answer({ failure: { outcome: 'network', verdict: 'retryable', reason: 'connection refused' } });
    expect(await retried).toEqual({ ok: false, reason: 'token endpoint http://127.0.0.1:9: connection refused' });
    expect(f.results).toEqual(['failed', 'failed']);
  });
});

describe('TokenSources', () => {
  it('keeps a destination source while its settings stay the same, and forgets the ones left out', () => {
    const made: string[] = [];
    const sources = new TokenSources((id, config) => {
      made.push(`${id}:${config.clientId}`);
      return new TokenSource({ config, userAgent: 'u', postForm: () => Promise.reject(new Error('unused')), counted: () => undefined });
    });
    const a = sources.of('a', CONFIG);
    expect(sources.of('a', { ...CONFIG })).toBe(a);
    expect(sources.of('a', { ...CONFIG, clientId: 'other' })).not.toBe(a);
    sources.keepOnly(new Set());
    sources.of('a', { ...CONFIG, clientId: 'other' });
    expect(made).toEqual(['a:sy', 'a:other', 'a:other']);
  });
});
