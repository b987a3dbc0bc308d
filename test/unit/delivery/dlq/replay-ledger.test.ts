import { describe, expect, it } from 'vitest';
import { MAX_LEDGER_METADATA_CHARS, isDone, ledgerMetadata, markDone, readLedger } from '../../../../src/delivery/dlq/replay-ledger.js';

describe('readLedger', () => {
  it.each([
    // committed, metadata, low → position, done
    [undefined, undefined, 0n, 0n, []],
    [undefined, undefined, 7n, 7n, []],
    ['-1', null, 3n, 3n, []],
    ['5', '', 0n, 5n, []], // an older replay's commit: no metadata
    ['5', 'replayed:', 0n, 5n, []],
    ['5', 'replayed:8-9,12', 0n, 5n, [[8n, 9n], [12n, 12n]]],
    ['5', 'replayed:5-7', 0n, 8n, []], // joins the position
    ['5', 'replayed:6-7', 0n, 5n, [[6n, 7n]]], // offset 5 still to do
    ['5', 'replayed:12,8-9', 0n, 5n, [[8n, 9n], [12n, 12n]]], // any order
    ['5', 'replayed:8-9,x,3-1,10', 0n, 5n, [[8n, 10n]]], // unreadable parts skipped
    ['5', 'replayed:8-9', 9n, 10n, []], // retention removed what lay below 9
    ['5', 'something else', 0n, 5n, []],
  ])('committed %s, metadata %j, low %s', (committed, metadata, low, position, done) => {
    expect(readLedger(committed, metadata, low)).toEqual({ position, done });
  });
});

describe('markDone', () => {
  const start = readLedger('10', 'replayed:20-24', 0n);

  it('keeps a ranged replay from moving the position past letters it left', () => {
    const next = markDone(start, [[30n, 31n]]);
    expect(next).toEqual({ position: 10n, done: [[20n, 24n], [30n, 31n]] });
    expect(ledgerMetadata(next)).toBe('replayed:20-24,30-31');
  });

  it('moves the position once the letters left behind are dealt with, merging adjacent ranges', () => {
    const next = markDone(start, [[10n, 19n]]);
    expect(next).toEqual({ position: 25n, done: [] });
    expect(ledgerMetadata(next)).toBe('replayed:');
  });

  it('merges overlapping and adjacent ranges, single offsets too', () => {
    const next = markDone(start, [[25n, 25n], [26n, 28n], [22n, 27n], [40n, 40n]]);
    expect(next).toEqual({ position: 10n, done: [[20n, 28n], [40n, 40n]] });
    expect(ledgerMetadata(next)).toBe('replayed:20-28,40');
  });

  it('ignores ranges below the position', () => {
    expect(markDone(start, [[1n, 9n]])).toEqual(start);
  });

  it('round-trips through the commit', () => {
    const next = markDone(start, [[12n, 12n], [30n, 35n]]);
    expect(readLedger(String(next.position), ledgerMetadata(next), 0n)).toEqual(next);
  });
});

describe('isDone', () => {
  const ledger = readLedger('10', 'replayed:20-24,30', 0n);
  it.each([
    [0n, true],
    [9n, true],
    [10n, false],
    [19n, false],
    [20n, true],
    [24n, true],
    [25n, false],
    [30n, true],
    [31n, false],
  ])('offset %s: %s', (offset, done) => {
    expect(isDone(ledger, offset)).toBe(done);
  });
});

describe('the metadata budget', () => {
  it('fits within the broker default of 4096 bytes per partition', () => {
    expect(MAX_LEDGER_METADATA_CHARS).toBeLessThan(4096);
  });
});
