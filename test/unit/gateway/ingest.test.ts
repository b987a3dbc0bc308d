import { describe, expect, it } from 'vitest';
import { MAX_CALL_BYTES } from '../../../src/calls/index.js';
import { MAX_BATCH_CALLS, MAX_REQUEST_WRITE_BYTES, ingest } from '../../../src/gateway/ingest.js';
import type { AcceptedCall, IngestResult, RejectedCall } from '../../../src/gateway/ingest.js';
import { matchRoute } from '../../../src/gateway/routes.js';
import type { Route } from '../../../src/gateway/routes.js';

const RECEIVED = Date.UTC(2026, 4, 1, 12, 0, 10); // 2026-05-01T12:00:10.000Z

function route(path: string): Route {
  const found = matchRoute(path);
  if (!found) throw new Error(`no route ${path}`);
  return found;
}

function run(path: string, body: unknown, ids: string[] = ['gen-1', 'gen-2', 'gen-3']): IngestResult {
  const queue = [...ids];
  return ingest({
    route: route(path),
    body,
    receivedAtMs: RECEIVED,
    newMessageId: () => {
      const next = queue.shift();
      if (next === undefined) throw new Error('more ids generated than expected');
      return next;
    },
  });
}

function accepted(result: IngestResult): { calls: Record<string, unknown>[]; keys: string[]; rejected: RejectedCall[] } {
  if (!result.ok) throw new Error(`expected ok, got ${result.status} ${result.code}: ${result.message}`);
  return {
    calls: result.accepted.map((call: AcceptedCall) => JSON.parse(call.value) as Record<string, unknown>),
    keys: result.accepted.map((call) => call.key),
    rejected: result.rejected,
  };
}

function refused(result: IngestResult): { status: number; code: string; message: string; reason: string } {
  if (result.ok) throw new Error('expected the request to be refused');
  return { status: result.status, code: result.code, message: result.message, reason: result.reason };
}

describe('ingest: batch requests', () => {
  it('merges the request context and integrations into each call, the call’s own keys winning', () => {
    const { calls } = accepted(
      run('/v1/batch', {
        batch: [
          { type: 'track', userId: 'u-1', messageId: 'm-1', event: 'A', context: { ip: '198.51.100.2', page: { path: '/a' } }, integrations: { Webhooks: false } },
          { type: 'identify', userId: 'u-2', messageId: 'm-2' },
        ],
        context: { ip: '203.0.113.9', library: { name: 'analytics-go', version: '2.1.0' } },
        integrations: { All: true, Webhooks: true },
      }),
    );
    // Shallow merge: the call's `ip` wins, the request's `library` is added.
    expect(calls[0]!.context).toEqual({ ip: '198.51.100.2', library: { name: 'analytics-go', version: '2.1.0' }, page: { path: '/a' } });
    expect(calls[0]!.integrations).toEqual({ All: true, Webhooks: false });
    expect(calls[1]!.context).toEqual({ ip: '203.0.113.9', library: { name: 'analytics-go', version: '2.1.0' } });
    expect(calls[1]!.integrations).toEqual({ All: true, Webhooks: true });
  });

  it('corrects the timestamp for clock skew with the request’s sentAt: receivedAt − (sentAt − timestamp)', () => {
    // The client's clock is 1 h 5 s behind: it says it sent at 11:00:05 what the gateway got at 12:00:10.
    const { calls } = accepted(
      run('/v1/batch', {
        batch: [{ type: 'track', userId: 'u-1', messageId: 'm-1', event: 'A', timestamp: '2026-05-01T11:00:00.250Z' }],
        sentAt: '2026-05-01T11:00:05.000Z',
      }),
    );
    expect(calls[0]).toMatchObject({
      timestamp: '2026-05-01T12:00:05.250Z',
      receivedAt: '2026-05-01T12:00:10.000Z',
      sentAt: '2026-05-01T11:00:05.000Z',
    });
  });

  it('reads the Go library’s timestamps (no milliseconds, +0000 offset) and corrects them', () => {
    const { calls } = accepted(
      run('/v1/batch', {
        batch: [{ type: 'track', userId: 'u-1', messageId: 'm-1', event: 'A', timestamp: '2009-11-10T23:00:00+0000' }],
        sentAt: '2009-11-10T23:00:02+0000',
        messageId: 'batch-id',
      }),
    );
    // Sent 2 s after the call happened, received at RECEIVED: the call happened 2 s before RECEIVED.
    expect(calls[0]!.timestamp).toBe('2026-05-01T12:00:08.000Z');
    expect(calls[0]!.sentAt).toBe('2009-11-10T23:00:02+0000');
  });

  it('keeps a timestamp as given (normalized to UTC with ms) when there is no sentAt', () => {
    const { calls } = accepted(
      run('/v1/batch', { batch: [{ type: 'identify', userId: 'u-1', messageId: 'm-1', timestamp: '2009-11-10T23:00:00+0100' }] }),
    );
    expect(calls[0]!.timestamp).toBe('2009-11-10T22:00:00.000Z');
    expect(calls[0]).not.toHaveProperty('sentAt');
  });

  it('gives a call without timestamp the time it was received', () => {
    const { calls } = accepted(run('/v1/batch', { batch: [{ type: 'identify', userId: 'u-1', messageId: 'm-1' }], sentAt: '2026-05-01T11:00:05Z' }));
    expect(calls[0]!.timestamp).toBe('2026-05-01T12:00:10.000Z');
  });

  it('uses a call’s own sentAt when the request has none, and the request’s when both have one', () => {
    const { calls } = accepted(
      run('/v1/batch', {
        batch: [{ type: 'track', userId: 'u', messageId: 'm', event: 'A', timestamp: '2026-05-01T00:00:00Z', sentAt: '2026-05-01T00:00:01Z' }],
      }),
    );
    expect(calls[0]!.timestamp).toBe('2026-05-01T12:00:09.000Z');
    const both = accepted(
      run('/v1/batch', {
        sentAt: '2026-05-01T00:00:03Z',
        batch: [{ type: 'track', userId: 'u', messageId: 'm', event: 'A', timestamp: '2026-05-01T00:00:00Z', sentAt: '2026-05-01T00:00:01Z' }],
      }),
    );
    expect(both.calls[0]!.timestamp).toBe('2026-05-01T12:00:07.000Z');
    // The call's own sentAt stays as given.
    expect(both.calls[0]!.sentAt).toBe('2026-05-01T00:00:01Z');
  });

  it('generates a messageId when missing or empty, and keeps a given one', () => {
    const { calls } = accepted(
      run('/v1/batch', {
        batch: [
          { type: 'identify', userId: 'u-1' },
          { type: 'identify', userId: 'u-2', messageId: 'given' },
          { type: 'identify', userId: 'u-3', messageId: '' },
        ],
      }),
    );
    expect(calls.map((call) => call.messageId)).toEqual(['gen-1', 'given', 'gen-2']);
  });

  it('removes writeKey from the stored call and keeps every other field', () => {
    const { calls } = accepted(
      run('/v1/batch', {
        writeKey: 'wk-top',
        batch: [{ type: 'track', userId: 'u-1', messageId: 'm-1', event: 'A', writeKey: 'wk-call', properties: { a: 1 }, _metadata: { x: 1 } }],
      }),
    );
    expect(calls[0]).toEqual({
      type: 'track',
      userId: 'u-1',
      messageId: 'm-1',
      event: 'A',
      properties: { a: 1 },
      _metadata: { x: 1 },
      timestamp: '2026-05-01T12:00:10.000Z',
      receivedAt: '2026-05-01T12:00:10.000Z',
    });
  });

  it('keys each call by userId, else anonymousId, numeric ids as their string form', () => {
    const { keys } = accepted(
      run('/v1/batch', {
        batch: [
          { type: 'identify', userId: 'u-1', anonymousId: 'a-1', messageId: 'm' },
          { type: 'identify', anonymousId: 'a-2', messageId: 'm' },
          { type: 'identify', userId: 42, messageId: 'm' },
        ],
      }),
    );
    expect(keys).toEqual(['u-1', 'a-2', '42']);
  });

  it('lists invalid calls by index with their reason, keeps their original JSON, and accepts the rest', () => {
    const result = run('/v1/batch', {
      context: { ip: '203.0.113.9' },
      batch: [
        { type: 'track', userId: 'u-1', messageId: 'm-1', event: 'Good' },
        { type: 'track', userId: 'u-2', messageId: 'm-2' },
        'not a call',
        { type: 'Track', anonymousId: 'a-3' },
        { type: 'identify', messageId: 'm-4' },
        { type: 'identify', userId: 'u-5', timestamp: 'yesterday' },
      ],
    });
    const { calls, rejected } = accepted(result);
    expect(calls.map((call) => call.event)).toEqual(['Good']);
    expect(rejected.map(({ index, reason, key, value }) => ({ index, reason, key, value }))).toEqual([
      // The original call: no merged context, no generated fields.
      { index: 1, reason: 'missing_event', key: 'u-2', value: '{"type":"track","userId":"u-2","messageId":"m-2"}' },
      { index: 2, reason: 'not_object', key: null, value: '"not a call"' },
      { index: 3, reason: 'unknown_type', key: 'a-3', value: '{"type":"Track","anonymousId":"a-3"}' },
      { index: 4, reason: 'missing_identity', key: null, value: '{"type":"identify","messageId":"m-4"}' },
      { index: 5, reason: 'bad_timestamp', key: 'u-5', value: '{"type":"identify","userId":"u-5","timestamp":"yesterday"}' },
    ]);
    expect(rejected[0]!.message).toBe('track call without "event": set event to the event name');
    expect(rejected[2]!.message).toContain('did you mean "track"?');
  });

  it('rejects a call that is over 32 KB as stored, on its own', () => {
    const big = 'x'.repeat(MAX_CALL_BYTES);
    const { calls, rejected } = accepted(
      run('/v1/batch', {
        batch: [
          { type: 'track', userId: 'u-1', messageId: 'm-1', event: 'A', properties: { big } },
          { type: 'track', userId: 'u-2', messageId: 'm-2', event: 'B' },
        ],
      }),
    );
    expect(calls).toHaveLength(1);
    expect(rejected).toMatchObject([{ index: 0, reason: 'too_large' }]);
    expect(rejected[0]!.message).toMatch(/^track call is \d+ bytes as stored .* over the 32768-byte limit: send less data/);
  });

  it('counts multi-byte characters as UTF-8 bytes against the 32 KB limit', () => {
    // 11 000 three-byte characters: 11 000 UTF-16 units but 33 000 bytes.
    const { rejected } = accepted(run('/v1/batch', { batch: [{ type: 'identify', userId: 'u', messageId: 'm', traits: { t: '€'.repeat(11_000) } }] }));
    expect(rejected).toMatchObject([{ reason: 'too_large' }]);
  });

  it('keeps an own "__proto__" key as a plain key', () => {
    const body: unknown = JSON.parse('{"batch":[{"type":"identify","userId":"u","messageId":"m","__proto__":{"x":1},"traits":{"__proto__":{"y":2}}}]}');
    const result = run('/v1/batch', body);
    if (!result.ok) throw new Error('expected ok');
    expect(result.accepted[0]!.value).toContain('"__proto__":{"x":1}');
    expect(result.accepted[0]!.value).toContain('"traits":{"__proto__":{"y":2}}');
  });

  it('refuses a call whose corrected time falls outside years 0001–9999', () => {
    const { rejected } = accepted(
      run('/v1/batch', { sentAt: '9999-01-01T00:00:00Z', batch: [{ type: 'identify', userId: 'u', messageId: 'm', timestamp: '0001-01-01T00:00:00Z' }] }),
    );
    expect(rejected).toMatchObject([{ index: 0, reason: 'bad_timestamp' }]);
    expect(rejected[0]!.message).toContain('check the clock');
  });

  it.each([
    ['[]', { batch: [] }],
    ['null (analytics-go v2 closing with an empty buffer)', { batch: null, context: { library: { name: 'analytics-go', version: '2.0.0' } }, messageId: 'b-1', sentAt: '2026-05-01T12:00:00+0000' }],
    ['absent', { context: { library: { name: 'analytics-go', version: '2.0.0' } } }],
  ])('answers a batch that is %s with nothing to write', (_what, body) => {
    expect(run('/v1/batch', body)).toEqual({ ok: true, accepted: [], rejected: [] });
    expect(run('/v1/import', body)).toEqual({ ok: true, accepted: [], rejected: [] });
  });

  it('treats /v1/import like /v1/batch', () => {
    expect(accepted(run('/v1/import', { batch: [{ type: 'identify', userId: 'u', messageId: 'm' }] })).calls).toHaveLength(1);
  });

  it.each([
    ['a body that is a list', [{ type: 'identify' }], 400, 'invalid_request', /body is a list, not a JSON object/],
    ['batch not a list', { batch: { type: 'identify' } }, 400, 'invalid_request', /"batch" as an object, not a list/],
    ['context not an object', { batch: [], context: 'web' }, 400, 'invalid_request', /"context" of the request is a string \("web"\), not an object/],
    ['integrations not an object', { batch: [], integrations: [true] }, 400, 'invalid_request', /"integrations" of the request is a list/],
    ['an unreadable sentAt', { batch: [], sentAt: 'now' }, 400, 'invalid_request', /"sentAt" of the request is not an ISO 8601 date-time: got a string \("now"\)/],
    ['too many calls', { batch: new Array(MAX_BATCH_CALLS + 1).fill({}) }, 413, 'too_many_calls', /batch has 2501 calls, over the limit of 2500 per request: split it/],
  ])('refuses %s', (_what, body, status, code, message) => {
    const failure = refused(run('/v1/batch', body));
    expect(failure).toMatchObject({ status, code });
    expect(failure.message).toMatch(message);
  });

  it('accepts exactly 2,500 calls', () => {
    const calls = Array.from({ length: MAX_BATCH_CALLS }, (_, i) => ({ type: 'identify', userId: `u-${i}`, messageId: `m-${i}` }));
    expect(accepted(run('/v1/batch', { batch: calls })).calls).toHaveLength(MAX_BATCH_CALLS);
  });
});

describe('ingest: the most one request may write', () => {
  /** A request context of about `bytes` (it is copied into every call). */
  const context = (bytes: number) => ({ page: { title: 'x'.repeat(bytes) } });
  const calls = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'identify', userId: `u-${i}`, messageId: `m-${i}` }));

  it('refuses the review\'s amplification: 2,500 small calls with a 30 KB context (79 MB as stored) get 413 and nothing to write', () => {
    const body = { batch: calls(MAX_BATCH_CALLS), context: context(30_000) };
    // The body itself is within the 500 KB limit: the amplification is in what it writes.
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThan(500 * 1024);
    const failure = refused(run('/v1/batch', body));
    expect(failure).toMatchObject({ status: 413, code: 'write_too_large', reason: 'too_large' });
    expect(failure.message).toBe(
      `the calls as stored come to more than ${MAX_REQUEST_WRITE_BYTES} bytes (1 MiB, the most one request may write; the request's "context" is copied into each of its 2500 calls); nothing was written: send fewer calls per request, or a smaller context`,
    );
  });

  it('accepts a request that writes just under the cap, and refuses one call more', () => {
    // Each call stores about 10.1 KB: 103 calls stay under 1 MiB, 104 do not.
    const under = accepted(run('/v1/batch', { batch: calls(103), context: context(10_000) }));
    const written = under.calls.reduce((sum, _call, i) => sum + Buffer.byteLength(JSON.stringify(under.calls[i])) + Buffer.byteLength(under.keys[i]!), 0);
    expect(written).toBeLessThanOrEqual(MAX_REQUEST_WRITE_BYTES);
    expect(written + 10_200).toBeGreaterThan(MAX_REQUEST_WRITE_BYTES);
    expect(refused(run('/v1/batch', { batch: calls(104), context: context(10_000) })).code).toBe('write_too_large');
  });

  it('counts bytes, not characters: three-byte characters reach the cap three times sooner', () => {
    // 36 calls of about 10,000 three-byte characters: 1.08 MB as stored, 360 K characters.
    const wide = { page: { title: '€'.repeat(10_000) } };
    expect(refused(run('/v1/batch', { batch: calls(36), context: wide })).code).toBe('write_too_large');
    expect(accepted(run('/v1/batch', { batch: calls(34), context: wide })).calls).toHaveLength(34);
  });

  it('counts the calls it keeps as invalid too', () => {
    // Tracks without an event: each kept in calls.invalid as sent, with its 20 KB of properties.
    const invalid = Array.from({ length: 60 }, (_, i) => ({ type: 'track', userId: `u-${i}`, properties: { blob: 'y'.repeat(20_000) } }));
    expect(refused(run('/v1/batch', { batch: invalid })).code).toBe('write_too_large');
  });
});

describe('ingest: single-call routes', () => {
  it('takes the type from the path when the body has none, and keeps the body’s own', () => {
    const { calls } = accepted(run('/v1/track', { userId: 'u-1', event: 'A', messageId: 'm-1' }));
    expect(calls[0]!.type).toBe('track');
    const own = accepted(run('/v1/track', { type: 'identify', userId: 'u-1', messageId: 'm-1' }));
    expect(own.calls[0]!.type).toBe('identify');
  });

  it.each(['identify', 'track', 'page', 'screen', 'group', 'alias'])('accepts /v1/%s', (type) => {
    const body = { userId: 'u-1', previousId: 'a-0', groupId: 'g-1', event: 'E', messageId: 'm-1' };
    expect(accepted(run(`/v1/${type}`, body)).calls[0]!.type).toBe(type);
  });

  it('uses the call’s own sentAt for the skew correction', () => {
    const { calls } = accepted(
      run('/v1/identify', { userId: 'u', messageId: 'm', timestamp: '2026-05-01T12:00:00Z', sentAt: '2026-05-01T12:00:30Z' }),
    );
    expect(calls[0]!.timestamp).toBe('2026-05-01T11:59:40.000Z');
  });

  it('lists an invalid call at index 0 and keeps it', () => {
    const { calls, rejected } = accepted(run('/v1/track', { userId: 'u-1' }));
    expect(calls).toEqual([]);
    expect(rejected).toMatchObject([{ index: 0, reason: 'missing_event', key: 'u-1', value: '{"userId":"u-1"}' }]);
  });

  it('refuses a call over 32 KB with 413', () => {
    const failure = refused(run('/v1/identify', { userId: 'u', messageId: 'm', traits: { big: 'x'.repeat(MAX_CALL_BYTES) } }));
    expect(failure).toMatchObject({ status: 413, code: 'call_too_large', reason: 'too_large' });
  });

  it('refuses a body that is not an object with 400', () => {
    expect(refused(run('/v1/identify', 'u-1'))).toMatchObject({ status: 400, code: 'invalid_request', reason: 'not_object' });
  });
});
