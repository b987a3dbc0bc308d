import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { batchBody, batchBytes, batchId, fitsIn, halves, isFull, wantsSplit } from '../../../src/delivery/batch.js';
import type { UrlResult } from '../../../src/delivery/fan-out.js';

const ONE = '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"A","properties":{}}';
const TWO = '{"version":1,"type":"alias","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"anon-7","User ID":"u-1"}';
// A transform's output may be a list, or hold any characters: the body is opaque bytes.
const THREE = '[1,{"é":"✓ \\"quoted\\""}]';

describe('batchBody', () => {
  it.each<[string, string[], string]>([
    ['one event', [ONE], `[${ONE}]`],
    ['two events, byte for byte, joined by a comma', [ONE, TWO], `[${ONE},${TWO}]`],
    ['a list body among them', [ONE, THREE, TWO], `[${ONE},${THREE},${TWO}]`],
  ])('%s', (_name, bodies, expected) => {
    const body = batchBody(bodies.map((b) => Buffer.from(b)));
    expect(body.toString('utf8')).toBe(expected);
    expect(body.length).toBe(batchBytes(bodies.length, bodies.reduce((sum, b) => sum + Buffer.byteLength(b), 0)));
  });

  it('parses back to the bodies, each re-serialized to its own bytes', () => {
    const body = batchBody([ONE, TWO].map((b) => Buffer.from(b)));
    expect((JSON.parse(body.toString('utf8')) as unknown[]).map((e) => JSON.stringify(e))).toEqual([ONE, TWO]);
  });
});

describe('batchBody, ndjson', () => {
  it('is each body byte for byte followed by a line feed; its length is batchBytes', () => {
    const bodies = [ONE, THREE, TWO];
    const body = batchBody(
      bodies.map((b) => Buffer.from(b)),
      'ndjson',
    );
    expect(body.toString('utf8')).toBe(`${ONE}\n${THREE}\n${TWO}\n`);
    expect(body.length).toBe(batchBytes(3, bodies.reduce((sum, b) => sum + Buffer.byteLength(b), 0), 'ndjson'));
  });

  it('counts a line feed per body against maxBytes, where json counts commas and brackets', () => {
    // 2 bodies of 49 bytes: json 49+1+49+2 = 101 bytes, ndjson 49+1+49+1 = 100.
    expect(fitsIn({ events: 1, bodyBytes: 49 }, 49, { maxEvents: 3, maxBytes: 100 })).toBe(false);
    expect(fitsIn({ events: 1, bodyBytes: 49 }, 49, { maxEvents: 3, maxBytes: 100, format: 'ndjson' })).toBe(true);
    expect(isFull({ events: 2, bodyBytes: 98 }, { maxEvents: 3, maxBytes: 100, format: 'ndjson' })).toBe(true);
    expect(isFull({ events: 2, bodyBytes: 97 }, { maxEvents: 3, maxBytes: 100, format: 'ndjson' })).toBe(false);
  });
});

describe('fitsIn and isFull', () => {
  const limits = { maxEvents: 3, maxBytes: 100 };
  it.each<[string, { events: number; bodyBytes: number }, number, boolean]>([
    ['an empty batch takes any body, even one over maxBytes', { events: 0, bodyBytes: 0 }, 500, true],
    ['room for one more', { events: 2, bodyBytes: 40 }, 40, true],
    ['exactly maxBytes with brackets and commas', { events: 2, bodyBytes: 50 }, 46, true],
    ['one byte over maxBytes', { events: 2, bodyBytes: 50 }, 47, false],
    ['at maxEvents', { events: 3, bodyBytes: 3 }, 1, false],
  ])('%s', (_name, open, bytes, fits) => {
    expect(fitsIn(open, bytes, limits)).toBe(fits);
  });

  it.each<[string, { events: number; bodyBytes: number }, boolean]>([
    ['empty', { events: 0, bodyBytes: 0 }, false],
    ['below both limits', { events: 2, bodyBytes: 40 }, false],
    ['at maxEvents', { events: 3, bodyBytes: 30 }, true],
    ['at maxBytes', { events: 2, bodyBytes: 97 }, true],
    ['one event over maxBytes', { events: 1, bodyBytes: 500 }, true],
  ])('full: %s', (_name, open, full) => {
    expect(isFull(open, limits)).toBe(full);
  });
});

describe('batchId', () => {
  it('is the SHA-256 of the message ids, each after its length in bytes and a colon, as 32 hex digits', () => {
    const expected = createHash('sha256').update('3:m-15:m-✓').digest('hex').slice(0, 32);
    expect(batchId(['m-1', 'm-✓'])).toBe(`batch_${expected}`);
  });

  it('depends on the events and their order only', () => {
    expect(batchId(['m-1', 'm-2'])).toBe(batchId(['m-1', 'm-2']));
    expect(batchId(['m-1', 'm-2'])).not.toBe(batchId(['m-2', 'm-1']));
    expect(batchId(['m-1', 'm-2'])).not.toBe(batchId(['m-1']));
    // No two id lists run together into one.
    expect(batchId(['m-1', 'm-2'])).not.toBe(batchId(['m-1\nm-2']));
  });
});

describe('halves', () => {
  it.each<[number[], number[], number[]]>([
    [[1, 2], [1], [2]],
    [[1, 2, 3], [1, 2], [3]],
    [[1, 2, 3, 4, 5, 6], [1, 2, 3], [4, 5, 6]],
  ])('%j → %j and %j', (items, first, second) => {
    expect(halves(items)).toEqual([first, second]);
  });
});

describe('wantsSplit', () => {
  const answer = (index: number, status: number | undefined, outcome = status === undefined ? 'timeout' : `${String(status)[0]}xx`): UrlResult =>
    ({ index, result: { outcome, verdict: 'permanent', reason: '', durationMs: 1, ...(status === undefined ? {} : { status }) } }) as UrlResult;
  it.each<[string, number, UrlResult[], boolean]>([
    ['a 413 to a batch of two', 2, [answer(0, 413)], true],
    ['a 413 from one URL of two', 5, [answer(0, 503), answer(1, 413)], true],
    ['a 413 to one event', 1, [answer(0, 413)], false],
    ['a 400', 4, [answer(0, 400)], false],
    ['no answer', 4, [answer(0, undefined)], false],
    ['a cancelled request', 4, [{ index: 0, result: { outcome: 'cancelled', durationMs: 1 } }], false],
  ])('%s: %s', (_name, events, results, split) => {
    expect(wantsSplit(events, results)).toBe(split);
  });
});
