import { describe, expect, it } from 'vitest';
import {
  ATTEMPT_HISTORY_HEADER,
  MAX_HISTORY_ANSWERS,
  answerText,
  answersOf,
  appendAnswers,
  escapeControls,
  historyHeader,
  keptAnswerText,
  lastAnswerOf,
  readAnswers,
  responseExcerpt,
  tracedAnswers,
} from '../../../src/delivery/attempt-history.js';
import type { AttemptAnswer, UrlAnswer } from '../../../src/delivery/attempt-history.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);
const AT = '2026-05-01T12:00:00.000Z';
const ORIGINS = ['https://a.test', 'https://b.test:8443'];

const answer = (urlIndex: number, fields: Partial<AttemptAnswer> = {}): AttemptAnswer => ({ at: AT, urlIndex, origin: ORIGINS[urlIndex]!, status: 500, latencyMs: 12, ...fields });

describe('escapeControls', () => {
  it.each([
    ['plain text stays', 'boom: database down', 'boom: database down'],
    ['line breaks and tabs as \\n \\r \\t', 'a\r\nb\tc', 'a\\r\\nb\\tc'],
    ['a terminal escape sequence as \\u001b', '\u001b[31mred\u001b[0m', '\\u001b[31mred\\u001b[0m'],
    ['NUL, DEL and a C1 control', 'a\u0000b\u007fc\u0085', 'a\\u0000b\\u007fc\\u0085'],
    ['line separators and bidi overrides', 'x\u2028y\u202ez\u2066', 'x\\u2028y\\u202ez\\u2066'],
    ['other Unicode stays', 'café ☕ 数据库', 'café ☕ 数据库'],
  ])('%s', (_name, text, escaped) => {
    expect(escapeControls(text)).toBe(escaped);
  });
});

describe('responseExcerpt', () => {
  it('keeps a short body whole, escaped; an empty body is none', () => {
    expect(responseExcerpt(Buffer.from('boom: database down\n'))).toBe('boom: database down\\n');
    expect(responseExcerpt(Buffer.alloc(0))).toBeUndefined();
  });

  it('keeps at most 512 bytes, dropping a character the cut split', () => {
    expect(responseExcerpt(Buffer.from('x'.repeat(600)))).toBe('x'.repeat(512));
    // 511 ASCII bytes, then "é" (2 bytes) across the cut: the half of it is dropped.
    expect(responseExcerpt(Buffer.from(`${'x'.repeat(511)}é and more`))).toBe('x'.repeat(511));
    // A 3-byte character that ends exactly at byte 512 stays.
    expect(responseExcerpt(Buffer.from(`${'x'.repeat(509)}€ and more`))).toBe(`${'x'.repeat(509)}€`);
    expect(Buffer.byteLength(responseExcerpt(Buffer.from('é'.repeat(400)))!)).toBe(512);
  });

  it('does not show a compressed body, only says so', () => {
    expect(responseExcerpt(Buffer.from([0x1f, 0x8b, 0x08, 0x00]), 'gzip')).toBe('(a body in gzip encoding, not shown)');
    expect(responseExcerpt(Buffer.from('plain'), 'identity')).toBe('plain');
  });
});

describe('answerText and keptAnswerText', () => {
  it('lead with the status, then what the receiver said', () => {
    expect(answerText({ reason: '500 Internal Server Error', response: 'boom: database down' })).toBe('500 Internal Server Error: boom: database down');
    expect(answerText({ reason: '503 Service Unavailable' })).toBe('503 Service Unavailable');
    expect(keptAnswerText({ status: 500, response: 'boom' })).toBe('500 Internal Server Error: boom');
    expect(keptAnswerText({ error: 'connection refused' })).toBe('connection refused');
  });
});

describe('answersOf', () => {
  const r500: UrlAnswer['result'] = { outcome: '5xx', verdict: 'retryable', status: 500, reason: '500 Internal Server Error', response: 'boom: database down', durationMs: 12.4 };
  const timeout: UrlAnswer['result'] = { outcome: 'timeout', verdict: 'retryable', reason: 'no complete answer within 5s', durationMs: 5000.2 };

  it('keeps each failed URL by index, with status or error, latency and body; not a 2xx, a cancelled request or a skipped URL', () => {
    const results: UrlAnswer[] = [
      { index: 1, result: timeout },
      { index: 0, result: r500 },
      { index: 2, result: { outcome: 'cancelled', durationMs: 3 } },
      { index: 3, result: { outcome: 'circuit_open', verdict: 'retryable', reason: 'skipped', durationMs: 0 } },
      { index: 4, result: { outcome: '2xx', verdict: 'delivered', status: 200, reason: '200 OK', durationMs: 4 } },
    ];
    const answers = answersOf(results, T0, ORIGINS);
    expect(answers).toEqual([
      { at: AT, urlIndex: 0, origin: 'https://a.test', status: 500, latencyMs: 12, response: 'boom: database down' },
      { at: AT, urlIndex: 1, origin: 'https://b.test:8443', error: 'no complete answer within 5s', latencyMs: 5000 },
    ]);
    // Keys in the documented order.
    expect(Object.keys(answers[0]!)).toEqual(['at', 'urlIndex', 'origin', 'status', 'latencyMs', 'response']);
  });
});

describe('the attempt-history header', () => {
  it('round-trips, oldest first, and keeps the newest MAX_HISTORY_ANSWERS', () => {
    const first = [answer(0, { status: 500, response: 'boom: database down' })];
    const second = appendAnswers(first, [answer(0, { status: 503 })]);
    expect(readAnswers({ [ATTEMPT_HISTORY_HEADER]: Buffer.from(historyHeader(second)) })).toEqual(second);
    let many: AttemptAnswer[] = [];
    for (let i = 0; i < MAX_HISTORY_ANSWERS + 3; i++) many = appendAnswers(many, [answer(0, { latencyMs: i })]);
    expect(many).toHaveLength(MAX_HISTORY_ANSWERS);
    expect(many.map((a) => a.latencyMs)).toEqual([...Array(MAX_HISTORY_ANSWERS).keys()].map((i) => i + 3));
  });

  it('reads what it did not write as none, and leaves out entries it cannot read', () => {
    expect(readAnswers(undefined)).toEqual([]);
    expect(readAnswers({ [ATTEMPT_HISTORY_HEADER]: Buffer.from('not json') })).toEqual([]);
    expect(readAnswers({ [ATTEMPT_HISTORY_HEADER]: Buffer.from('{"a":1}') })).toEqual([]);
    const good = answer(0);
    const mixed = [good, { at: 'yesterday', urlIndex: 0, origin: 'x', status: 500, latencyMs: 1 }, { at: AT, urlIndex: -1, origin: 'x', status: 500, latencyMs: 1 }, { at: AT, urlIndex: 0, origin: 'x', latencyMs: 1 }, 7];
    expect(readAnswers({ [ATTEMPT_HISTORY_HEADER]: Buffer.from(JSON.stringify(mixed)) })).toEqual([good]);
    // Written by hand with a raw escape in it: escaped when read.
    const raw = [{ ...good, response: 'a\u001b[2Jb' }];
    expect(readAnswers({ [ATTEMPT_HISTORY_HEADER]: Buffer.from(JSON.stringify(raw)) })[0]!.response).toBe('a\\u001b[2Jb');
  });

  it('gives the newest answer of a URL, and the trace form without origins', () => {
    const answers = [answer(0, { status: 500 }), answer(1, { error: 'connection refused', status: undefined }), answer(0, { status: 503 })];
    expect(lastAnswerOf(answers, 0)?.status).toBe(503);
    expect(lastAnswerOf(answers, 2)).toBeUndefined();
    expect(tracedAnswers([answer(0, { response: 'boom' })])).toEqual([{ at: AT, urlIndex: 0, status: 500, latencyMs: 12, response: 'boom' }]);
  });
});
