import { describe, expect, it } from 'vitest';
import { commitsToCarry } from '../../../src/kafka/group-upgrade.js';

const NONE = { offset: '-1', metadata: null };
const at = (offset: string, metadata: string | null = null) => ({ offset, metadata });
type Commits = Record<number, { offset: string; metadata: string | null }>;
const commits = (topic: string, byPartition: Commits) => [{ topic, partitions: Object.entries(byPartition).map(([p, c]) => ({ partition: Number(p), ...c })) }];

describe('commitsToCarry', () => {
  it.each<[string, Commits, { groupId: string; byPartition: Commits }[], { partition: number; offset: string; metadata: string | null; from: string }[]]>([
    ['nothing when the new group has no older group', { 0: NONE }, [], []],
    ['nothing when the new group committed every partition', { 0: at('5'), 1: at('0') }, [{ groupId: 'old', byPartition: { 0: at('9'), 1: at('9') } }], []],
    [
      'each partition the new group never committed, from the old group, with its metadata',
      { 0: at('5'), 1: NONE, 2: NONE },
      [{ groupId: 'old', byPartition: { 0: at('9'), 1: at('7', 'sy1:1.2'), 2: at('3') } }],
      [
        { partition: 1, offset: '7', metadata: 'sy1:1.2', from: 'old' },
        { partition: 2, offset: '3', metadata: null, from: 'old' },
      ],
    ],
    ['nothing for a partition no group committed', { 0: NONE }, [{ groupId: 'old', byPartition: { 0: NONE } }], []],
    [
      'the most recent older name first, the one before it only where that has none',
      { 0: NONE, 1: NONE, 2: NONE },
      [
        { groupId: 'sy-deliverer', byPartition: { 0: at('40', 'sy1:2.1'), 1: NONE, 2: NONE } },
        { groupId: 'sy-deliverer-hooks', byPartition: { 0: at('10'), 1: at('12'), 2: NONE } },
      ],
      [
        { partition: 0, offset: '40', metadata: 'sy1:2.1', from: 'sy-deliverer' },
        { partition: 1, offset: '12', metadata: null, from: 'sy-deliverer-hooks' },
      ],
    ],
    ['a commit at offset 0 counts as a commit (of the new group too)', { 0: at('0'), 1: NONE }, [{ groupId: 'old', byPartition: { 0: at('8'), 1: at('0') } }], [{ partition: 1, offset: '0', metadata: null, from: 'old' }]],
  ])('%s', (_, current, older, expected) => {
    const carried = commitsToCarry(
      commits('t', current),
      older.map(({ groupId, byPartition }) => ({ groupId, commits: commits('t', byPartition) })),
    );
    expect(carried).toEqual(expected.map((e) => ({ topic: 't', ...e })));
  });

  it('keeps topics apart: a commit of one topic never fills another', () => {
    const carried = commitsToCarry(commits('a', { 0: NONE }), [{ groupId: 'old', commits: commits('b', { 0: at('4') }) }]);
    expect(carried).toEqual([{ topic: 'b', partition: 0, offset: '4', metadata: null, from: 'old' }]);
  });
});
