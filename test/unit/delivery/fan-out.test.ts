import { describe, expect, it } from 'vitest';
import { fanOut, summarize } from '../../../src/delivery/fan-out.js';
import type { UrlResult } from '../../../src/delivery/fan-out.js';
import type { HttpSender, SendResult } from '../../../src/delivery/http-sender.js';
import { webhookTarget } from '../../../src/delivery/http-sender.js';

const ok: SendResult = { outcome: '2xx', verdict: 'delivered', status: 200, reason: '200 OK', durationMs: 1 };
const e503: SendResult = { outcome: '5xx', verdict: 'retryable', status: 503, reason: '503 Service Unavailable', durationMs: 1 };
const e400: SendResult = { outcome: '4xx', verdict: 'permanent', status: 400, reason: '400 Bad Request', durationMs: 1 };
const e429 = (retryAfterMs: number): SendResult => ({ outcome: '4xx', verdict: 'retryable', status: 429, reason: '429 Too Many Requests', retryAfterMs, durationMs: 1 });
const cancelled: SendResult = { outcome: 'cancelled', durationMs: 1 };
const r = (index: number, result: SendResult): UrlResult => ({ index, result });

describe('summarize', () => {
  it('one 2xx delivers, whatever the others did', () => {
    expect(summarize([r(1, e503), r(0, ok), r(2, cancelled)])).toEqual({
      delivered: true,
      worthRetrying: true,
      failures: [{ index: 1, reason: '503 Service Unavailable' }],
    });
  });

  it('any retryable failure makes the event retryable; failures are listed in URL order', () => {
    expect(summarize([r(2, e503), r(0, e400)])).toEqual({
      delivered: false,
      worthRetrying: true,
      failures: [
        { index: 0, reason: '400 Bad Request' },
        { index: 2, reason: '503 Service Unavailable' },
      ],
    });
  });

  it('only permanent failures: nothing to retry', () => {
    expect(summarize([r(0, e400)])).toEqual({ delivered: false, worthRetrying: false, failures: [{ index: 0, reason: '400 Bad Request' }] });
  });

  it('keeps the longest Retry-After', () => {
    expect(summarize([r(0, e429(2000)), r(1, e429(5000)), r(2, e503)]).retryAfterMs).toBe(5000);
    expect(summarize([r(0, e503)])).not.toHaveProperty('retryAfterMs');
  });

  it("a status in the destination's stopOn is not worth retrying, and its Retry-After is not kept", () => {
    const e410: SendResult = { outcome: '4xx', verdict: 'retryable', status: 410, reason: '410 Gone', retryAfterMs: 9000, durationMs: 1 };
    expect(summarize([r(0, e410)], new Set([410]))).toEqual({
      delivered: false,
      worthRetrying: false,
      failures: [{ index: 0, reason: '410 Gone (listed in settings.retry.stopOn: not retried)' }],
    });
    // Another URL's retryable failure still makes the event worth a retry.
    expect(summarize([r(0, e410), r(1, e503)], new Set([410]))).toMatchObject({ worthRetrying: true });
    expect(summarize([r(0, e410)])).toMatchObject({ worthRetrying: true, retryAfterMs: 9000 });
  });
});

describe('fanOut', () => {
  const targets = ['http://a.test/1', 'http://b.test/2', 'http://c.test/3'].map((url) => ({
    target: webhookTarget(url),
    headers: { 'content-type': 'application/json', 'x-entry': url },
  }));

  it('sends to every URL at once with the entry and event headers, and cancels the rest after a 2xx', async () => {
    const seen: { url: string; headers: Record<string, string> }[] = [];
    const sender: Pick<HttpSender, 'send' | 'close'> = {
      send: (target, _body, headers, cancel) => {
        seen.push({ url: target.url, headers });
        if (target.url.includes('b.test')) return Promise.resolve(ok);
        return new Promise<SendResult>((resolve) => cancel?.addEventListener('abort', () => resolve(cancelled)));
      },
      close: () => Promise.resolve(),
    };
    const results = await fanOut(sender, targets, Buffer.from('{}'), { 'x-signature': 'sig' });
    expect(seen.map((s) => s.url)).toEqual(['http://a.test/1', 'http://b.test/2', 'http://c.test/3']);
    expect(seen[0]!.headers).toEqual({ 'content-type': 'application/json', 'x-entry': 'http://a.test/1', 'x-signature': 'sig' });
    expect(results.map((x) => [x.index, x.result.outcome]).sort()).toEqual([
      [0, 'cancelled'],
      [1, '2xx'],
      [2, 'cancelled'],
    ]);
  });

  it('sends only to the selected URLs, and a 2xx does not cancel the kept ones (probes, watched requests)', async () => {
    const seen: string[] = [];
    let release!: () => void;
    const kept = new Promise<void>((resolve) => (release = resolve));
    const sender: Pick<HttpSender, 'send' | 'close'> = {
      send: (target, _body, _headers, cancel) => {
        seen.push(target.url);
        if (target.url.includes('a.test')) return Promise.resolve(ok);
        // c.test is kept: it must get no cancel signal, and answers once the test lets it.
        expect(cancel).toBeUndefined();
        return kept.then(() => e503);
      },
      close: () => Promise.resolve(),
    };
    const pending = fanOut(sender, targets, Buffer.from('{}'), {}, { send: 0b101, keep: 0b100 });
    let done = false;
    void pending.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    // a.test answered 2xx, but the event waits for the kept request to finish.
    expect(done).toBe(false);
    release();
    const results = await pending;
    expect(seen.sort()).toEqual(['http://a.test/1', 'http://c.test/3']);
    expect(results.map((x) => [x.index, x.result.outcome]).sort()).toEqual([
      [0, '2xx'],
      [2, '5xx'],
    ]);
  });

  it('a selection of no URL sends nothing; a single selected URL is sent without a cancel signal', async () => {
    const signals: (AbortSignal | undefined)[] = [];
    const sender: Pick<HttpSender, 'send' | 'close'> = {
      send: (_target, _body, _headers, cancel) => {
        signals.push(cancel);
        return Promise.resolve(ok);
      },
      close: () => Promise.resolve(),
    };
    expect(await fanOut(sender, targets, Buffer.from('{}'), {}, { send: 0, keep: 0 })).toEqual([]);
    expect(signals).toHaveLength(0);
    expect(await fanOut(sender, targets.slice(0, 1), Buffer.from('{}'), {}, { send: 1, keep: 0 })).toEqual([{ index: 0, result: ok }]);
    expect(signals).toEqual([undefined]);
  });
});
