import { describe, expect, it } from 'vitest';
import { notDoneBelow } from '../../../src/admin/destination-kafka.js';
import type { ReplayLedger } from '../../../src/delivery/dlq/replay-ledger.js';

describe('notDoneBelow', () => {
  const ledger = (position: bigint, done: [bigint, bigint][]): ReplayLedger => ({ position, done }) as ReplayLedger;
  const cases: { name: string; ledger: ReplayLedger; high: bigint; expected: number }[] = [
    { name: 'nothing replayed yet', ledger: ledger(0n, []), high: 5n, expected: 5 },
    { name: 'replayed to the end', ledger: ledger(5n, []), high: 5n, expected: 0 },
    { name: 'ranges above the position count as done', ledger: ledger(2n, [[3n, 4n], [7n, 7n]]), high: 10n, expected: 5 },
    { name: 'a range reaching past the end counts up to it', ledger: ledger(0n, [[3n, 20n]]), high: 5n, expected: 3 },
  ];
  for (const { name, ledger: l, high, expected } of cases) {
    it(name, () => {
      expect(notDoneBelow(l, high)).toBe(expected);
    });
  }
});
