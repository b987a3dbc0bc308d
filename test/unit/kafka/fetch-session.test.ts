import { describe, expect, it } from 'vitest';
import { FetchSession } from '../../../src/kafka/fetch-session.js';
import type { SessionPartition } from '../../../src/kafka/fetch-session.js';

const p = (topic: string, partition: number, offset: bigint, maxBytes = 1024): SessionPartition => ({ key: `${topic}:${partition}`, topic, partition, offset, maxBytes });

describe('FetchSession', () => {
  it('opens with every partition named, then names only those new or moved, and forgets those left out', () => {
    const session = new FetchSession();
    const first = session.request([p('a', 0, 5n), p('a', 1, 7n), p('b', 0, 0n)]);
    expect(first).toEqual({ id: 0, epoch: 0, partitions: [p('a', 0, 5n), p('a', 1, 7n), p('b', 0, 0n)], forgotten: [] });
    session.answered(42);

    expect(session.request([p('a', 0, 5n), p('a', 1, 7n), p('b', 0, 0n)])).toEqual({ id: 42, epoch: 1, partitions: [], forgotten: [] });
    session.answered(42);

    const moved = session.request([p('a', 0, 9n), p('a', 1, 7n, 2048), p('c', 3, 1n)]);
    expect(moved).toEqual({ id: 42, epoch: 2, partitions: [p('a', 0, 9n), p('a', 1, 7n, 2048), p('c', 3, 1n)], forgotten: [{ topic: 'b', partitions: [0] }] });
    session.answered(42);
    expect(session.request([p('a', 0, 9n), p('a', 1, 7n, 2048), p('c', 3, 1n)]).partitions).toEqual([]);
  });

  it('a request that was not answered counts for nothing: after a reset the next one opens a new session', () => {
    const session = new FetchSession();
    session.request([p('a', 0, 0n)]);
    session.answered(7);
    session.request([p('a', 0, 3n)]);
    session.reset();
    expect(session.request([p('a', 0, 3n)])).toEqual({ id: 0, epoch: 0, partitions: [p('a', 0, 3n)], forgotten: [] });
  });

  it('a broker that keeps no session (id 0) is asked with every partition named each time', () => {
    const session = new FetchSession();
    session.request([p('a', 0, 0n)]);
    session.answered(0);
    expect(session.request([p('a', 0, 0n)])).toEqual({ id: 0, epoch: 0, partitions: [p('a', 0, 0n)], forgotten: [] });
  });
});
