import { describe, expect, it } from 'vitest';
import { notDoneRanges } from '../../../src/admin/destination-kafka.js';
import type { ReplayLedger } from '../../../src/delivery/dlq/replay-ledger.js';

describe('notDoneRanges', () => {
  const ledger = (position: bigint, done: [bigint, bigint][]): ReplayLedger => ({ position, done }) as ReplayLedger;
  const cases: { name: string; ledger: ReplayLedger; high: bigint; expected: [bigint, bigint][] }[] = [
    { name: 'nothing replayed yet', ledger: ledger(0n, []), high: 5n, expected: [[0n, 5n]] },
    { name: 'replayed to the end', ledger: ledger(5n, []), high: 5n, expected: [] },
    { name: 'ranges above the position count as done', ledger: ledger(2n, [[3n, 4n], [7n, 7n]]), high: 10n, expected: [[2n, 3n], [5n, 7n], [8n, 10n]] },
    { name: 'a range reaching past the end counts up to it', ledger: ledger(0n, [[3n, 20n]]), high: 5n, expected: [[0n, 3n]] },
    { name: 'a range starting at the end', ledger: ledger(0n, [[5n, 6n]]), high: 5n, expected: [[0n, 5n]] },
  ];
  for (const { name, ledger: l, high, expected } of cases) {
    it(name, () => {
      expect(notDoneRanges(l, high)).toEqual(expected);
    });
  }
});
