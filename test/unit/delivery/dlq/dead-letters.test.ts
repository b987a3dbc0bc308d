import { describe, expect, it } from 'vitest';
import { OldestLetters, compareByTime, deadLetterJson, deadLetterLine, readDeadLetter } from '../../../../src/delivery/dlq/dead-letters.js';
import type { DeadLetter } from '../../../../src/delivery/dlq/dead-letters.js';

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

describe('compareByTime and OldestLetters: the order of dlq list', () => {
  const T = Date.UTC(2026, 4, 1, 12);
  const letter = (id: string, atMs: number | undefined, partition: number, offset: number): DeadLetter => ({
    messageId: id,
    deadLetteredAtMs: atMs,
    attempts: 1,
    error: null,
    partition,
    offset: BigInt(offset),
  });
  // As a scan reads them: partition 1 first, each partition in offset order, which is not
  // time order (p0's offset 1 was dead-lettered before its offset 0).
  const read = [
    letter('p1-0', T + 2_000, 1, 0),
    letter('p1-1', T + 5_000, 1, 1),
    letter('p1-2', undefined, 1, 2),
    letter('p0-0', T + 4_000, 0, 0),
    letter('p0-1', T + 1_000, 0, 1),
    letter('p0-2', T + 2_000, 0, 2),
    letter('p0-3', undefined, 0, 3),
    letter('p0-4', T + 3_000, 0, 4),
  ];
  const ids = (letters: DeadLetter[]) => letters.map((l) => l.messageId);

  it('sorts by time, ties by partition then offset, letters without a time last', () => {
    expect(ids([...read].sort(compareByTime))).toEqual(['p0-1', 'p0-2', 'p1-0', 'p0-4', 'p0-0', 'p1-1', 'p0-3', 'p1-2']);
  });

  it.each([
    [undefined, ['p0-1', 'p0-2', 'p1-0', 'p0-4', 'p0-0', 'p1-1', 'p0-3', 'p1-2']],
    [1, ['p0-1']],
    [3, ['p0-1', 'p0-2', 'p1-0']],
    [7, ['p0-1', 'p0-2', 'p1-0', 'p0-4', 'p0-0', 'p1-1', 'p0-3']],
    [20, ['p0-1', 'p0-2', 'p1-0', 'p0-4', 'p0-0', 'p1-1', 'p0-3', 'p1-2']],
    [0, []],
  ])('keeps the %s oldest, oldest first, whatever the order they were read in', (limit, expected) => {
    for (const order of [read, [...read].reverse()]) {
      const oldest = new OldestLetters<{ letter: DeadLetter }>(limit);
      for (const l of order) oldest.add({ letter: l });
      expect(ids(oldest.oldest().map((e) => e.letter))).toEqual(expected);
      expect(oldest.seen).toBe(read.length);
    }
  });

  it('holds at most twice the limit while it reads', () => {
    const oldest = new OldestLetters<{ letter: DeadLetter }>(2);
    const held: number[] = [];
    for (let i = 0; i < 50; i++) {
      oldest.add({ letter: letter(`m-${i}`, T - i * 1_000, i % 3, i) });
      held.push(oldest.held);
    }
    expect(Math.max(...held)).toBeLessThanOrEqual(4);
    expect(ids(oldest.oldest().map((e) => e.letter))).toEqual(['m-49', 'm-48']);
  });
});
