import { describe, expect, it } from 'vitest';
import type { InboundRecord } from '../../../src/kafka/index.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import type { Entry, Head, PartitionQueue } from '../../../src/delivery/lane-parts.js';
import { LaneQueues } from '../../../src/delivery/lane-queues.js';

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

/** The lane's head of a queue without due times: the order's say only. */
const headsOf =
  (queues: LaneQueues, ordered: boolean) =>
  (queue: PartitionQueue): Head => {
    const item = queue.items[queue.head];
    return item === undefined ? undefined : queues.headOf(queue, item, ordered);
  };

/** What the walk's taker does with an event: takes it (and asks for the next), takes it and stops (a paced request), or declines it (it stays; the walk stops). */
type Verdict = 'taken' | 'taken-last' | 'declined';

/** One walk: offers every startable event, answering each with `verdicts[id]` ('taken' if absent) while `limit` allows. Returns what was offered and what it answered. */
function walk(queues: LaneQueues, verdicts: Record<string, Verdict> = {}, options: { ordered?: boolean; limit?: number } = {}): string[] {
  const offered: string[] = [];
  let taken = 0;
  queues.offer(
    headsOf(queues, options.ordered ?? false),
    (entry) => {
      const verdict = verdicts[idOf(entry)] ?? 'taken';
      offered.push(verdict === 'taken' ? idOf(entry) : `${idOf(entry)} ${verdict}`);
      if (verdict === 'declined') return false;
      taken += 1;
      queues.take(entry);
      queues.started(entry);
      return verdict === 'taken';
    },
    () => taken < (options.limit ?? Infinity),
  );
  return offered;
}

describe('LaneQueues.offer: one round robin for every walk', () => {
  it.each<[string, string[], Record<string, Verdict>, number | undefined, string[], string[], number]>([
    // name, queued, verdicts of the first walk, its limit, first walk, second walk (all taken), queued after both
    ['one partition after the other', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], {}, undefined, ['p0@1', 'p1@1', 'p0@2', 'p1@2'], [], 0],
    ['declined: it stays, the walk stops, its partition keeps its turn', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], { 'p0@2': 'declined' }, undefined, ['p0@1', 'p1@1', 'p0@2 declined'], ['p0@2', 'p1@2'], 0],
    ['taken-last: off its queue, the walk stops, its partition keeps its turn', ['p0@1', 'p0@2', 'p1@1'], { 'p0@1': 'taken-last' }, undefined, ['p0@1 taken-last'], ['p0@2', 'p1@1'], 0],
    ['more() says stop: the next partition has the next turn', ['p0@1', 'p0@2', 'p1@1', 'p1@2'], {}, 3, ['p0@1', 'p1@1', 'p0@2'], ['p1@2'], 0],
    ['a partition emptied drops out of the turns', ['p0@1', 'p1@1', 'p1@2', 'p1@3'], {}, undefined, ['p0@1', 'p1@1', 'p1@2', 'p1@3'], [], 0],
    ['nothing queued: nothing offered', [], {}, undefined, [], [], 0],
  ])('%s', (_name, ids, verdicts, limit, first, second, left) => {
    const queues = queuesWith(ids);
    expect(walk(queues, verdicts, { limit })).toEqual(first);
    expect(walk(queues)).toEqual(second);
    expect(queues.queued).toBe(left);
  });

  it('offers the events in turn first, oldest first (given back ones before them), heads after; more() does not stop those in turn', () => {
    const queues = queuesWith(['p0@1', 'p0@2', 'p0@3', 'p1@1']);
    const taken: Entry[] = [];
    queues.offer(headsOf(queues, false), (entry) => (queues.take(entry), queues.started(entry), taken.push(entry) < 2)); // p0@1, p1@1 under way
    expect(taken.map(idOf)).toEqual(['p0@1', 'p1@1']);
    queues.inTurn(taken[1]!);
    queues.givenBack([taken[0]!]);
    expect(walk(queues, {}, { limit: 0 })).toEqual(['p0@1', 'p1@1']);
    expect(walk(queues)).toEqual(['p0@2', 'p0@3']);
  });

  it('an event in turn declined: the walk stops before the heads', () => {
    const queues = queuesWith(['p0@1', 'p0@2']);
    const taken: Entry[] = [];
    queues.offer(headsOf(queues, false), (entry) => (queues.take(entry), queues.started(entry), taken.push(entry), false));
    queues.givenBack(taken);
    expect(walk(queues, { 'p0@1': 'declined' })).toEqual(['p0@1 declined']);
    expect(queues.firstReady()?.item.record.offset).toBe('1');
  });

  it('given back to be offered again, an event is no longer running', () => {
    const queues = queuesWith(['p0@1']);
    let entry: Entry | undefined;
    queues.offer(headsOf(queues, false), (e) => ((entry = e), queues.take(e), queues.started(e), true));
    expect([...entry!.queue.running]).toEqual(['1']);
    queues.givenBack([entry!]);
    expect([...entry!.queue.running]).toEqual([]);
  });

  it('putBack: a failed write’s record is the head again, counted as queued', () => {
    const queues = queuesWith(['p0@1', 'p0@2']);
    walk(queues, {}, { limit: 1 });
    const queue = queues.queueOf(TOPIC, 0);
    queues.putBack(queue, { record: record('p0@1'), envelope: readEnvelope({}, '0') });
    expect(queues.queued).toBe(2);
    expect(walk(queues)).toEqual(['p0@1', 'p0@2']);
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
    queues.offer(headsOf(queues, true), (entry) => (started.push(entry), queues.take(entry), queues.started(entry), true));
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
    queues.offer(headsOf(queues, true), (e) => ((entry = e), queues.take(e), queues.started(e), true));
    expect(queues.holdsUser('a')).toBe(true);
    queues.done(entry!);
    expect(queues.holdsUser('a')).toBe(false);
  });
});

describe('LaneQueues.remove: a revoked partition in one call', () => {
  it.each<[string, string[], number, boolean, string[]]>([
    // name, queued (id:user; all walked, ordered), partition revoked, whether any was in turn (the lane pumps), the next walk
    ['nothing in turn: no pump asked for', ['p0@0:a', 'p0@1:a', 'p1@0:c'], 0, false, []],
    ['one of another partition parked behind one that went: in turn again, a pump asked for', ['p0@0:a', 'p1@0:a', 'p1@1:b'], 0, true, ['p1@0']],
    ["only the revoked partition's in turn: a pump asked for all the same", ['p0@0:a', 'p0@1:a', 'p1@0:b'], 0, true, []],
  ])('%s', (_name, ids, partition, hadReady, next) => {
    const queues = queuesWith(ids);
    const started: Entry[] = [];
    queues.offer(headsOf(queues, true), (entry) => (started.push(entry), queues.take(entry), queues.started(entry), true));
    if (_name.startsWith('only')) queues.done(started.find((e) => e.user === 'a')!); // p0@1 in turn
    const queue = queues.queueOf(TOPIC, partition);
    expect(queues.remove(queue)).toBe(hadReady);
    expect(queues.holds(queue)).toBe(false);
    expect(queues.find(TOPIC, partition)).toBeUndefined();
    expect(queues.parked).toBe(0);
    expect(walk(queues, {}, { ordered: true })).toEqual(next);
  });

  it('drops what it queued and parked; its running offsets stay on its queue', () => {
    const queues = queuesWith(['p0@0:a', 'p0@1:a', 'p0@2:b', 'p0@3:b', 'p1@0:c']);
    walk(queues, {}, { ordered: true, limit: 2 }); // p0@0 (a) and p1@0 run
    const queue = queues.queueOf(TOPIC, 0);
    queues.remove(queue);
    expect([...queue.running]).toEqual(['0']);
    expect([queues.queued, queues.parked]).toEqual([0, 0]);
    expect(queues.holdsUser('a')).toBe(false);
    expect(queues.holdsUser('c')).toBe(true);
  });

  it('clear: nothing waits any more', () => {
    const queues = queuesWith(['p0@0:a', 'p0@1:a', 'p1@0']);
    walk(queues, {}, { ordered: true, limit: 1 });
    queues.clear();
    expect([queues.queued, queues.parked]).toEqual([0, 0]);
    expect(walk(queues, {}, { ordered: true })).toEqual([]);
  });
});
