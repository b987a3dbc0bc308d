import { describe, expect, it } from 'vitest';
import { CommitMerger, newestPerPartition } from '../../../src/runtime/commit-merger.js';
import type { PartitionCommit } from '../../../src/runtime/commit-merger.js';

const at = (topic: string, partition: number, offset: number): PartitionCommit => ({ topic, partition, offset: BigInt(offset), leaderEpoch: 0 });

/** A send whose requests are answered by hand, in order. */
function manualSend() {
  const requests: { commits: PartitionCommit[]; answer(error?: Error): void }[] = [];
  const send = (commits: PartitionCommit[]) =>
    new Promise<void>((resolve, reject) => {
      requests.push({ commits, answer: (error) => (error ? reject(error) : resolve()) });
    });
  return { requests, send };
}

const settled = async (promise: Promise<void>) => {
  let state = 'pending';
  promise.then(
    () => (state = 'resolved'),
    () => (state = 'rejected'),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return state;
};

describe('newestPerPartition', () => {
  it.each([
    { name: 'one commit', commits: [at('t', 0, 5)], expected: [at('t', 0, 5)] },
    { name: 'the newest of a partition wins, in any order', commits: [at('t', 0, 5), at('t', 0, 9), at('t', 0, 7)], expected: [at('t', 0, 9)] },
    { name: 'partitions and topics apart, in first-seen order', commits: [at('t', 1, 3), at('u', 1, 4), at('t', 0, 2), at('t', 1, 6)], expected: [at('t', 1, 6), at('u', 1, 4), at('t', 0, 2)] },
    { name: 'nothing', commits: [], expected: [] },
  ])('$name', ({ commits, expected }) => {
    expect(newestPerPartition(commits)).toEqual(expected);
  });
});

describe('CommitMerger', () => {
  it('sends the commits asked for in one turn together at its end, and resolves them when answered', async () => {
    const { requests, send } = manualSend();
    const merger = new CommitMerger(send);
    const first = merger.commit(at('t', 0, 10));
    const alongside = merger.commit(at('t', 3, 2));
    expect(requests).toHaveLength(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests.map((r) => r.commits)).toEqual([[at('t', 0, 10), at('t', 3, 2)]]);
    expect(await settled(first)).toBe('pending');
    requests[0]!.answer();
    expect([await settled(first), await settled(alongside)]).toEqual(['resolved', 'resolved']);
  });

  it('holds the commits asked for while one is in flight and sends them as one request, the newest per partition', async () => {
    const { requests, send } = manualSend();
    const merger = new CommitMerger(send);
    const first = merger.commit(at('t', 0, 10));
    await new Promise((resolve) => setImmediate(resolve));
    const second = merger.commit(at('t', 1, 4));
    const third = merger.commit(at('t', 0, 12));
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests).toHaveLength(1);
    requests[0]!.answer();
    expect(await settled(first)).toBe('resolved');
    // The waiting two are not committed until their own request is answered.
    expect(await settled(second)).toBe('pending');
    expect(requests.map((r) => r.commits)).toEqual([[at('t', 0, 10)], [at('t', 1, 4), at('t', 0, 12)]]);
    requests[1]!.answer();
    expect([await settled(second), await settled(third)]).toEqual(['resolved', 'resolved']);
  });

  it('fails every commit of a failed request, and goes on with the next', async () => {
    const { requests, send } = manualSend();
    const merger = new CommitMerger(send);
    const first = merger.commit(at('t', 0, 10));
    await new Promise((resolve) => setImmediate(resolve));
    const second = merger.commit(at('t', 1, 4));
    const third = merger.commit(at('t', 2, 1));
    requests[0]!.answer();
    await first;
    requests[1]!.answer(new Error('REBALANCE_IN_PROGRESS'));
    await expect(second).rejects.toThrow('REBALANCE_IN_PROGRESS');
    await expect(third).rejects.toThrow('REBALANCE_IN_PROGRESS');
    const retry = merger.commit(at('t', 1, 4));
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests.map((r) => r.commits)).toHaveLength(3);
    requests[2]!.answer();
    await expect(retry).resolves.toBeUndefined();
  });
});
