import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { InboundRecord } from '../../../src/kafka/index.js';
import type { DeliveryJob } from '../../../src/delivery/deliver-event.js';
import { DestinationLane, fullness } from '../../../src/delivery/destination-lane.js';
import type { PreparedDestination } from '../../../src/delivery/destination-settings.js';
import { RatePace } from '../../../src/delivery/rate-pace.js';
import { RetryTierWait } from '../../../src/delivery/retry-tier-wait.js';
import type { UrlCircuits } from '../../../src/delivery/url-circuits.js';
import { silentLogger } from '../../../src/observability/logger.js';

describe('fullness', () => {
  it.each([
    [0, 8, 'room'],
    [6, 8, 'room'],
    [7, 8, 'hold'],
    [8, 8, 'full'],
    [20, 8, 'full'],
  ])('%d queued of %d → %s', (queued, bound, expected) => {
    expect(fullness(queued, bound)).toBe(expected);
  });
});

const MAIN = 'deliveries.d';
const RETRY = 'deliveries.d.retry.1m';

function record(topic: string, partition: number, offset: number, dueAtMs?: number): InboundRecord {
  const headers: Record<string, string> = { 'source-id': 'web', 'message-id': `m-${offset}`, attempt: dueAtMs === undefined ? '0' : '1' };
  if (dueAtMs !== undefined) headers['due-at'] = String(dueAtMs);
  return { topic, partition, offset: String(offset), key: null, value: Buffer.from('{}'), headers, timestamp: String(Date.now()) };
}

/** A lane with a fake stream and fake deliveries that finish when the test says. */
function laneFixture(options: { concurrency: number; queueBound: number; uncommittedBound?: number; rateLimit?: { requestsPerSecond: number; burst: number } }) {
  const log: string[] = [];
  const pending = new Map<string, { resolve: () => void; reject: (e: unknown) => void }>();
  const started: string[] = [];
  // A stream's commit side: tickets handed out, the ticket committed through, who waits.
  const commits = { stalled: false, ticket: 0, through: 0, soon: 0, waiters: [] as (() => void)[] };
  /** A commit answered, of every completion so far or of those up to ticket `through`. */
  const commitLands = async (through = commits.ticket) => {
    commits.through = through;
    for (const waiter of commits.waiters.splice(0)) waiter();
    await vi.advanceTimersByTimeAsync(0);
  };
  const settings = { rateLimit: options.rateLimit } as unknown as PreparedDestination;
  const circuits = { admit: () => ({ send: 1, keep: 1, probe: 0, skipped: 0, breakers: [] }), abandon: () => undefined } as unknown as UrlCircuits;
  const lane = new DestinationLane({
    destinationId: 'd',
    concurrency: options.concurrency,
    queueBound: options.queueBound,
    ...(options.uncommittedBound !== undefined ? { uncommittedBound: options.uncommittedBound } : {}),
    settings: () => settings,
    circuits,
    pace: new RatePace(60_000),
    tierWait: new RetryTierWait({ main: MAIN, retries: [{ tier: { name: '1m', ms: 60_000 }, topic: RETRY, leftover: false }], dlq: 'dlq' }, 600_000),
    events: {
      deliver: (job: DeliveryJob) => {
        const id = `${job.record.topic}/${job.record.partition}@${job.record.offset}`;
        started.push(id);
        return new Promise<void>((resolve, reject) => pending.set(id, { resolve, reject }));
      },
    },
    stream: {
      pause: (topic, partition) => log.push(`pause ${topic}/${partition}`),
      resume: (topic, partition) => log.push(`resume ${topic}/${partition}`),
      markDone: (topic, partition, offset) => {
        log.push(`done ${topic}/${partition}@${offset}`);
        commits.ticket += 1;
        return commits.ticket;
      },
      release: (topic, partition, offset) => log.push(`release ${topic}/${partition}@${offset}`),
      commitsStalled: () => commits.stalled,
      committedThrough: () => commits.through,
      commitSoon: () => (commits.soon += 1),
      whenCommitted: (callback) => commits.waiters.push(callback),
    },
    logger: silentLogger(),
    writeRetryMs: 1_000,
  });
  const finish = async (id: string, outcome: 'ok' | 'write failed' = 'ok') => {
    const p = pending.get(id)!;
    pending.delete(id);
    if (outcome === 'ok') p.resolve();
    else p.reject(new Error('broker down'));
    await vi.advanceTimersByTimeAsync(0);
  };
  return { lane, log, started, finish, commits, commitLands };
}

describe('DestinationLane', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-05-01T12:00:00Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs at most `concurrency` at once, in offset order per partition, and marks each done as it finishes (any order)', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 2, queueBound: 100 });
    lane.accept([record(MAIN, 0, 5), record(MAIN, 0, 6), record(MAIN, 0, 7)]);
    expect(started).toEqual([`${MAIN}/0@5`, `${MAIN}/0@6`]);
    await finish(`${MAIN}/0@6`);
    expect(log).toEqual([`done ${MAIN}/0@6`]);
    expect(started).toEqual([`${MAIN}/0@5`, `${MAIN}/0@6`, `${MAIN}/0@7`]);
    await finish(`${MAIN}/0@5`);
    expect(log).toEqual([`done ${MAIN}/0@6`, `done ${MAIN}/0@5`]);
  });

  it('starts nothing while commits are stalled, and goes on once a commit is answered', async () => {
    const { lane, started, finish, commits, commitLands } = laneFixture({ concurrency: 2, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1)]);
    expect(started).toEqual([`${MAIN}/0@1`]);
    commits.stalled = true;
    lane.accept([record(MAIN, 0, 2), record(MAIN, 0, 3)]);
    await finish(`${MAIN}/0@1`);
    await vi.advanceTimersByTimeAsync(900);
    expect(started).toEqual([`${MAIN}/0@1`]);
    expect(lane.queuedCount).toBe(2);
    commits.stalled = false;
    await commitLands();
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/0@2`, `${MAIN}/0@3`]);
  });

  it('looks again by itself a second later when no commit answer wakes it', async () => {
    const { lane, started, finish, commits } = laneFixture({ concurrency: 1, queueBound: 100 });
    commits.stalled = true;
    lane.accept([record(MAIN, 0, 1)]);
    expect(started).toEqual([]);
    commits.stalled = false;
    await vi.advanceTimersByTimeAsync(999);
    expect(started).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(started).toEqual([`${MAIN}/0@1`]);
    await finish(`${MAIN}/0@1`);
  });

  it('holds at its bound of finished deliveries not yet committed, asks for a commit early at half, and goes on once they are committed', async () => {
    const { lane, started, finish, commits, commitLands } = laneFixture({ concurrency: 2, queueBound: 100, uncommittedBound: 4 });
    lane.accept([1, 2, 3, 4, 5, 6, 7].map((o) => record(MAIN, 0, o)));
    await finish(`${MAIN}/0@1`);
    expect(commits.soon).toBe(0);
    await finish(`${MAIN}/0@2`);
    expect(commits.soon).toBe(1); // 2 of 4 wait for a commit
    await finish(`${MAIN}/0@3`);
    await finish(`${MAIN}/0@4`);
    // 4 finished and not committed: 5 runs (started before the bound was reached), 6 and 7 wait with a permit free.
    expect(started).toEqual([1, 2, 3, 4, 5].map((o) => `${MAIN}/0@${o}`));
    await vi.advanceTimersByTimeAsync(500);
    expect(started).toHaveLength(5);
    await commitLands();
    expect(started).toEqual([1, 2, 3, 4, 5, 6].map((o) => `${MAIN}/0@${o}`));
    // A commit that covers only some of them lets the lane go on as far as the bound allows.
    lane.accept([8, 9, 10].map((o) => record(MAIN, 0, o)));
    for (const o of [5, 6, 7, 8]) await finish(`${MAIN}/0@${o}`);
    // 5, 6, 7 and 8 finished since the commit: 9 runs, 10 waits.
    expect(started.at(-1)).toBe(`${MAIN}/0@9`);
    await commitLands(commits.ticket - 3); // 5 committed; 6, 7 and 8 not: one more may start
    expect(started.at(-1)).toBe(`${MAIN}/0@10`);
  });

  it('takes turns between partitions, so none starves another', async () => {
    const { lane, started, finish } = laneFixture({ concurrency: 1, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1), record(MAIN, 0, 2)]);
    lane.accept([record(MAIN, 1, 1), record(MAIN, 1, 2)]);
    await finish(`${MAIN}/0@1`);
    await finish(started.at(-1)!);
    await finish(started.at(-1)!);
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/1@1`, `${MAIN}/0@2`, `${MAIN}/1@2`]);
  });

  it('pauses only its partitions with queued records when full, and resumes them at three quarters', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 1, queueBound: 8 });
    lane.accept([record(MAIN, 0, 0), record(MAIN, 0, 1), record(MAIN, 0, 2), record(MAIN, 0, 3), record(MAIN, 0, 4)]);
    expect(log).toEqual([]); // 1 running, 4 queued
    lane.accept([record(MAIN, 1, 0), record(MAIN, 1, 1), record(MAIN, 1, 2), record(MAIN, 1, 3)]);
    expect(lane.queuedCount).toBe(8);
    expect(log).toEqual([`pause ${MAIN}/0`, `pause ${MAIN}/1`]);
    await finish(started.at(-1)!); // 7 queued: between the marks, stays paused
    expect(log.filter((l) => l.startsWith('resume'))).toEqual([]);
    await finish(started.at(-1)!); // 6 queued: room
    expect(log.filter((l) => l.startsWith('resume')).sort()).toEqual([`resume ${MAIN}/0`, `resume ${MAIN}/1`]);
  });

  it('holds a retry partition whose head is not due (paused, nothing started), while its other partitions go on; starts it when due', async () => {
    const { lane, log, started } = laneFixture({ concurrency: 4, queueBound: 100 });
    lane.accept([record(RETRY, 0, 3, Date.now() + 5_000), record(RETRY, 0, 4, Date.now())]);
    lane.accept([record(MAIN, 0, 9)]);
    expect(started).toEqual([`${MAIN}/0@9`]);
    expect(log).toEqual([`pause ${RETRY}/0`]);
    await vi.advanceTimersByTimeAsync(4_900);
    expect(started).toEqual([`${MAIN}/0@9`]);
    await vi.advanceTimersByTimeAsync(200);
    expect(log).toEqual([`pause ${RETRY}/0`, `resume ${RETRY}/0`]);
    expect(started).toEqual([`${MAIN}/0@9`, `${RETRY}/0@3`, `${RETRY}/0@4`]);
  });

  it('a failed retry or dead-letter write leaves the record unfinished and attempts it again after a pause', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 4, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1)]);
    await finish(`${MAIN}/0@1`, 'write failed');
    expect(log).toEqual([`pause ${MAIN}/0`]);
    expect(lane.queuedCount).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/0@1`]);
    await finish(`${MAIN}/0@1`);
    expect(log).toEqual([`pause ${MAIN}/0`, `resume ${MAIN}/0`, `done ${MAIN}/0@1`]);
  });

  it('a rate limit holds the lane (its head waits for its token) and nothing else', async () => {
    const { lane, started, finish } = laneFixture({ concurrency: 8, queueBound: 100, rateLimit: { requestsPerSecond: 1, burst: 1 } });
    lane.accept([record(MAIN, 0, 1), record(MAIN, 0, 2)]);
    expect(started).toEqual([`${MAIN}/0@1`]);
    await vi.advanceTimersByTimeAsync(500);
    expect(started).toEqual([`${MAIN}/0@1`]);
    await vi.advanceTimersByTimeAsync(600);
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/0@2`]);
    await finish(`${MAIN}/0@1`);
    await finish(`${MAIN}/0@2`);
  });

  it('a write that fails after its partition was revoked gives the record back to the stream', async () => {
    const { lane, log, finish } = laneFixture({ concurrency: 1, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1)]);
    expect(lane.revoke(MAIN, 0)).toEqual(['1']);
    await finish(`${MAIN}/0@1`, 'write failed');
    expect(log).toEqual([`release ${MAIN}/0@1`]);
  });

  it('revoke drops what waits and returns what runs; stop waits for what runs', async () => {
    const { lane, started, finish } = laneFixture({ concurrency: 1, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1), record(MAIN, 0, 2), record(MAIN, 0, 3)]);
    expect(lane.revoke(MAIN, 0)).toEqual(['1']);
    expect(lane.queuedCount).toBe(0);
    expect(lane.revoke(MAIN, 7)).toEqual([]);
    let stopped = false;
    void lane.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    await finish(`${MAIN}/0@1`);
    expect(stopped).toBe(true);
    expect(started).toEqual([`${MAIN}/0@1`]);
  });
});
