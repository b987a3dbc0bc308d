import { describe, expect, it } from 'vitest';
import { deadLetterHeaders, describeFailures, readEnvelope, replayHeaders, retryHeaders } from '../../../src/delivery/envelope.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);

describe('readEnvelope', () => {
  it('reads the router format: attempt 0, empty first-attempt-at', () => {
    const envelope = readEnvelope({
      'source-id': Buffer.from('web'),
      'message-id': Buffer.from('m-1'),
      attempt: Buffer.from('0'),
      'first-attempt-at': Buffer.from(''),
      traceparent: Buffer.from('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
      'received-at': Buffer.from(String(T0)),
    });
    expect(envelope).toEqual({
      attemptsMade: 0,
      firstAttemptAtMs: undefined,
      dueAtMs: undefined,
      receivedAtMs: T0,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      problems: [],
    });
  });

  it('takes the receipt time from the record timestamp when there is no received-at header', () => {
    const headers = { 'source-id': Buffer.from('web'), attempt: Buffer.from('0'), 'first-attempt-at': Buffer.from('') };
    expect(readEnvelope(headers, String(T0)).receivedAtMs).toBe(T0);
    // The header wins: audience identifies and records stamped later carry it.
    expect(readEnvelope({ ...headers, 'received-at': Buffer.from(String(T0 - 5)) }, String(T0)).receivedAtMs).toBe(T0 - 5);
    // kafkajs gives -1 for a record without a timestamp.
    expect(readEnvelope(headers, '-1').receivedAtMs).toBeUndefined();
    expect(readEnvelope(headers, '-1').problems).toEqual([]);
  });

  it('reads a retry message', () => {
    const envelope = readEnvelope({ attempt: '3', 'first-attempt-at': '2026-05-01T12:00:00.000Z', 'due-at': String(T0 + 500) });
    expect(envelope).toMatchObject({ attemptsMade: 3, firstAttemptAtMs: T0, dueAtMs: T0 + 500, problems: [] });
  });

  it('reads missing headers as absent', () => {
    expect(readEnvelope(undefined)).toEqual({
      attemptsMade: 0,
      firstAttemptAtMs: undefined,
      dueAtMs: undefined,
      receivedAtMs: undefined,
      traceparent: undefined,
      problems: [],
    });
  });

  it('reports unreadable headers and reads them as absent', () => {
    const envelope = readEnvelope({ attempt: 'two', 'first-attempt-at': 'yesterday', 'due-at': 'soon', 'received-at': '-5' });
    expect(envelope).toMatchObject({ attemptsMade: 0, firstAttemptAtMs: undefined, dueAtMs: undefined, receivedAtMs: undefined });
    expect(envelope.problems).toEqual([
      'header attempt is "two", not a whole number; counted as 0',
      'header first-attempt-at is "yesterday", not an ISO 8601 time; the retry window starts now',
      'header due-at is "soon", not epoch milliseconds; ignored',
      'header received-at is "-5", not epoch milliseconds; ignored',
    ]);
  });
});

const original = {
  'source-id': Buffer.from('web'),
  'message-id': Buffer.from('m-1'),
  attempt: Buffer.from('2'),
  'first-attempt-at': Buffer.from('2026-05-01T11:59:00.000Z'),
  'due-at': Buffer.from('1'),
  traceparent: Buffer.from('00-aa-bb-01'),
  'received-at': Buffer.from('1777636740000'),
  error: Buffer.from('old'),
  'last-attempt-at': Buffer.from('old'),
};

const text = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.isBuffer(v) ? v.toString() : v]));

describe('outgoing headers', () => {
  it('a retry carries the originals with the new stage, and why the attempt failed', () => {
    expect(text(retryHeaders(original, { attemptsMade: 3, firstAttemptAtMs: T0, dueAtMs: T0 + 200 }))).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      traceparent: '00-aa-bb-01',
      'received-at': '1777636740000',
      attempt: '3',
      'first-attempt-at': '2026-05-01T12:00:00.000Z',
      'due-at': String(T0 + 200),
    });
    // The old stage's error never travels on; the new one says why this attempt failed.
    expect(text(retryHeaders(original, { attemptsMade: 3, firstAttemptAtMs: T0, dueAtMs: T0 + 200, error: 'http://h/x: 503 Service Unavailable' }))).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      traceparent: '00-aa-bb-01',
      'received-at': '1777636740000',
      attempt: '3',
      'first-attempt-at': '2026-05-01T12:00:00.000Z',
      'due-at': String(T0 + 200),
      error: 'http://h/x: 503 Service Unavailable',
    });
  });

  it('retries and dead letters carry a receipt time the original had only as its record timestamp', () => {
    const fresh = { 'source-id': Buffer.from('web'), 'message-id': Buffer.from('m-1'), attempt: Buffer.from('0'), 'first-attempt-at': Buffer.from('') };
    expect(text(retryHeaders(fresh, { attemptsMade: 1, firstAttemptAtMs: T0, dueAtMs: T0 + 200, receivedAtMs: T0 - 50 }))).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      'received-at': String(T0 - 50),
      attempt: '1',
      'first-attempt-at': '2026-05-01T12:00:00.000Z',
      'due-at': String(T0 + 200),
    });
    expect(text(deadLetterHeaders(fresh, { attemptsMade: 1, firstAttemptAtMs: T0, lastAttemptAtMs: T0, error: 'e', receivedAtMs: T0 - 50 }))['received-at']).toBe(String(T0 - 50));
    // An original header is kept as it was.
    expect(text(retryHeaders(original, { attemptsMade: 3, firstAttemptAtMs: T0, dueAtMs: T0 + 200, receivedAtMs: T0 }))['received-at']).toBe('1777636740000');
  });

  it('a dead letter carries the originals, why and when', () => {
    expect(text(deadLetterHeaders(original, { attemptsMade: 4, firstAttemptAtMs: T0, lastAttemptAtMs: T0 + 1500, error: 'http://h/x: 400 Bad Request' }))).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      traceparent: '00-aa-bb-01',
      'received-at': '1777636740000',
      attempt: '4',
      'first-attempt-at': '2026-05-01T12:00:00.000Z',
      'last-attempt-at': '2026-05-01T12:00:01.500Z',
      error: 'http://h/x: 400 Bad Request',
    });
  });

  it('retries and dead letters carry the failed answers so far in attempt-history, replacing the old header; a replay drops it', () => {
    const answers = [{ at: '2026-05-01T12:00:00.000Z', urlIndex: 0, origin: 'http://h', status: 500, latencyMs: 12, response: 'boom: database down' }];
    const stale = { ...original, 'attempt-history': Buffer.from('[{"stale":true}]') };
    const retry = text(retryHeaders(stale, { attemptsMade: 1, firstAttemptAtMs: T0, dueAtMs: T0 + 200, answers }));
    expect(JSON.parse(String(retry['attempt-history']))).toEqual(answers);
    expect(text(deadLetterHeaders(stale, { attemptsMade: 1, firstAttemptAtMs: T0, lastAttemptAtMs: T0, error: 'e', answers }))['attempt-history']).toBe(retry['attempt-history']);
    // No answer kept (a URL skipped, a record without a body): no header, the stale one not carried.
    expect(text(retryHeaders(stale, { attemptsMade: 1, firstAttemptAtMs: T0, dueAtMs: T0 + 200, answers: [] }))).not.toHaveProperty('attempt-history');
    expect(text(replayHeaders(stale))).not.toHaveProperty('attempt-history');
  });

  it('a replay starts afresh', () => {
    expect(text(replayHeaders(original))).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      traceparent: '00-aa-bb-01',
      'received-at': '1777636740000',
      attempt: '0',
      'first-attempt-at': '',
    });
  });
});

describe('describeFailures', () => {
  it('names each URL and its reason on one line', () => {
    expect(
      describeFailures([
        { url: 'https://h/x', reason: '400 Bad Request' },
        { url: 'https://k/y', reason: 'self-signed certificate' },
      ]),
    ).toBe('https://h/x: 400 Bad Request; https://k/y: self-signed certificate');
    expect(describeFailures([{ url: 'http://a', reason: 'line one\r\nline two' }])).toBe('http://a: line one line two');
    expect(describeFailures([{ url: 'http://a', reason: 'x'.repeat(1000) }])).toHaveLength('http://a: '.length + 600);
  });
});
