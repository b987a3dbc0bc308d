import { createHash, randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sampleKeeps, samplePoint } from '../../../src/shaping/sample.js';

describe('samplePoint (docs/webhooks.md#shaping: the first 48 bits of SHA-256 of the messageId, over 2^48)', () => {
  it('is the documented number, computed here independently', () => {
    for (const id of ['m-1', 'bench-42', 'ünïcødé-✓', '']) {
      const hex = createHash('sha256').update(Buffer.from(id, 'utf8')).digest('hex').slice(0, 12);
      expect(samplePoint(id)).toBe(parseInt(hex, 16) / 2 ** 48);
    }
  });

  it('lies in [0, 1) and is the same every time for the same messageId', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 64 }), (id) => {
        const point = samplePoint(id);
        expect(point).toBeGreaterThanOrEqual(0);
        expect(point).toBeLessThan(1);
        expect(samplePoint(id)).toBe(point);
        expect(sampleKeeps(point, 0.37)).toBe(sampleKeeps(samplePoint(id), 0.37));
      }),
    );
  });
});

describe('sampleKeeps keeps its fraction', () => {
  const N = 100_000;
  const kinds: [string, (i: number) => string][] = [
    ['random UUIDs', () => randomUUID()],
    ['sequential ids (order-1, order-2, …)', (i) => `order-${i}`],
    ['ids that differ in one trailing digit run', (i) => `2026-05-01T12:00:00.000Z-${String(i).padStart(6, '0')}`],
  ];
  it.each(kinds)('%s: within one percentage point of the fraction over 100,000 of them, at every fraction', (_name, makeId) => {
    const points = Array.from({ length: N }, (_, i) => samplePoint(makeId(i)));
    for (const fraction of [0.01, 0.1, 0.25, 0.5, 0.9]) {
      const kept = points.filter((p) => sampleKeeps(p, fraction)).length;
      // "within 1 %": of the events, i.e. |kept/N − fraction| ≤ 0.01
      expect(Math.abs(kept / N - fraction)).toBeLessThanOrEqual(0.01);
    }
  });

  it('at random fractions too (property)', () => {
    const points = Array.from({ length: N }, (_, i) => samplePoint(`evt-${i}`));
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), (fraction) => {
        const kept = points.filter((p) => sampleKeeps(p, fraction)).length;
        expect(Math.abs(kept / N - fraction)).toBeLessThanOrEqual(0.01);
      }),
      { numRuns: 20 },
    );
  });

  it('0 keeps nothing, 1 keeps everything, and a smaller fraction keeps a subset of a larger one', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (id, a, b) => {
        const point = samplePoint(id);
        expect(sampleKeeps(point, 0)).toBe(false);
        expect(sampleKeeps(point, 1)).toBe(true);
        if (sampleKeeps(point, Math.min(a, b))) expect(sampleKeeps(point, Math.max(a, b))).toBe(true);
      }),
    );
  });
});
