import { describe, expect, it } from 'vitest';
import type { InboundRecord } from '../../../src/kafka/index.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import { LaneQueues } from '../../../src/delivery/lane-queues.js';
import type { Entry, Taken } from '../../../src/delivery/lane-queues.js';

const TOPIC = 'deliveries.d';

/** `p0@3`: partition 0, offset 3; `key`: its user (ordered destinations). */
function record(id: string, key: string | null = null): InboundRecord {
  const [partition, offset] = id.slice(1).split('@') as [string, string];
  return { topic: TOPIC, partition: Number(partition), offset, key: key === null ? null : Buffer.from(key), value: Buffer.from('{}'), headers: {}, timestamp: '0' };
}

const idOf = (entry: Entry): string => `p${entry.queue.partition}@${entry.item.record.offset}`;

/** Queues holding `ids` (with keys after a colon: `p0@1:a`), in that order of arrival per partition. */
function queuesWith(ids: string[]): LaneQueues {
  const queues = new LaneQueues();
  for (const spec of ids) {
    const [id, key] = spec.split(':') as [string, string | undefined];
    const r = record(id, key ?? null);
    queues.push(queues.queueOf(r.topic, r.partition), [{ record: r, envelope: readEnvelope(r.headers, r.timestamp) }]);
  }
  return queues;
}

/** One walk: offers every head (unordered, or `ordered`), answering each with `verdicts[id]` ('taken' if absent) while `limit` allows. Returns what was offered and what it answered. */
function walk(queues: LaneQueues, verdicts: Record<string, Taken> = {}, options: { ordered?: boolean; limit?: number } = {}): string[] {
  const offered: string[] = [];
  let taken = 0;
  queues.offer(
    (queue) => queues.headOf(queue, options.ordered ?? false),
    (entry) => {
      const verdict = verdicts[idOf(entry)] ?? 'taken';
      offered.push(verdict === 'taken' ? idOf(entry) : `${idOf(entry)} ${verdict}`);
      if (verdict === 'taken' || verdict === 'taken-last') {
        taken += 1;
        queues.started(entry);
      }
      return verdict;
    },
    () => taken < (options.limit ?? Infinity),
  );
  return offered;
}

describe('LaneQueues.offer: one round robin for every walk', () => {
  it.each<[string, string[], Record<string, Taken>, number | undefined, string[], string[], number]>([
    // name, queued, verdicts of the first walk, its limit, first walk, second walk (all taken), queued after both
    ['one partition after the other', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], {}, undefined, ['p0@1', 'p1@1', 'p0@2', 'p1@2'], [], 0],
    ['declined: it stays, the walk stops, its partition keeps its turn', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], { 'p0@2': 'declined' }, undefined, ['p0@1', 'p1@1', 'p0@2 declined'], ['p0@2', 'p1@2'], 0],
    ['taken-last: off its queue, the walk stops, its partition keeps its turn', ['p0@1', 'p0@2', 'p1@1'], { 'p0@1': 'taken-last' }, undefined, ['p0@1 taken-last'], ['p0@2', 'p1@1'], 0],
    ['passed: it stays (asked again each round), the others go on', ['p0@1', 'p1@1', 'p1@2'], { 'p0@1': 'passed' }, undefined, ['p0@1 passed', 'p1@1', 'p0@1 passed', 'p1@2', 'p0@1 passed'], ['p0@1'], 0],
    ['more() says stop: the next partition has the next turn', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], {}, 3, ['p0@1', 'p1@1', 'p0@2'], ['p1@2'], 0],
    ['nothing queued: nothing offered', [], {}, undefined, [], [], 0],
  ])('%s', (_name, ids, verdicts, limit, first, second, left) => {
    const queues = queuesWith(ids);
    expect(walk(queues, verdicts, { limit })).toEqual(first);
    expect(walk(queues)).toEqual(second);
    expect(queues.queued).toBe(left);
  });

  it('offers the events whose turn came first, oldest first; a passed one ends that turn and the heads go on', () => {
    const queues = queuesWith(['p0@1', 'p0@2', 'p0@3', 'p1@1']);
    walk(queues, {}, { limit: 2 }); // p0@1 and p1@1 under way
    const [a, b] = [record('p0@1'), record('p1@1')];
    queues.readyAgain([{ queue: queues.queueOf(TOPIC, 1), item: { record: b, envelope: readEnvelope({}, '0') }, user: '' }], false);
    queues.readyAgain([{ queue: queues.queueOf(TOPIC, 0), item: { record: a, envelope: readEnvelope({}, '0') }, user: '' }], true);
    expect(walk(queues, { 'p1@1': 'passed' })).toEqual(['p0@1', 'p1@1 passed', 'p0@2', 'p0@3']);
    expect(walk(queues)).toEqual(['p1@1']);
  });

  it('given back to be offered again, an event is no longer running', () => {
    const queues = queuesWith(['p0@1']);
    let entry: Entry | undefined;
    queues.offer(
      (queue) => queues.headOf(queue, false),
      (e) => {
        entry = e;
        queues.started(e);
        return 'taken';
      },
    );
    expect([...entry!.queue.running]).toEqual(['1']);
    queues.readyAgain([entry!], true);
    expect([...entry!.queue.running]).toEqual([]);
  });
});

describe('LaneQueues, per-user order', () => {
  it.each<[string, string[], string[], string[], number]>([
    // name, queued (id:user), first walk, after the first one's user is done, parked after the first walk
    ['one event of a user at a time; other users go on', ['p0@0:a', 'p0@1:b', 'p0@2:a', 'p0@3:c'], ['p0@0', 'p0@1', 'p0@3'], ['p0@2'], 1],
    ["a user's events across partitions wait too", ['p0@0:a', 'p1@0:a', 'p1@1:b'], ['p0@0', 'p1@1'], ['p1@0'], 1],
    ['events without a key are users of their own', ['p0@0', 'p0@1'], ['p0@0', 'p0@1'], [], 0],
  ])('%s', (_name, ids, first, afterDone, parked) => {
    const queues = queuesWith(ids);
    const started: Entry[] = [];
    queues.offer(
      (queue) => queues.headOf(queue, true),
      (entry) => {
        started.push(entry);
        queues.started(entry);
        return 'taken';
      },
    );
    expect(started.map(idOf)).toEqual(first);
    expect(queues.parked).toBe(parked);
    queues.done(started[0]!);
    expect(walk(queues, {}, { ordered: true })).toEqual(afterDone);
    expect(queues.parked).toBe(0);
  });

  it('holdsUser: while an event of the user is under way', () => {
    const queues = queuesWith(['p0@0:a']);
    expect(queues.holdsUser('a')).toBe(false);
    let entry: Entry | undefined;
    queues.offer(
      (queue) => queues.headOf(queue, true),
      (e) => ((entry = e), queues.started(e), 'taken'),
    );
    expect(queues.holdsUser('a')).toBe(true);
    queues.done(entry!);
    expect(queues.holdsUser('a')).toBe(false);
  });
});

describe('LaneQueues.remove: a revoked partition in one call', () => {
  it('drops what it queued, parked and had ready, and returns its queue with what runs', () => {
    const queues = queuesWith(['p0@0:a', 'p0@1:a', 'p0@2:b', 'p1@0:c']);
    walk(queues, {}, { ordered: true, limit: 1 }); // p0@0 runs; p0@1 parked behind it
    expect(queues.parked).toBe(0); // not reached yet: the walk stopped at the limit
    walk(queues, {}, { ordered: true }); // p1@0 and p0@2 start, p0@1 parks
    expect(queues.parked).toBe(1);
    const queue = queues.remove(TOPIC, 0)!;
    expect([...queue.running].sort()).toEqual(['0', '2']);
    expect(queues.parked).toBe(0);
    expect(queues.queued).toBe(0);
    expect(queues.holds(queue)).toBe(false);
    expect(queues.holdsUser('a')).toBe(false);
    expect(queues.remove(TOPIC, 0)).toBeUndefined();
    expect(walk(queues, {}, { ordered: true })).toEqual([]);
  });

  it("an event of another partition parked behind one that went is in turn again", () => {
    const queues = queuesWith(['p0@0:a', 'p1@0:a', 'p1@1:b']);
    walk(queues, {}, { ordered: true }); // p0@0 (a) and p1@1 (b) run; p1@0 (a) parked
    expect(queues.parked).toBe(1);
    queues.remove(TOPIC, 0);
    expect(queues.parked).toBe(0);
    expect(walk(queues, {}, { ordered: true })).toEqual(['p1@0']);
    expect(queues.holdsUser('a')).toBe(true);
  });

  it('clear: nothing waits any more', () => {
    const queues = queuesWith(['p0@0:a', 'p0@1:a', 'p1@0']);
    walk(queues, {}, { ordered: true, limit: 1 });
    queues.clear();
    expect([queues.queued, queues.parked]).toEqual([0, 0]);
    expect(walk(queues, {}, { ordered: true })).toEqual([]);
  });
});
