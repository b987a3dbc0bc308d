// The commit ledger alone (src/delivery/commit-ledger.ts): its commit channel answers when
// the test says (test/support/commit-channel.ts), its timers are fake.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CommitLedger } from '../../../src/delivery/commit-ledger.js';
import type { Hold } from '../../../src/delivery/commit-ledger.js';
import { PartitionProgress, decodeFinished } from '../../../src/kafka/index.js';
import type { PartitionCommit } from '../../../src/delivery/stream-progress.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { fakeCommitChannel } from '../../support/commit-channel.js';

const T = 'deliveries.d';
const key = (partition: number, topic = T) => `${partition}:${topic}`;

/** A member's ledger over partitions 0 to `partitions - 1` of T, each committed at offset 0. */
function ledgerFixture(options: { partitions?: number; commitDelayMs?: number } = {}) {
  const finishedKeys: string[] = [];
  const channel = fakeCommitChannel((k, offset) => finishedKeys.push(`${k}@${offset}`));
  const ledger = new CommitLedger({ groupId: 'g', commitEveryMs: 100, ...(options.commitDelayMs !== undefined ? { commitDelayMs: options.commitDelayMs } : {}) }, channel, silentLogger());
  for (let p = 0; p < (options.partitions ?? 1); p++) channel.progress.track(key(p), new PartitionProgress('0', null));
  /** Answers every request out (and lets the round end). */
  const answerAll = async () => {
    for (const request of [...channel.out]) request.answer();
    await vi.advanceTimersByTimeAsync(0);
  };
  return { ledger, channel, finishedKeys, answerAll };
}

/** A commit entry as a table reads it: `offset` and the finished offsets its metadata lists. */
const readable = (c: PartitionCommit) => ({ partition: c.partition, offset: c.offset, above: decodeFinished(BigInt(c.offset), c.metadata).map(String) });

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('CommitLedger: what a round names', () => {
  it.each([
    ['in order', ['0', '1', '2'], '3', []],
    ['out of order, all', ['2', '0', '1'], '3', []],
    ['a gap: 1 still in flight', ['0', '2', '3'], '1', ['2', '3']],
    ['nothing below: 0 in flight', ['4', '2'], '0', ['2', '4']],
    ['again is no change', ['0', '0', '1'], '2', []],
  ])('%s: finished %j → commits %s with %j above', async (_what, offsets, offset, above) => {
    const { ledger, channel } = ledgerFixture();
    for (const o of offsets) ledger.finish(T, 0, o);
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((request) => request.map(readable))).toEqual([[{ partition: 0, offset, above }]]);
  });

  it('a round starts 5 ms after the first completion it covers, one at a time; only partitions that moved are in it', async () => {
    const { ledger, channel, answerAll } = ledgerFixture({ partitions: 3 });
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(4);
    expect(channel.sent).toHaveLength(0);
    ledger.finish(T, 1, '0');
    await vi.advanceTimersByTimeAsync(1);
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[0, 1]]);
    ledger.finish(T, 1, '1'); // while the round is out: the next one, after it
    await vi.advanceTimersByTimeAsync(50);
    expect(channel.sent).toHaveLength(1);
    await answerAll();
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((r) => r.map(readable))).toEqual([
      [
        { partition: 0, offset: '1', above: [] },
        { partition: 1, offset: '1', above: [] },
      ],
      [{ partition: 1, offset: '2', above: [] }],
    ]);
  });

  it('more partitions than one request takes go out in slices of 50, all at once; the round ends when every slice settled', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 120 });
    for (let p = 0; p < 120; p++) ledger.finish(T, p, '0');
    let woken = 0;
    ledger.whenCommitted(() => (woken += 1));
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((r) => r.length)).toEqual([50, 50, 20]);
    channel.out[0]!.answer();
    channel.out[1]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(woken).toBe(0);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(woken).toBe(1);
    expect(ledger.committedThrough()).toBe(120);
  });

  it('after a round of many partitions the next waits longer (commitDelay: 0.1 ms a partition, up to 100 ms)', async () => {
    const { ledger, channel, answerAll } = ledgerFixture({ partitions: 230 });
    for (let p = 0; p < 230; p++) ledger.finish(T, p, '0');
    await vi.advanceTimersByTimeAsync(5);
    await answerAll();
    const before = channel.sent.length;
    ledger.finish(T, 0, '1');
    await vi.advanceTimersByTimeAsync(22);
    expect(channel.sent).toHaveLength(before);
    await vi.advanceTimersByTimeAsync(1);
    expect(channel.sent).toHaveLength(before + 1);
  });

  it('a partition no longer assigned is left out of the round; a forgotten one has nothing to commit', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 3 });
    for (let p = 0; p < 3; p++) ledger.finish(T, p, '0');
    channel.unassigned.add(key(1));
    channel.progress.forget(key(2));
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[0]]);
  });
});

describe('CommitLedger: holds (a transaction\'s offsets of a partition are the last stored until it ends)', () => {
  it('a held partition stays out of the rounds, dirty, and is committed right after its release', async () => {
    const { ledger, channel, answerAll } = ledgerFixture({ partitions: 2 });
    const { release } = await ledger.hold([key(0)], 60_000);
    ledger.finish(T, 0, '0');
    ledger.finish(T, 1, '0');
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[1]]);
    await answerAll();
    ledger.finish(T, 0, '1');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.sent).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(1); // the hold's own: with only the held partition dirty, no round waits to start (none every 5 ms)
    release();
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.slice(1).map((r) => r.map(readable))).toEqual([[{ partition: 0, offset: '2', above: [] }]]);
  });

  it('waits for a request out that names the partition; one naming others only does not delay it', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 2 });
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.out).toHaveLength(1);
    let heldOne = false;
    void ledger.hold([key(0)], 60_000).then(() => (heldOne = true));
    let heldOther = false;
    void ledger.hold([key(1)], 60_000).then(() => (heldOther = true));
    await vi.advanceTimersByTimeAsync(0);
    expect([heldOne, heldOther]).toEqual([false, true]);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(heldOne).toBe(true);
  });

  it('a second hold of a partition (another transaction) waits for the first one\'s release; a release called twice counts once', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 2 });
    const first = await ledger.hold([key(0)], 60_000);
    let second: Hold | undefined;
    void ledger.hold([key(1), key(0)], 60_000).then((hold) => (second = hold));
    ledger.finish(T, 0, '0');
    ledger.finish(T, 1, '0');
    await vi.advanceTimersByTimeAsync(5);
    expect(second).toBeUndefined();
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[1]]); // the second holds nothing while it waits
    channel.out[0]!.answer();
    first.release();
    first.release();
    await vi.advanceTimersByTimeAsync(100);
    expect([first.held, second?.held]).toEqual([false, true]);
    expect(channel.sent).toHaveLength(1);
    second!.release();
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.slice(1).map((r) => r.map((c) => c.partition))).toEqual([[0]]);
  });

  it('a partition a committed transaction named at its commit point needs no round of its own; at another point it does', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 2 });
    for (const p of [0, 1]) {
      ledger.finish(T, p, '0');
      ledger.finish(T, p, '2');
    }
    ledger.committedElsewhere(key(0), { offset: '1', metadata: ledger.progressAt(key(0))!.commitPoint().metadata });
    ledger.committedElsewhere(key(1), { offset: '1', metadata: '' }); // the transaction named less than the ledger finished
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent.map((r) => r.map(readable))).toEqual([[{ partition: 1, offset: '1', above: ['2'] }]]);
  });

  it('a hold never released (a transaction whose end never came) lets go by itself after maxMs', async () => {
    const { ledger, channel } = ledgerFixture();
    const hold = await ledger.hold([key(0)], 2_000);
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(1_999);
    expect(channel.sent).toHaveLength(0);
    expect(hold.held).toBe(true);
    await vi.advanceTimersByTimeAsync(6);
    expect(hold.held).toBe(false);
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[0]]);
  });
});

describe('CommitLedger: tickets', () => {
  it('each completion gets the next ticket; committedThrough reaches those a round took once it is answered', async () => {
    const { ledger, answerAll } = ledgerFixture({ partitions: 2 });
    const first = ledger.finish(T, 0, '0');
    const second = ledger.finish(T, 1, '0');
    expect([first, second]).toEqual([1, 2]);
    expect(ledger.committedThrough()).toBe(0);
    await vi.advanceTimersByTimeAsync(5); // the round takes 1 and 2
    const third = ledger.finish(T, 0, '1');
    await answerAll();
    expect(ledger.committedThrough()).toBe(second);
    await vi.advanceTimersByTimeAsync(5);
    await answerAll();
    expect(ledger.committedThrough()).toBe(third);
  });

  it('a completion of a partition not tracked (not this member\'s) gets ticket 0: nothing to wait for', () => {
    const { ledger, finishedKeys } = ledgerFixture();
    ledger.finish(T, 0, '1'); // a tracked one waits for a round: committedThrough stays below it
    expect(ledger.finish('other', 0, '7')).toBe(0);
    expect(ledger.committedThrough()).toBe(0);
    expect(finishedKeys).toEqual([`0:${T}@1`, '0:other@7']); // the stream still stops counting it as handed over
  });

  it('a partition that goes takes its completions with it: with nothing dirty, every ticket counts as committed', async () => {
    const { ledger, channel } = ledgerFixture();
    const ticket = ledger.finish(T, 0, '0');
    expect(ledger.committedThrough()).toBeLessThan(ticket);
    channel.progress.forget(key(0));
    expect(ledger.committedThrough()).toBe(ticket);
  });

  it('whenCommitted calls back once, after the next round is answered or failed, or after the next join', async () => {
    const { ledger, channel } = ledgerFixture();
    const calls: string[] = [];
    ledger.whenCommitted(() => calls.push('answered'));
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    ledger.whenCommitted(() => calls.push('failed'));
    ledger.finish(T, 0, '1');
    await vi.advanceTimersByTimeAsync(5);
    channel.out[0]!.fail();
    await vi.advanceTimersByTimeAsync(0);
    ledger.whenCommitted(() => calls.push('joined'));
    ledger.joined();
    expect(calls).toEqual(['answered', 'failed', 'joined']);
  });
});

describe('CommitLedger: commitSoon', () => {
  it('starts the round at once instead of after its delay; while one is out, the next right after it', async () => {
    const { ledger, channel, answerAll } = ledgerFixture({ commitDelayMs: 60_000 });
    ledger.commitSoon(); // nothing finished: nothing to do
    expect(channel.sent).toHaveLength(0);
    ledger.finish(T, 0, '0');
    ledger.commitSoon();
    await vi.advanceTimersByTimeAsync(0);
    expect(channel.sent).toHaveLength(1);
    ledger.finish(T, 0, '1');
    ledger.commitSoon();
    await answerAll();
    await vi.advanceTimersByTimeAsync(0);
    expect(channel.sent.map((r) => r.map(readable))).toEqual([[{ partition: 0, offset: '1', above: [] }], [{ partition: 0, offset: '2', above: [] }]]);
  });
});

describe('CommitLedger: membership', () => {
  it('starts no round while not a member; the join commits what waits', async () => {
    const { ledger, channel } = ledgerFixture();
    channel.member = false;
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.sent).toHaveLength(0);
    channel.member = true;
    ledger.joined();
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent).toHaveLength(1);
  });

  it('a round with no consumer running commits nothing and ends', async () => {
    const { ledger, channel } = ledgerFixture();
    channel.running = false;
    let woken = 0;
    ledger.whenCommitted(() => (woken += 1));
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    expect(channel.sent).toHaveLength(0);
    expect(woken).toBe(1);
  });

  it('stop(): no round starts by itself any more', async () => {
    const { ledger, channel } = ledgerFixture();
    ledger.finish(T, 0, '0');
    ledger.stop();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(channel.sent).toHaveLength(0);
  });
});

describe('CommitLedger: failed rounds', () => {
  it.each([
    ['refused by the broker', (r: { fail(): void }) => r.fail()],
    ['returned without the broker\'s acknowledgement (kafkajs\'s runner not running)', (r: { returnUnacknowledged(): void }) => r.returnUnacknowledged()],
  ])('a round %s: commits count as stalled, the partitions stay dirty and go again after commitEveryMs', async (_what, settle) => {
    const { ledger, channel } = ledgerFixture();
    const ticket = ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    settle(channel.out[0]!);
    await vi.advanceTimersByTimeAsync(0);
    expect(ledger.commitsStalled()).toBe(true);
    expect(ledger.committedThrough()).toBeLessThan(ticket);
    await vi.advanceTimersByTimeAsync(99);
    expect(channel.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(channel.sent.map((r) => r.map(readable))).toEqual([[{ partition: 0, offset: '1', above: [] }], [{ partition: 0, offset: '1', above: [] }]]);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(ledger.commitsStalled()).toBe(false);
    expect(ledger.committedThrough()).toBe(ticket);
  });
});

describe('CommitLedger: the stall rule over time', () => {
  it.each([
    ['nothing finished waits', 'idle', 10_000, false],
    ['a request out 200 ms (overdue after 200 before any answer)', 'out', 200, false],
    ['a request out 201 ms', 'out', 201, true],
    ['finished records waiting 1 s with no member to commit them', 'no member', 1_000, false],
    ['finished records waiting 1.001 s with no member', 'no member', 1_001, true],
  ])('%s: stalled %s', async (_what, state, waitedMs, expected) => {
    const { ledger, channel } = ledgerFixture({ commitDelayMs: 0 });
    if (state === 'no member') channel.member = false;
    if (state !== 'idle') ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(0);
    if (state === 'out') expect(channel.out).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(waitedMs);
    expect(ledger.commitsStalled()).toBe(expected);
  });
});

describe('CommitLedger: flush', () => {
  it('waits for the round out, then commits what finished since, until done while still a member', async () => {
    const { ledger, channel } = ledgerFixture({ partitions: 2 });
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    ledger.finish(T, 1, '0');
    let flushed = false;
    void ledger.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(channel.sent).toHaveLength(1); // none beside the round out
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(channel.sent.map((r) => r.map((c) => c.partition))).toEqual([[0], [1]]);
    channel.out[0]!.fail(); // retriable: again after 200 ms
    await vi.advanceTimersByTimeAsync(200);
    expect(channel.sent).toHaveLength(3);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed).toBe(true);
    expect(ledger.committedThrough()).toBe(2);
  });

  it('gives up on the round out after a second (stuck in a rebalance) and commits beside nothing', async () => {
    const { ledger, channel } = ledgerFixture();
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    let flushed = false;
    void ledger.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(channel.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(channel.sent).toHaveLength(2);
    channel.out[1]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed).toBe(true);
  });

  it('stops trying once no longer a member', async () => {
    const { ledger, channel } = ledgerFixture();
    ledger.finish(T, 0, '0');
    await vi.advanceTimersByTimeAsync(5);
    channel.out[0]!.fail();
    await vi.advanceTimersByTimeAsync(0);
    let flushed = false;
    void ledger.flush().then(() => (flushed = true));
    await vi.advanceTimersByTimeAsync(0);
    channel.member = false;
    channel.out.at(-1)!.fail();
    await vi.advanceTimersByTimeAsync(0);
    expect(flushed).toBe(true);
    expect(ledger.commitsStalled()).toBe(true);
  });
});
