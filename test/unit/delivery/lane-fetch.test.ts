import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { InboundRecord } from '../../../src/kafka/index.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import { LaneFetch } from '../../../src/delivery/lane-fetch.js';
import { LaneQueues } from '../../../src/delivery/lane-queues.js';
import type { PartitionQueue } from '../../../src/delivery/lane-parts.js';

const TOPIC = 't';

/** A lane's queues (`counts[p]` records queued on partition p), a fetch over them with a bound of `bound`, and a log of the stream's calls and the pumps. */
function fetchWith(counts: number[], bound: number, waitMs = 0) {
  const log: string[] = [];
  const queues = new LaneQueues();
  counts.forEach((count, partition) => {
    const queue = queues.queueOf(TOPIC, partition);
    const records: InboundRecord[] = Array.from({ length: count }, (_, i) => ({ topic: TOPIC, partition, offset: String(i), key: null, value: null, headers: {}, timestamp: '0' }));
    queues.push(queue, records.map((record) => ({ record, envelope: readEnvelope(record.headers, record.timestamp) })));
  });
  const stream = {
    pause: (_topic: string, partition: number, resumeAt?: number) => void log.push(resumeAt === undefined ? `pause ${partition}` : `pause ${partition} until +${resumeAt - Date.now()}`),
    resume: (_topic: string, partition: number) => void log.push(`resume ${partition}`),
    release: () => undefined,
  };
  const fetch = new LaneFetch(stream, { waitMs: () => waitMs }, queues, bound, () => log.push('pump'));
  const queue = (partition: number): PartitionQueue => queues.queueOf(TOPIC, partition);
  return { fetch, queues, queue, log };
}

describe('LaneFetch', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each<[string, number[], number, string[]]>([
    // name, queued per partition, bound, the stream's calls
    ['under the bound: nothing paused', [3, 2], 8, []],
    ['at the bound: the partitions with records queued pause', [5, 3, 0], 8, ['pause 0', 'pause 1']],
  ])('pauseIfFull: %s', (_name, counts, bound, calls) => {
    const { fetch, log } = fetchWith(counts, bound);
    fetch.pauseIfFull();
    fetch.pauseIfFull(); // a paused partition is not paused again
    expect(log).toEqual(calls);
  });

  it.each<[string, number, string[]]>([
    // name, records taken off after a full lane of 8 paused, the stream's calls
    ['between three quarters and the bound: still paused', 1, []],
    ['at three quarters: resumed', 2, ['resume 0', 'resume 1']],
  ])('resumeIfRoom: %s', (_name, taken, calls) => {
    const { fetch, queues, log } = fetchWith([5, 3], 8);
    fetch.pauseIfFull();
    log.length = 0;
    for (let i = 0; i < taken; i++) queues.offer((queue) => queues.headOf(queue, queue.items[queue.head]!, false), (entry) => (queues.take(entry), false));
    fetch.resumeIfRoom();
    expect(log).toEqual(calls);
  });

  it('a head not due yet: its partition pauses until then, and fetches again and pumps once due', async () => {
    const { fetch, queue, log } = fetchWith([1], 8, 500);
    const head = queue(0).items[0]!;
    expect(fetch.headWaits(queue(0), head)).toBe(true);
    expect(fetch.headWaits(queue(0), head)).toBe(true); // waits once
    expect(log).toEqual(['pause 0 until +500']);
    await vi.advanceTimersByTimeAsync(500);
    expect(log).toEqual(['pause 0 until +500', 'resume 0', 'pump']);
  });

  it('a due head: no wait', () => {
    const { fetch, queue, log } = fetchWith([1], 8, 0);
    expect(fetch.headWaits(queue(0), queue(0).items[0]!)).toBe(false);
    expect(log).toEqual([]);
  });

  it('every circuit open: the partitions pause until they may let a request through, new records too; once through, they fetch again (unless full or due)', async () => {
    const { fetch, queue, log } = fetchWith([1, 1, 1], 8);
    fetch.waitUntilDue(queue(2), 10_000);
    fetch.waitForCircuits(5_000);
    expect(fetch.waitingForCircuits).toBe(true);
    fetch.accepted(queue(0));
    expect(log).toEqual(['pause 2 until +10000', 'pause 0 until +5000', 'pause 1 until +5000', 'pause 2 until +5000', 'pause 0']);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(log.at(-1)).toBe('pump');
    fetch.circuitsLetThrough();
    expect(fetch.waitingForCircuits).toBe(false);
    expect(log.slice(6)).toEqual(['resume 0', 'resume 1']);
    fetch.circuitsLetThrough(); // not waiting: nothing
    expect(log).toHaveLength(8);
  });

  it.each<[string, number, boolean, string[]]>([
    // name, parked on partition 0, already paused as full, the stream's calls
    ['under the bound: fetched on', 7, false, []],
    ['at the bound: paused as full', 8, false, ['pause 0']],
    ['paused as full already: not again', 8, true, ['pause 0']],
  ])('parked: %s', (_name, parked, full, calls) => {
    const { fetch, queue, log } = fetchWith([9], 8);
    if (full) fetch.pauseIfFull();
    queue(0).parked = parked;
    fetch.parked(queue(0));
    expect(log).toEqual(calls);
  });

  it('a partition with its bound of records parked stays paused when the lane has room', () => {
    const { fetch, queues, queue, log } = fetchWith([8], 8);
    fetch.pauseIfFull();
    queue(0).parked = 8;
    queues.clear();
    fetch.resumeIfRoom();
    expect(log).toEqual(['pause 0']);
  });

  it('drop and stop: no timer pumps any more', async () => {
    const { fetch, queue, log } = fetchWith([1, 1], 8);
    fetch.waitUntilDue(queue(0), 100);
    fetch.waitUntilDue(queue(1), 100);
    fetch.waitForCircuits(100);
    fetch.drop(queue(0));
    fetch.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(log.filter((line) => line === 'pump' || line.startsWith('resume'))).toEqual([]);
    expect(fetch.waitingForCircuits).toBe(false);
  });
});
