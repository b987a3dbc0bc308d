import { describe, expect, it } from 'vitest';
import { deadLetterJson, deadLetterLine, readDeadLetter } from '../../../src/delivery/dead-letters.js';

const body = Buffer.from('{"version":1,"type":"track","userId":"u-1","messageId":"m-body","timestamp":"2026-05-01T12:00:00.000Z","event":"E","properties":{}}');
const RECORD_MS = Date.UTC(2026, 4, 1, 13);

function record(headers: Record<string, string>, value: Buffer | null = body) {
  return { partition: 3, offset: 41n, value, headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Buffer.from(v)])), timestamp: String(RECORD_MS) };
}

describe('readDeadLetter', () => {
  it('reads the dead-letter headers', () => {
    const letter = readDeadLetter(
      record({ 'message-id': 'm-1', attempt: '7', 'last-attempt-at': '2026-05-01T12:30:00.000Z', error: 'https://a.example/x: 410 Gone; https://b.example/y: timeout after 5000 ms' }),
    );
    expect(letter).toEqual({
      messageId: 'm-1',
      deadLetteredAtMs: Date.UTC(2026, 4, 1, 12, 30),
      attempts: 7,
      error: 'https://a.example/x: 410 Gone; https://b.example/y: timeout after 5000 ms',
      partition: 3,
      offset: 41n,
    });
  });

  it('falls back to the record time and the body message id; marks what is missing as null', () => {
    expect(readDeadLetter(record({ attempt: 'x', 'last-attempt-at': 'not a time' }))).toEqual({
      messageId: 'm-body',
      deadLetteredAtMs: RECORD_MS,
      attempts: null,
      error: null,
      partition: 3,
      offset: 41n,
    });
    expect(readDeadLetter(record({}, Buffer.from('not json'))).messageId).toBeNull();
    expect(readDeadLetter(record({}, null)).messageId).toBeNull();
  });
});

describe('deadLetterJson', () => {
  it('writes exactly the keys of docs/cli.md, in order', () => {
    const letter = readDeadLetter(record({ 'message-id': 'm-1', attempt: '2', 'last-attempt-at': '2026-05-01T12:30:00Z', error: 'https://a.example/x: 410 Gone' }));
    expect(deadLetterJson(letter)).toBe(
      '{"messageId":"m-1","deadLetteredAt":"2026-05-01T12:30:00.000Z","attempts":2,"error":"https://a.example/x: 410 Gone","offset":41,"partition":3}',
    );
  });
});

describe('deadLetterLine', () => {
  it('shows time, message id, attempts, place, a note and the error', () => {
    const letter = readDeadLetter(record({ 'message-id': 'm-1', attempt: '2', 'last-attempt-at': '2026-05-01T12:30:00Z', error: 'https://a.example/x: 410 Gone' }));
    expect(deadLetterLine(letter, 'replayed')).toBe('2026-05-01T12:30:00.000Z  m-1  attempts=2  partition=3  offset=41  replayed  error=https://a.example/x: 410 Gone');
  });
});
