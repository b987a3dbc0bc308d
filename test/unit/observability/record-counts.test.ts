import { describe, expect, it } from 'vitest';
import { waitingSpans } from '../../../src/observability/consumer-lag.js';
import { PartitionGaps, createRecordCounter } from '../../../src/observability/record-counts.js';
import type { OffsetRun, OffsetSpan } from '../../../src/observability/record-counts.js';

/** Counts by walking every offset: what PartitionGaps must agree with. */
function naive(holes: ReadonlySet<number>, from: number, to: number): number {
  let n = 0;
  for (let o = from; o < to; o++) if (!holes.has(o)) n += 1;
  return n;
}

describe('PartitionGaps', () => {
  it('counts the offsets of a stretch that hold a record', () => {
    const gaps = new PartitionGaps(10);
    // Letters at 10-12, marker 13, aborted 14-15 and its marker 16, letter 17, marker 18.
    gaps.append([[13n, 16n]], 17n);
    gaps.append([[18n, 18n]], 19n);
    expect(gaps.end).toBe(19);
    expect(gaps.records(10, 19)).toBe(4);
    expect(gaps.records(13, 17)).toBe(0);
    expect(gaps.records(12, 18)).toBe(2);
    expect(gaps.records(15, 15)).toBe(0);
  });

  it('merges runs that touch across reads, and forgets what lies below a new start', () => {
    const gaps = new PartitionGaps(0);
    gaps.append([[3n, 4n]], 5n);
    gaps.append([[5n, 5n], [8n, 8n]], 9n);
    expect(gaps.records(0, 9)).toBe(5);
    gaps.dropBelow(4);
    expect(gaps.start).toBe(4);
    expect(gaps.records(4, 9)).toBe(2);
    gaps.dropBelow(9);
    expect(gaps.records(9, 9)).toBe(0);
  });

  it('agrees with a walk over every offset, for many runs and starts moving past them', () => {
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    const holes = new Set<number>();
    const gaps = new PartitionGaps(0);
    let end = 0;
    for (let read = 0; read < 400; read++) {
      const runs: OffsetRun[] = [];
      const to = end + 1 + Math.floor(random() * 20);
      for (let o = end; o < to; o++) {
        if (random() < 0.4) {
          holes.add(o);
          const last = runs[runs.length - 1];
          if (last !== undefined && last[1] === BigInt(o - 1)) runs[runs.length - 1] = [last[0], BigInt(o)];
          else runs.push([BigInt(o), BigInt(o)]);
        }
      }
      gaps.append(runs, BigInt(to));
      end = to;
      if (read % 50 === 49) gaps.dropBelow(Math.floor(end * random()));
      for (let check = 0; check < 5; check++) {
        const a = gaps.start + Math.floor(random() * (end - gaps.start));
        const b = a + Math.floor(random() * (end - a + 1));
        expect(gaps.records(a, b)).toBe(naive(holes, a, b));
      }
    }
    for (let i = 0; i < 3_000; i++) gaps.dropBelow(gaps.start + 1);
    expect(gaps.records(gaps.start, end)).toBe(naive(holes, gaps.start, end));
  });
});

describe('createRecordCounter', () => {
  it('reads a partition once, then only what was written since; anew when the log went back', async () => {
    const asked: OffsetSpan[] = [];
    // Offsets 2 and 5 of partition 0 hold no record.
    const reader = {
      read: async (spans: readonly OffsetSpan[], onRead: (span: OffsetSpan, gaps: OffsetRun[], readTo: bigint) => void) => {
        for (const span of spans) {
          asked.push(span);
          const runs: OffsetRun[] = [2n, 5n].filter((o) => o >= span.from && o < span.to).map((o) => [o, o]);
          onRead(span, runs, span.to);
        }
      },
    };
    const counter = createRecordCounter();
    const span = (from: bigint, to: bigint): OffsetSpan => ({ topic: 't', partition: 0, from, to });
    expect(await counter.counting(reader, [span(0n, 4n)], (records) => records('t', 0, 0n, 4n))).toBe(3);
    expect(await counter.counting(reader, [span(0n, 7n)], (records) => records('t', 0, 0n, 7n))).toBe(5);
    expect(await counter.counting(reader, [span(1n, 7n)], (records) => records('t', 0, 1n, 7n))).toBe(4);
    expect(asked).toEqual([span(0n, 4n), span(4n, 7n)]);
    expect(await counter.counting(reader, [span(0n, 3n)], (records) => records('t', 0, 0n, 3n))).toBe(2);
    expect(asked[asked.length - 1]).toEqual(span(0n, 3n));
  });

  it('keeps what a read brought before it failed, and goes on from there', async () => {
    let fail = true;
    const reader = {
      read: async (spans: readonly OffsetSpan[], onRead: (span: OffsetSpan, gaps: OffsetRun[], readTo: bigint) => void) => {
        for (const span of spans) {
          onRead(span, [], span.from + 2n);
          if (fail) throw new Error('broker away');
          onRead(span, [[span.from + 2n, span.from + 2n]], span.to);
        }
      },
    };
    const counter = createRecordCounter();
    const spans = [{ topic: 't', partition: 0, from: 0n, to: 10n }];
    await expect(counter.counting(reader, spans, () => 0)).rejects.toThrow('broker away');
    fail = false;
    expect(await counter.counting(reader, spans, (records) => records('t', 0, 0n, 10n))).toBe(9);
  });
});

describe('waitingSpans', () => {
  it('from the commit (the log start without one, or below it) to the end; none for a partition read to its end', () => {
    const ends = [
      { partition: 0, low: '0', high: '10' },
      { partition: 1, low: '5', high: '9' },
      { partition: 2, low: '0', high: '4' },
      { partition: 3, low: '0', high: '6' },
    ];
    const committed = [
      { partition: 0, offset: '7' },
      { partition: 1, offset: '2' },
      { partition: 2, offset: '4' },
    ];
    expect(waitingSpans('t', ends, committed)).toEqual([
      { topic: 't', partition: 0, from: 7n, to: 10n },
      { topic: 't', partition: 1, from: 5n, to: 9n },
      { topic: 't', partition: 3, from: 0n, to: 6n },
    ]);
  });
});
