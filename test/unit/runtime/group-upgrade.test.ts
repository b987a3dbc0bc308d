import { describe, expect, it } from 'vitest';
import { LegacyChain, uncommitted } from '../../../src/runtime/group-upgrade.js';

type Commit = { offset: string; metadata: string | null };
/** What each older group answers: topic → partition → its commit. */
type Answers = Record<string, Record<string, Record<number, Commit>>>;

const NONE: Commit = { offset: '-1', metadata: null };
const at = (offset: string, metadata: string | null = null): Commit => ({ offset, metadata });

/**
 * Walks the chain to its end as findOlderCommits does, each group answering for the
 * partitions it is asked (as committedOffsetsOf does). Returns each step's questions
 * and what was carried, with the group it came from.
 */
function walk(fresh: [string, number][], chains: Record<string, string[]>, answers: Answers, notWanted: string[] = []) {
  const chain = new LegacyChain(
    fresh.map(([topic, partition]) => ({ topic, partition })),
    (topic) => chains[topic] ?? [],
  );
  const steps: Record<string, string[]>[] = [];
  const carried: string[] = [];
  for (let step = chain.nextStep(); step !== undefined; step = chain.nextStep()) {
    steps.push(Object.fromEntries([...step].map(([group, asked]) => [group, asked.map((a) => `${a.topic}:${a.partitions.join(',')}`)])));
    for (const [group, asked] of step) {
      const committed = asked.map(({ topic, partitions }) => ({
        topic,
        partitions: partitions.map((partition) => ({ partition, ...(answers[group]?.[topic]?.[partition] ?? NONE) })),
      }));
      for (const c of chain.take(group, committed, (key) => !notWanted.includes(key))) carried.push(`${c.topic}:${c.partition}@${c.offset}${c.metadata === null ? '' : ` ${c.metadata}`} from ${c.from}`);
    }
  }
  return { steps, carried };
}

describe('LegacyChain', () => {
  it.each<[string, Parameters<typeof walk>, ReturnType<typeof walk>]>([
    ['no fresh partition: nothing asked', [[], { t: ['old'] }, {}], { steps: [], carried: [] }],
    ['no older group: nothing asked', [[['t', 0]], {}, {}], { steps: [], carried: [] }],
    [
      'the most recent older group first, with its metadata',
      [[['t', 0], ['t', 1]], { t: ['sy-deliverer', 'sy-deliverer-hooks'] }, { 'sy-deliverer': { t: { 0: at('40', 'sy1:2.1'), 1: at('7') } } }],
      { steps: [{ 'sy-deliverer': ['t:0,1'] }], carried: ['t:0@40 sy1:2.1 from sy-deliverer', 't:1@7 from sy-deliverer'] },
    ],
    [
      'the next group only for the partitions the first had no commit of',
      [[['t', 0], ['t', 1], ['t', 2]], { t: ['new', 'older'] }, { new: { t: { 0: at('40') } }, older: { t: { 0: at('10'), 1: at('12') } } }],
      { steps: [{ new: ['t:0,1,2'] }, { older: ['t:1,2'] }], carried: ['t:0@40 from new', 't:1@12 from older'] },
    ],
    [
      'each topic asks the groups of its own chain, in one question per group',
      [[['a', 0], ['b', 0], ['b', 1]], { a: ['sy-deliverer-a'], b: ['sy-deliverer-b'] }, { 'sy-deliverer-b': { b: { 1: at('3') } } }],
      { steps: [{ 'sy-deliverer-a': ['a:0'], 'sy-deliverer-b': ['b:0,1'] }], carried: ['b:1@3 from sy-deliverer-b'] },
    ],
    [
      'a group shared by two topics is asked once for both',
      [[['a', 0], ['b', 0]], { a: ['sy-deliverer'], b: ['sy-deliverer'] }, { 'sy-deliverer': { a: { 0: at('1') }, b: { 0: at('2') } } }],
      { steps: [{ 'sy-deliverer': ['a:0', 'b:0'] }], carried: ['a:0@1 from sy-deliverer', 'b:0@2 from sy-deliverer'] },
    ],
    ['a commit at offset 0 is carried', [[['t', 0]], { t: ['old'] }, { old: { t: { 0: at('0') } } }], { steps: [{ old: ['t:0'] }], carried: ['t:0@0 from old'] }],
    [
      'a partition no longer wanted (taken away meanwhile) is not carried from any group',
      [[['t', 0], ['t', 1]], { t: ['new', 'older'] }, { new: { t: { 0: at('5'), 1: at('6') } }, older: { t: { 0: at('1'), 1: at('2') } } }, ['0:t']],
      { steps: [{ new: ['t:0,1'] }, { older: ['t:0'] }], carried: ['t:1@6 from new'] },
    ],
  ])('%s', (_, args, expected) => {
    expect(walk(...args)).toEqual(expected);
  });

  it('takes only what was asked at this step: commits of other partitions in an answer are left', () => {
    const chain = new LegacyChain([{ topic: 't', partition: 0 }], () => ['old']);
    chain.nextStep();
    const answer = [{ topic: 't', partitions: [{ partition: 0, ...at('4') }, { partition: 1, ...at('9') }] }];
    expect(chain.take('old', answer, () => true)).toEqual([{ topic: 't', partition: 0, offset: '4', metadata: null, from: 'old' }]);
    expect(chain.take('old', answer, () => true)).toEqual([]); // carried once
    expect(chain.nextStep()).toBeUndefined();
  });
});

describe('uncommitted', () => {
  it('lists the partitions without a commit, of every topic; a commit at offset 0 is one', () => {
    const commits = [
      { topic: 'a', partitions: [{ partition: 0, ...at('0') }, { partition: 1, ...NONE }] },
      { topic: 'b', partitions: [{ partition: 0, ...NONE }, { partition: 1, ...at('7', 'sy1:1.2') }] },
    ];
    expect(uncommitted(commits)).toEqual([
      { topic: 'a', partition: 1 },
      { topic: 'b', partition: 0 },
    ]);
  });
});
