// selectLetters (replay.ts): which letters of a scanned batch a replay moves, and which
// offsets without a letter (transaction markers, aborted records) it marks done.
import { describe, expect, it } from 'vitest';
import { selectLetters } from '../../../../src/delivery/dlq/replay.js';
import { markDone, readLedger } from '../../../../src/delivery/dlq/replay-ledger.js';
import type { ReplayLedger } from '../../../../src/delivery/dlq/replay-ledger.js';
import type { ScannedRecord } from '../../../../src/kafka/index.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);

function letter(offset: bigint, atMs = T0): ScannedRecord {
  return { partition: 0, offset, key: null, value: Buffer.from(JSON.stringify({ messageId: `m-${offset}` })), headers: undefined, timestamp: String(atMs) };
}

const all = { range: {}, messageId: undefined };

/** Letters at 0-1 (marker 2), aborted 3-4 (marker 5), letter 6 (marker 7): the batch covers 0-7. */
const batch = { records: [letter(0n), letter(1n), letter(6n)], from: 0n, to: 8n };

function apply(ledger: ReplayLedger, result: ReturnType<typeof selectLetters>): ReplayLedger {
  return markDone(ledger, [...result.take.map((t): [bigint, bigint] => [t.letter.offset, t.letter.offset]), ...result.done]);
}

describe('selectLetters', () => {
  it('a full replay moves every letter and marks the markers and aborted records done: the ledger reaches the end', () => {
    const result = selectLetters(batch, readLedger(undefined, undefined, 0n), all, Infinity);
    expect(result.take.map((t) => t.letter.offset)).toEqual([0n, 1n, 6n]);
    expect(apply(readLedger(undefined, undefined, 0n), result)).toEqual({ position: 8n, done: [] });
  });

  it('a partial replay marks only the offsets that join what it moved', () => {
    const ledger = readLedger(undefined, undefined, 0n);
    const result = selectLetters(batch, ledger, all, 1);
    expect(result.take.map((t) => t.letter.offset)).toEqual([0n]);
    expect(apply(ledger, result)).toEqual({ position: 1n, done: [] });
  });

  it('a ranged replay leaves the letters out of range, and the markers after them, for a later replay', () => {
    const records = [letter(0n, T0), letter(2n, T0 + 2 * HOUR), letter(4n, T0), letter(6n, T0 + 2 * HOUR)];
    const spread = { records, from: 0n, to: 8n }; // a marker after each letter
    const ledger = readLedger(undefined, undefined, 0n);
    const result = selectLetters(spread, ledger, { range: { sinceMs: T0 + HOUR }, messageId: undefined }, Infinity);
    expect(result.take.map((t) => t.letter.offset)).toEqual([2n, 6n]);
    const after = apply(ledger, result);
    expect(after).toEqual({ position: 0n, done: [[2n, 3n], [6n, 7n]] });
    const rest = selectLetters(spread, after, all, Infinity);
    expect(rest.take.map((t) => t.letter.offset)).toEqual([0n, 4n]);
    expect(apply(after, rest)).toEqual({ position: 8n, done: [] });
  });

  it('a batch of markers alone, after letters moved before, is done', () => {
    const ledger = readLedger('5', 'replayed:', 0n);
    expect(apply(ledger, selectLetters({ records: [], from: 5n, to: 7n }, ledger, all, Infinity))).toEqual({ position: 7n, done: [] });
  });
});
