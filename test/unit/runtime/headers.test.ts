import { describe, expect, it } from 'vitest';
import { freshDeliveryHeaders, headerValue } from '../../../src/runtime/headers.js';
import { invalidRecord } from '../../../src/runtime/invalid-record.js';

const TRACE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const text = (headers: Record<string, unknown>) =>
  Object.entries(headers).map(([name, value]) => [name, Buffer.isBuffer(value) ? `bytes:${value.toString('utf8')}` : value]);

describe('freshDeliveryHeaders: the one writer of a delivery not attempted yet', () => {
  it.each([
    [
      'strings (audiences, deletions)',
      { sourceId: 'web', messageId: 'm-1', receivedAt: '1777636800000', traceparent: TRACE },
      [['source-id', 'web'], ['message-id', 'm-1'], ['attempt', '0'], ['first-attempt-at', ''], ['received-at', '1777636800000'], ['traceparent', TRACE]],
    ],
    [
      'strings without received-at or traceparent',
      { sourceId: 'web', messageId: 'm-1' },
      [['source-id', 'web'], ['message-id', 'm-1'], ['attempt', '0'], ['first-attempt-at', '']],
    ],
    [
      'Buffers (the router): attempt and first-attempt-at as Buffers too',
      { sourceId: Buffer.from('web'), messageId: Buffer.from('m-1'), traceparent: TRACE },
      [['source-id', 'bytes:web'], ['message-id', 'bytes:m-1'], ['attempt', 'bytes:0'], ['first-attempt-at', 'bytes:'], ['traceparent', TRACE]],
    ],
    [
      'a Buffer source-id with a string message-id (deletions): strings for the stage',
      { sourceId: Buffer.from('shop'), messageId: 'm-2', receivedAt: '5' },
      [['source-id', 'bytes:shop'], ['message-id', 'm-2'], ['attempt', '0'], ['first-attempt-at', ''], ['received-at', '5']],
    ],
  ])('%s: names, order and values', (_what, fields, expected) => {
    expect(text(freshDeliveryHeaders(fields))).toEqual(expected);
  });

  it('shares its Buffers between calls (encoded once, not per record)', () => {
    const a = freshDeliveryHeaders({ sourceId: Buffer.from('a'), messageId: Buffer.from('1') });
    const b = freshDeliveryHeaders({ sourceId: Buffer.from('b'), messageId: Buffer.from('2') });
    expect(a.attempt).toBe(b.attempt);
    expect(a['first-attempt-at']).toBe(b['first-attempt-at']);
  });

  it('starts a carried delivery afresh after its carried headers (a replay)', () => {
    const carried = { 'source-id': Buffer.from('web'), 'message-id': 'm-1', 'x-custom': 'kept' };
    expect(text(freshDeliveryHeaders({ carried }))).toEqual([
      ['source-id', 'bytes:web'],
      ['message-id', 'm-1'],
      ['x-custom', 'kept'],
      ['attempt', '0'],
      ['first-attempt-at', ''],
    ]);
  });
});

describe('headerValue', () => {
  it.each([
    ['a Buffer', { traceparent: Buffer.from(TRACE) }, Buffer.from(TRACE)],
    ['a string', { traceparent: TRACE }, TRACE],
    ['the first of a repeated header', { traceparent: [TRACE, 'other'] }, TRACE],
    ['nothing', {}, undefined],
  ])('%s', (_what, headers, expected) => {
    expect(headerValue(headers, 'traceparent')).toEqual(expected);
  });
  it('nothing when there are no headers', () => {
    expect(headerValue(undefined, 'traceparent')).toBeUndefined();
  });
});

describe('invalidRecord: the one writer of calls.invalid records', () => {
  it('keeps key, value, timestamp and headers, and adds the error after them', () => {
    const headers = { 'source-id': Buffer.from('web'), traceparent: Buffer.from(TRACE) };
    const out = invalidRecord({ key: 'u-1', value: '{"type":"track"}', headers, timestamp: '1777636800000' }, 'missing_event: set event');
    expect(out.key).toBe('u-1');
    expect(out.value).toBe('{"type":"track"}');
    expect(out.timestamp).toBe('1777636800000');
    expect(text(out.headers!)).toEqual([['source-id', 'bytes:web'], ['traceparent', `bytes:${TRACE}`], ['error', 'missing_event: set event']]);
    // The request's headers object is shared with its valid calls: never changed.
    expect(Object.keys(headers)).toEqual(['source-id', 'traceparent']);
  });

  it('replaces an error header already there (a record that went round once)', () => {
    const out = invalidRecord({ key: null, value: null, headers: { error: 'old', 'source-id': 'web' }, timestamp: '1' }, 'new');
    expect(out.headers).toEqual({ error: 'new', 'source-id': 'web' });
  });
});
