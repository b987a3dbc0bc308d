// The queue behind Analytics: when batches go out, how they are cut, retried and
// drained. A fake transport and fake timers; no socket.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Analytics,
  AnalyticsClosedError,
  AnalyticsDeliveryError,
  AnalyticsQueueFullError,
} from '../src/index.js';
import type { AnalyticsOptions } from '../src/index.js';
import { MAX_BATCH_BYTES, batchBody, classifyAnswer } from '../src/http-transport.js';
import { fakeTransport } from './fake-transport.js';
import type { FakeTransport } from './fake-transport.js';

const noRedact = (text: string) => text;
const answer503 = (retryAfter?: string) =>
  classifyAnswer(503, new Headers(retryAfter === undefined ? {} : { 'retry-after': retryAfter }), '', noRedact, Date.now());

let transport: FakeTransport;
let client: Analytics;
const errors: AnalyticsDeliveryError[] = [];

function start(options: AnalyticsOptions = {}): Analytics {
  transport = fakeTransport();
  client = new Analytics('wk', { transport, onError: (error) => errors.push(error), ...options });
  return client;
}

/**
 * flush(), with the fake clock run until nothing is scheduled (retry waits included);
 * resolves to the rejection error, or undefined.
 */
async function flushRunningTimers(): Promise<unknown> {
  const flushed = client.flush().then(
    () => undefined,
    (error: unknown) => error,
  );
  await vi.runAllTimersAsync();
  return flushed;
}

/** Lets pending promise callbacks run without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

/** The promise's outcome so far: resolved, rejected (with the error) or pending. */
function track<T>(promise: Promise<T>): { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } {
  const outcome: { state: 'pending' | 'resolved' | 'rejected'; error?: unknown } = { state: 'pending' };
  promise.then(
    () => (outcome.state = 'resolved'),
    (error: unknown) => {
      outcome.state = 'rejected';
      outcome.error = error;
    },
  );
  return outcome;
}

beforeEach(() => {
  vi.useFakeTimers({ now: Date.parse('2026-05-01T12:00:00.000Z') });
  errors.length = 0;
});

afterEach(async () => {
  transport.release();
  const closing = client.close().catch(() => undefined);
  await vi.runAllTimersAsync();
  await closing;
  vi.useRealTimers();
});

describe('when batches go out', () => {
  it('flushAt: nothing is sent below it; the call that reaches it sends the batch at once', async () => {
    start({ flushAt: 3 });
    client.track({ userId: 'u', event: 'one' });
    client.track({ userId: 'u', event: 'two' });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(transport.sent).toHaveLength(0);
    client.track({ userId: 'u', event: 'three' });
    await settle();
    expect(transport.sent).toHaveLength(1);
    expect(transport.sent[0]?.messages.map((m) => m.event)).toEqual(['one', 'two', 'three']);
    expect(transport.sent[0]?.at).toBe(Date.parse('2026-05-01T12:00:04.999Z'));
  });

  it('flushAt defaults to 20', async () => {
    start();
    for (let i = 0; i < 19; i++) client.track({ userId: 'u', event: `e${i}` });
    await settle();
    expect(transport.sent).toHaveLength(0);
    client.track({ userId: 'u', event: 'e19' });
    await settle();
    expect(transport.sent.map((b) => b.calls.length)).toEqual([20]);
  });

  it('flushAfter (default 5 s) since the last flush sends what is queued', async () => {
    start();
    const t0 = Date.now();
    client.identify({ userId: 'u', traits: { a: 1 } });
    await vi.advanceTimersByTimeAsync(4_999);
    expect(transport.sent).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.sent.map((b) => [b.at - t0, b.calls.length])).toEqual([[5_000, 1]]);

    // The next call, 1 s after that flush, waits for the rest of the interval: 4 s.
    await vi.advanceTimersByTimeAsync(1_000);
    client.identify({ userId: 'u', traits: { a: 2 } });
    await vi.advanceTimersByTimeAsync(3_999);
    expect(transport.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.sent.map((b) => b.at - t0)).toEqual([5_000, 10_000]);
  });

  it('a flushAfter of 250 ms is followed', async () => {
    start({ flushAfter: 250 });
    const t0 = Date.now();
    client.page({ userId: 'u', name: 'Home' });
    await vi.advanceTimersByTimeAsync(250);
    expect(transport.sent.map((b) => b.at - t0)).toEqual([250]);
  });

  it('flushAt 1 sends every call at once, in order', async () => {
    start({ flushAt: 1 });
    for (const event of ['a', 'b', 'c']) {
      client.track({ userId: 'u', event });
      await settle();
    }
    expect(transport.sent.map((b) => b.messages.map((m) => m.event))).toEqual([['a'], ['b'], ['c']]);
  });

  it('calls made while a batch is in flight go in the next batch, in order', async () => {
    start({ flushAt: 1 });
    transport.hold();
    client.track({ userId: 'u', event: 'a' });
    await settle();
    client.track({ userId: 'u', event: 'b' });
    client.track({ userId: 'u', event: 'c' });
    await settle();
    expect(transport.sent).toHaveLength(1);
    transport.release();
    await settle();
    expect(transport.sent.map((b) => b.messages.map((m) => m.event))).toEqual([['a'], ['b', 'c']]);
  });

  it('leaves no timer behind once the queue is empty', async () => {
    start({ flushAt: 2 });
    client.track({ userId: 'u', event: 'a' });
    expect(vi.getTimerCount()).toBe(1);
    client.track({ userId: 'u', event: 'b' });
    await settle();
    expect(transport.sent).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('how batches are cut', () => {
  it('no batch body is over 500 KB; every call goes out once, in order', async () => {
    start({ flushAt: 1_000 });
    // 40 calls of about 30 KB: 1.2 MB in all.
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push(client.track({ userId: 'u', event: `e${i}`, properties: { pad: 'x'.repeat(30_000) } }));
    await client.flush();
    const sizes = transport.sent.map((b) => Buffer.byteLength(batchBody(b.calls, new Date().toISOString())));
    expect(transport.sent.length).toBeGreaterThanOrEqual(3);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MAX_BATCH_BYTES);
    // Each batch but the last is full: its next call would not have fitted.
    for (let i = 0; i < transport.sent.length - 1; i++) {
      const next = transport.sent[i + 1]?.calls[0];
      const withNext = [...(transport.sent[i]?.calls ?? []), ...(next === undefined ? [] : [next])];
      expect(Buffer.byteLength(batchBody(withNext, new Date().toISOString()))).toBeGreaterThan(MAX_BATCH_BYTES);
    }
    expect(transport.sent.flatMap((b) => b.calls.map((c) => c.messageId))).toEqual(ids);
  });

  it('a batch that lands exactly on 500 KB is sent whole', async () => {
    start({ flushAt: 1_000 });
    const probe = client.track({ userId: 'u', event: 'e', properties: { pad: '' } });
    await client.flush();
    const emptyCall = transport.sent[0]?.calls[0];
    expect(emptyCall?.messageId).toBe(probe);
    const overhead = Buffer.byteLength(batchBody([], new Date().toISOString()));
    // Sixteen calls plus separators fill the body to exactly MAX_BATCH_BYTES.
    const room = MAX_BATCH_BYTES - overhead - 15;
    const each = Math.floor(room / 16);
    const last = room - each * 15;
    const base = emptyCall?.bytes ?? 0;
    for (let i = 0; i < 16; i++) {
      client.track({ userId: 'u', event: 'e', properties: { pad: 'x'.repeat((i === 15 ? last : each) - base) } });
    }
    await client.flush();
    const batch = transport.sent[1];
    expect(batch?.calls).toHaveLength(16);
    expect(Buffer.byteLength(batchBody(batch?.calls ?? [], new Date().toISOString()))).toBe(MAX_BATCH_BYTES);
  });

  it('at most 2,500 calls per batch (the gateway limit)', async () => {
    start({ flushAt: 10_000 });
    for (let i = 0; i < 3_001; i++) client.track({ userId: 'u', event: 'e' });
    await client.flush();
    expect(transport.sent.map((b) => b.calls.length)).toEqual([2_500, 501]);
  });
});

describe('flush and close', () => {
  it('flush() sends at once and resolves when the calls were accepted', async () => {
    start();
    transport.hold();
    client.track({ userId: 'u', event: 'a' });
    const flushed = track(client.flush());
    await settle();
    expect(transport.sent).toHaveLength(1);
    expect(flushed.state).toBe('pending');
    transport.release();
    await settle();
    expect(flushed.state).toBe('resolved');
  });

  it('flush() with nothing queued resolves at once', async () => {
    start();
    await expect(client.flush()).resolves.toBeUndefined();
    expect(transport.sent).toHaveLength(0);
  });

  it('flush() waits for a batch already in flight', async () => {
    start({ flushAt: 1 });
    transport.hold();
    client.track({ userId: 'u', event: 'a' });
    await settle();
    const flushed = track(client.flush());
    await settle();
    expect(flushed.state).toBe('pending');
    transport.release();
    await settle();
    expect(flushed.state).toBe('resolved');
  });

  it('close() drains the queue, closes the transport once, stops timers and refuses new calls', async () => {
    start();
    for (let i = 0; i < 5; i++) client.track({ userId: 'u', event: `e${i}` });
    const first = client.close();
    const second = client.close();
    expect(second).toBe(first);
    await first;
    expect(transport.sent.map((b) => b.calls.length)).toEqual([5]);
    expect(transport.closed).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
    let thrown: unknown;
    try {
      client.identify({ userId: 'u' });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AnalyticsClosedError);
    expect((thrown as AnalyticsClosedError).code).toBe('closed');
    expect((thrown as Error).message).toMatch(/analytics\.identify\(\) called after close\(\)/);
    expect(transport.sent).toHaveLength(1);
  });

  it('close() waits through retries before resolving', async () => {
    start({ minRetryDelay: 1_000, maxRetryDelay: 1_000 });
    transport.answer(answer503(), answer503());
    client.track({ userId: 'u', event: 'a' });
    const closed = track(client.close());
    await vi.advanceTimersByTimeAsync(999);
    expect(closed.state).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(closed.state).toBe('resolved');
    expect(transport.sent).toHaveLength(3);
    expect(transport.closed).toBe(1);
  });

  it('close() rejects with the delivery error when calls were refused (not onError), and still closes the transport', async () => {
    start();
    transport.answer(classifyAnswer(400, new Headers(), '', noRedact, Date.now()));
    client.track({ userId: 'u', event: 'a' });
    await expect(client.close()).rejects.toBeInstanceOf(AnalyticsDeliveryError);
    expect(transport.closed).toBe(1);
    expect(errors).toEqual([]);
  });

  it('refuses calls past maxQueuedCalls with a retriable queue_full error', () => {
    start({ maxQueuedCalls: 2 });
    client.track({ userId: 'u', event: 'a' });
    client.track({ userId: 'u', event: 'b' });
    let thrown: unknown;
    try {
      client.track({ userId: 'u', event: 'c' });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(AnalyticsQueueFullError);
    expect(thrown).toMatchObject({ code: 'queue_full', retriable: true });
  });
});

describe('retries', () => {
  it('retries a 503 with exponential backoff and jitter, then succeeds', async () => {
    start({ minRetryDelay: 100, maxRetryDelay: 30_000 });
    transport.answer(answer503(), answer503(), answer503());
    client.track({ userId: 'u', event: 'a' });
    const t0 = Date.now();
    expect(await flushRunningTimers()).toBeUndefined();
    const gaps = transport.sent.map((b, i) => b.at - (i === 0 ? t0 : (transport.sent[i - 1]?.at ?? 0)));
    expect(gaps).toHaveLength(4);
    // Retry n waits between half and all of 100 ms × 2^(n−1).
    expect(gaps[1]).toBeGreaterThanOrEqual(50);
    expect(gaps[1]).toBeLessThanOrEqual(100);
    expect(gaps[2]).toBeGreaterThanOrEqual(100);
    expect(gaps[2]).toBeLessThanOrEqual(200);
    expect(gaps[3]).toBeGreaterThanOrEqual(200);
    expect(gaps[3]).toBeLessThanOrEqual(400);
    // The same calls each time.
    const ids = transport.sent.map((b) => b.calls.map((c) => c.messageId).join());
    expect(new Set(ids).size).toBe(1);
    expect(errors).toHaveLength(0);
  });

  it('honours Retry-After: the retry comes exactly that much later', async () => {
    start({ minRetryDelay: 10, maxRetryDelay: 10 });
    transport.answer(answer503('2'));
    client.track({ userId: 'u', event: 'a' });
    const flushed = track(client.flush());
    await settle();
    expect(transport.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(transport.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.sent).toHaveLength(2);
    await settle();
    expect(flushed.state).toBe('resolved');
  });

  it('retries 429 with its Retry-After too', async () => {
    start({ minRetryDelay: 10, maxRetryDelay: 10 });
    transport.answer(classifyAnswer(429, new Headers({ 'retry-after': '3' }), '', noRedact, Date.now()));
    client.track({ userId: 'u', event: 'a' });
    const t0 = Date.now();
    expect(await flushRunningTimers()).toBeUndefined();
    expect(transport.sent.map((b) => b.at - t0)).toEqual([0, 3_000]);
  });

  it('does not retry a 400: flush() rejects with the calls (and onError is not told)', async () => {
    start();
    transport.answer(
      classifyAnswer(400, new Headers(), '{"success":false,"code":"bad_request","message":"no batch"}', noRedact, Date.now()),
    );
    const id = client.track({ userId: 'u', event: 'a' });
    const error = await flushRunningTimers();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(transport.sent).toHaveLength(1);
    expect(error).toBeInstanceOf(AnalyticsDeliveryError);
    expect(error).toMatchObject({ code: 'rejected', status: 400, attempts: 1, retriable: false });
    expect((error as AnalyticsDeliveryError).message).toBe(
      '1 call refused by fake transport: HTTP 400: bad_request: no batch',
    );
    expect((error as AnalyticsDeliveryError).calls.map((c) => c.messageId)).toEqual([id]);
    expect(errors).toEqual([]);
  });

  it('calls the server kept aside as invalid are reported (code invalid); the rest of the batch is done', async () => {
    start({ flushAt: 3 });
    transport.answer({ kind: 'success', refused: [{ index: 2, code: 'too_large', message: 'too big as stored' }] });
    client.track({ userId: 'u', event: 'a' });
    client.track({ userId: 'u', event: 'b' });
    const third = client.track({ userId: 'u', event: 'c' });
    const error = await client.flush().catch((err: unknown) => err);
    expect(transport.sent).toHaveLength(1);
    expect(error).toMatchObject({ code: 'invalid', status: 200, retriable: false });
    expect((error as Error).message).toBe(
      'fake transport kept 1 call of 3 aside as invalid (in calls.invalid); the first, at batch index 2: too_large: too big as stored',
    );
    expect((error as AnalyticsDeliveryError).calls.map((c) => c.messageId)).toEqual([third]);
    expect(errors).toEqual([]);
  });

  it('gives up after maxRetries retries and reports retries_exhausted; later calls still go out', async () => {
    start({ maxRetries: 3, minRetryDelay: 10, maxRetryDelay: 10 });
    transport.answer(answer503(), answer503(), answer503(), answer503());
    client.track({ userId: 'u', event: 'lost' });
    const error = await flushRunningTimers();
    expect(transport.sent).toHaveLength(4);
    expect(error).toMatchObject({ code: 'retries_exhausted', attempts: 4, status: 503, retriable: true });
    expect((error as Error).message).toMatch(/1 call not accepted by fake transport after 4 attempts \(last: HTTP 503\): check that it is reachable, or raise maxRetries/);
    expect(errors).toHaveLength(0);

    client.track({ userId: 'u', event: 'later' });
    expect(await flushRunningTimers()).toBeUndefined();
    expect(transport.sent.at(-1)?.messages.map((m) => m.event)).toEqual(['later']);
  });

  it('maxRetries defaults to 10', async () => {
    start({ minRetryDelay: 1, maxRetryDelay: 1 });
    transport.answer(...Array.from({ length: 20 }, () => answer503()));
    client.track({ userId: 'u', event: 'a' });
    const flushed = client.flush().catch((err: unknown) => err);
    await vi.runAllTimersAsync();
    await expect(flushed).resolves.toMatchObject({ attempts: 11 });
    expect(transport.sent).toHaveLength(11);
  });

  it('a transport that throws is retried like a network error', async () => {
    start({ minRetryDelay: 10, maxRetryDelay: 10 });
    let calls = 0;
    const send = transport.send.bind(transport);
    transport.send = async (batch) => {
      calls += 1;
      if (calls === 1) throw new Error('socket hang up');
      return send(batch);
    };
    client.track({ userId: 'u', event: 'a' });
    expect(await flushRunningTimers()).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('flush() reports only the calls that failed, across batches', async () => {
    start({ flushAt: 1, maxRetries: 0 });
    transport.answer({ kind: 'failure', reason: 'no' }, { kind: 'success' }, { kind: 'failure', reason: 'no again' });
    transport.hold();
    const a = client.track({ userId: 'u', event: 'a' });
    client.track({ userId: 'u', event: 'b' });
    await settle();
    transport.release();
    await settle();
    // a failed alone, in the background (so onError heard it); b was accepted. Now c fails under flush().
    const c = client.track({ userId: 'u', event: 'c' });
    const error = await flushRunningTimers();
    expect((error as AnalyticsDeliveryError).calls.map((m) => m.messageId)).toEqual([c]);
    expect(errors.map((e) => e.calls.map((m) => m.messageId))).toEqual([[a]]);
  });

  it('an onError that throws does not stop the queue', async () => {
    transport = fakeTransport();
    let told = 0;
    client = new Analytics('wk', {
      transport,
      flushAt: 1,
      maxRetries: 0,
      onError: () => {
        told += 1;
        throw new Error('handler bug');
      },
    });
    transport.answer({ kind: 'failure', reason: 'no' });
    client.track({ userId: 'u', event: 'a' });
    await vi.runAllTimersAsync();
    expect(told).toBe(1);
    client.track({ userId: 'u', event: 'b' });
    expect(await flushRunningTimers()).toBeUndefined();
    expect(transport.sent).toHaveLength(2);
  });
});

describe('one error channel: each failed batch goes to the flush() waiting for it, else to onError', () => {
  it('a background send (flushAt) that fails is told to onError once; a later flush() does not report it again', async () => {
    start({ flushAt: 1, maxRetries: 0 });
    transport.answer({ kind: 'failure', reason: 'no', status: 400 });
    const id = client.track({ userId: 'u', event: 'a' });
    await vi.runAllTimersAsync();
    expect(errors.map((e) => [e.code, e.calls.map((m) => m.messageId)])).toEqual([['rejected', [id]]]);
    await expect(client.flush()).resolves.toBeUndefined();
    await expect(client.close()).resolves.toBeUndefined();
    expect(errors).toHaveLength(1);
  });

  it('a timed send (flushAfter) that runs out of retries is told to onError', async () => {
    start({ flushAfter: 1_000, maxRetries: 1, minRetryDelay: 10, maxRetryDelay: 10 });
    transport.answer(answer503(), answer503());
    client.track({ userId: 'u', event: 'a' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors).toHaveLength(0);
    await vi.runAllTimersAsync();
    expect(errors.map((e) => e.code)).toEqual(['retries_exhausted']);
  });

  it('a background batch still in flight when flush() is called: its failure rejects flush(), onError is not told', async () => {
    start({ flushAt: 1, maxRetries: 0 });
    transport.answer({ kind: 'failure', reason: 'no' });
    transport.hold();
    const id = client.track({ userId: 'u', event: 'a' });
    await settle();
    expect(transport.sent).toHaveLength(1);
    const flushed = track(client.flush());
    transport.release();
    await settle();
    expect(flushed.state).toBe('rejected');
    expect((flushed.error as AnalyticsDeliveryError).calls.map((m) => m.messageId)).toEqual([id]);
    expect(errors).toEqual([]);
  });

  it('two flush() calls waiting for the same batch both reject with it; onError is not told', async () => {
    start({ maxRetries: 0 });
    transport.answer({ kind: 'failure', reason: 'no' });
    transport.hold();
    client.track({ userId: 'u', event: 'a' });
    const first = track(client.flush());
    const second = track(client.flush());
    transport.release();
    await settle();
    expect([first.state, second.state]).toEqual(['rejected', 'rejected']);
    expect(second.error).toBe(first.error);
    expect(errors).toEqual([]);
  });
});
