// The client's HTTP transport against a real local HTTP server: the exact request,
// batch sizes, and what each kind of answer leads to.
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Analytics, AnalyticsDeliveryError, CLIENT_USER_AGENT } from 'switchyard-client';
import type { AnalyticsOptions } from 'switchyard-client';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-int-5c1e';
/** The client package's own version (not the daemon's). */
const VERSION = (JSON.parse(readFileSync(new URL('../../packages/client/package.json', import.meta.url), 'utf8')) as { version: string }).version;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let receiver: Receiver;
let client: Analytics | undefined;
const reported: AnalyticsDeliveryError[] = [];

beforeEach(async () => {
  receiver = await startReceiver();
  reported.length = 0;
});

afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = undefined;
  await receiver.close();
});

function connect(options: AnalyticsOptions = {}): Analytics {
  client = new Analytics(WRITE_KEY, {
    endpoint: receiver.url(''),
    onError: (error) => reported.push(error),
    ...options,
  });
  return client;
}

interface BatchBody {
  batch: Record<string, unknown>[];
  sentAt: string;
}

const bodies = () => receiver.requests.map((r) => JSON.parse(r.text) as BatchBody);

describe('the request', () => {
  it('POST /v1/batch with Basic auth, JSON, the client User-Agent and the batch shape', async () => {
    connect({ flushAt: 100 });
    const before = Date.now();
    const ids = [
      client!.identify({ userId: 'u-1', traits: { plan: 'pro' } }),
      client!.track({ userId: 'u-1', event: 'Order Completed', properties: { total: 99.5 }, integrations: { All: false, Webhooks: true } }),
      client!.page({ anonymousId: 'a-9', name: 'Pricing', properties: { path: '/pricing' } }),
      client!.screen({ userId: 'u-1', name: 'Home', context: { os: { name: 'iOS', version: '18' } } }),
      client!.group({ userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' } }),
      client!.alias({ userId: 'u-1', previousId: 'a-9', timestamp: '2009-11-10T23:00:00+0000' }),
    ];
    await client!.flush();
    const after = Date.now();

    expect(receiver.requests).toHaveLength(1);
    const request = receiver.requests[0]!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/v1/batch');
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe(`switchyard-client/${VERSION}`);
    expect(CLIENT_USER_AGENT).toBe(`switchyard-client/${VERSION}`);
    expect(Number(request.headers['content-length'])).toBe(request.body.length);

    const body = JSON.parse(request.text) as BatchBody;
    expect(Object.keys(body)).toEqual(['batch', 'sentAt']);
    expect(body.sentAt).toMatch(ISO_MS);
    expect(Date.parse(body.sentAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(body.sentAt)).toBeLessThanOrEqual(after);

    expect(body.batch.map((c) => [c.type, c.messageId])).toEqual([
      ['identify', ids[0]],
      ['track', ids[1]],
      ['page', ids[2]],
      ['screen', ids[3]],
      ['group', ids[4]],
      ['alias', ids[5]],
    ]);
    const library = { name: 'switchyard-client', version: VERSION };
    const [identify, track, page, screen, group, alias] = body.batch;
    expect(identify).toEqual({ type: 'identify', userId: 'u-1', messageId: ids[0], timestamp: identify!.timestamp, traits: { plan: 'pro' }, context: { library } });
    expect(track).toEqual({
      type: 'track',
      userId: 'u-1',
      messageId: ids[1],
      timestamp: track!.timestamp,
      event: 'Order Completed',
      properties: { total: 99.5 },
      context: { library },
      integrations: { All: false, Webhooks: true },
    });
    expect(page).toMatchObject({ type: 'page', anonymousId: 'a-9', name: 'Pricing', properties: { path: '/pricing' } });
    expect(page).not.toHaveProperty('userId');
    expect(screen).toMatchObject({ type: 'screen', name: 'Home', context: { os: { name: 'iOS', version: '18' }, library } });
    expect(group).toMatchObject({ type: 'group', userId: 'u-1', groupId: 'g-1', traits: { name: 'Acme' } });
    expect(alias).toMatchObject({ type: 'alias', userId: 'u-1', previousId: 'a-9', timestamp: '2009-11-10T23:00:00.000Z' });
    for (const call of body.batch.slice(0, 5)) {
      expect(call.timestamp).toMatch(ISO_MS);
      expect(Date.parse(call.timestamp as string)).toBeGreaterThanOrEqual(before);
    }
    // The write key travels only in the Authorization header.
    expect(request.text).not.toContain(WRITE_KEY);
  });

  it('flushAt 3: the third call sends a batch; calls made meanwhile go in the next', async () => {
    connect({ flushAt: 3 });
    // All seven made before the first request is answered: 3 go at once, the other 4 next.
    for (let i = 0; i < 7; i++) client!.track({ userId: 'u', event: `e${i}` });
    await client!.flush();
    expect(bodies().map((b) => b.batch.length)).toEqual([3, 4]);
    expect(bodies().flatMap((b) => b.batch.map((c) => c.event))).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
  });

  it('flushAt 1: every call is its own request', async () => {
    connect({ flushAt: 1 });
    client!.track({ userId: 'u', event: 'a' });
    await client!.flush();
    client!.track({ userId: 'u', event: 'b' });
    await client!.flush();
    expect(bodies().map((b) => b.batch.map((c) => c.event))).toEqual([['a'], ['b']]);
  });

  it('flushAfter sends a lone call without flush()', async () => {
    connect({ flushAfter: 200 });
    client!.track({ userId: 'u', event: 'alone' });
    await waitFor(() => receiver.requests.length >= 1, { timeoutMs: 10_000, what: 'the timed flush' });
    expect(bodies()[0]!.batch.map((c) => c.event)).toEqual(['alone']);
  });

  it('no request body over 500 KB; every call arrives once, in order', async () => {
    connect({ flushAt: 1_000 });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(client!.track({ userId: 'u', event: 'big', properties: { pad: 'y'.repeat(30_000) } }));
    await client!.flush();
    expect(receiver.requests.length).toBe(3);
    for (const request of receiver.requests) expect(request.body.length).toBeLessThanOrEqual(500 * 1024);
    expect(bodies().flatMap((b) => b.batch.map((c) => c.messageId))).toEqual(ids);
  });
});

describe('answers', () => {
  it('503 with Retry-After: 1 is retried a second later with the same calls and a fresh sentAt', async () => {
    receiver.replyWith((_request, index) => (index === 0 ? { status: 503, headers: { 'retry-after': '1' } } : { status: 200 }));
    connect({ minRetryDelay: 10, maxRetryDelay: 10 });
    client!.track({ userId: 'u', event: 'a' });
    client!.track({ userId: 'u', event: 'b' });
    await client!.flush();
    const [first, second] = receiver.requests;
    expect(receiver.requests).toHaveLength(2);
    // NOTE: not a speed assertion: Retry-After says "not before 1 s".
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(990);
    const [a, b] = bodies();
    expect(b!.batch).toEqual(a!.batch);
    expect(Date.parse(b!.sentAt)).toBeGreaterThan(Date.parse(a!.sentAt));
    expect(reported).toEqual([]);
  });

  it('400 is not retried: flush() rejects with the calls and the server message; onError is not told', async () => {
    receiver.reply({ status: 400, body: '{"success":false,"code":"bad_json","message":"the body is not JSON: send a JSON object"}' });
    connect();
    const id = client!.track({ userId: 'u', event: 'a' });
    const error = await client!.flush().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(AnalyticsDeliveryError);
    expect(error).toMatchObject({ code: 'rejected', status: 400, attempts: 1 });
    expect((error as Error).message).toContain('HTTP 400: bad_json: the body is not JSON: send a JSON object');
    expect((error as AnalyticsDeliveryError).calls.map((c) => c.messageId)).toEqual([id]);
    expect(receiver.requests).toHaveLength(1);
    expect(reported).toEqual([]);
  });

  it('a 401 that echoes the write key: reported without it', async () => {
    receiver.reply({ status: 401, body: JSON.stringify({ success: false, code: 'unknown_write_key', message: `write key ${WRITE_KEY} is unknown` }) });
    connect();
    client!.identify({ userId: 'u' });
    const error = (await client!.flush().catch((err: unknown) => err)) as AnalyticsDeliveryError;
    expect(error.message).toContain('HTTP 401: unknown_write_key: write key [redacted] is unknown');
    expect(error.message).not.toContain(WRITE_KEY);
  });

  it('a server that never answers: each attempt gives up after requestTimeout, then retries_exhausted', async () => {
    receiver.reply('hang');
    connect({ requestTimeout: 300, maxRetries: 1, minRetryDelay: 10, maxRetryDelay: 10 });
    client!.track({ userId: 'u', event: 'a' });
    const error = (await client!.flush().catch((err: unknown) => err)) as AnalyticsDeliveryError;
    expect(error).toMatchObject({ code: 'retries_exhausted', attempts: 2 });
    expect(error.message).toContain('no complete answer within 300 ms');
    expect(receiver.requests).toHaveLength(2);
  });

  it('nothing listening: network errors are retried, then reported', async () => {
    const url = receiver.url('');
    await receiver.close();
    receiver = await startReceiver(); // for afterEach; the old port stays closed
    client = new Analytics(WRITE_KEY, { endpoint: url, maxRetries: 2, minRetryDelay: 10, maxRetryDelay: 20, onError: (e) => reported.push(e) });
    client.track({ userId: 'u', event: 'a' });
    const error = (await client.flush().catch((err: unknown) => err)) as AnalyticsDeliveryError;
    expect(error).toMatchObject({ code: 'retries_exhausted', attempts: 3, status: undefined });
    expect(error.message).toMatch(/network error: ECONNREFUSED/);
    expect(reported).toHaveLength(0);
  });

  it('a background send that fails goes to onError (nobody awaits it)', async () => {
    receiver.reply({ status: 400, body: '{"success":false,"code":"bad_json","message":"no"}' });
    connect({ flushAt: 1 });
    const id = client!.track({ userId: 'u', event: 'a' });
    await waitFor(() => reported.length >= 1, { timeoutMs: 10_000, what: 'onError' });
    expect(reported.map((e) => [e.code, e.status, e.calls.map((c) => c.messageId)])).toEqual([['rejected', 400, [id]]]);
    await expect(client!.flush()).resolves.toBeUndefined();
  });

  it('close() sends what is queued, and later calls throw', async () => {
    connect();
    client!.track({ userId: 'u', event: 'last words' });
    await client!.close();
    expect(bodies().map((b) => b.batch.map((c) => c.event))).toEqual([['last words']]);
    expect(() => client!.track({ userId: 'u', event: 'too late' })).toThrow(/called after close\(\)/);
  });
});
