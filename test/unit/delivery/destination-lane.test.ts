import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import pino from 'pino';
import type { Logger } from 'pino';
import { GroupFencedError, PartitionProgress } from '../../../src/kafka/index.js';
import { CommitLedger } from '../../../src/delivery/commit-ledger.js';
import type { InboundRecord } from '../../../src/kafka/index.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from '../../../src/delivery/deliver-event.js';
import { DestinationLane, fullness, laneUncommittedBound } from '../../../src/delivery/destination-lane.js';
import { CommitAccount } from '../../../src/delivery/commit-account.js';
import type { PreparedDestination } from '../../../src/delivery/destination-settings.js';
import { RatePace } from '../../../src/delivery/rate-pace.js';
import { RetryTierWait } from '../../../src/delivery/retry-tier-wait.js';
import { UrlCircuits } from '../../../src/delivery/url-circuits.js';
import { webhookTarget } from '../../../src/delivery/http-sender.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { fakeCommitChannel } from '../../support/commit-channel.js';

describe('fullness', () => {
  it.each([
    [0, 8, 'resume'],
    [6, 8, 'resume'],
    [7, 8, 'keep'],
    [8, 8, 'pause'],
    [20, 8, 'pause'],
  ])('%d queued of %d → %s', (queued, bound, expected) => {
    expect(fullness(queued, bound)).toBe(expected);
  });
});

const MAIN = 'deliveries.d';
const RETRY = 'deliveries.d.retry.1m';

function record(topic: string, partition: number, offset: number, dueAtMs?: number, key: string | null = null): InboundRecord {
  const headers: Record<string, string> = { 'source-id': 'web', 'message-id': `m-${offset}`, attempt: dueAtMs === undefined ? '0' : '1' };
  if (dueAtMs !== undefined) headers['due-at'] = String(dueAtMs);
  return { topic, partition, offset: String(offset), key: key === null ? null : Buffer.from(key), value: Buffer.from('{}'), headers, timestamp: String(Date.now()) };
}

/**
 * A lane with a fake stream (its fetch side), a real commit ledger whose commit requests
 * the test answers (test/support/commit-channel.ts), and fake deliveries that finish
 * when the test says. The ledger tracks partition 0 of both topics and partition 1 of
 * the main one from offset 0; a round starts only when the lane asks for one at once
 * (commitSoon at half its bound), or a minute after a completion.
 */
function laneFixture(options: {
  concurrency: number;
  queueBound: number;
  uncommittedBound?: number;
  rateLimit?: { requestsPerSecond: number; burst: number };
  batch?: { maxEvents: number; maxBytes: number; maxWaitMs: number };
  ordered?: boolean;
  /** Real circuits (with `targets` in the settings); else every URL lets every request through. */
  circuits?: UrlCircuits;
  targets?: PreparedDestination['targets'];
  logger?: Logger;
}) {
  const log: string[] = [];
  const pending = new Map<string, { resolve: (result?: unknown) => void; reject: (e: unknown) => void; size: number }>();
  const started: string[] = [];
  const channel = fakeCommitChannel((key, offset) => log.push(`done ${key.slice(key.indexOf(':') + 1)}/${key.slice(0, key.indexOf(':'))}@${offset}`));
  const ledger = new CommitLedger({ groupId: 'g', commitEveryMs: 100, commitDelayMs: 60_000 }, channel, silentLogger());
  for (const key of [`0:${MAIN}`, `1:${MAIN}`, `0:${RETRY}`]) channel.progress.track(key, new PartitionProgress('0', null));
  /** The commit requests out answered, and the rounds they asked for at once after them, until none is out. */
  const commitLands = async () => {
    while (channel.out.length > 0) {
      for (const request of [...channel.out]) request.answer();
      await vi.advanceTimersByTimeAsync(0);
    }
  };
  const settings = { rateLimit: options.rateLimit, batch: options.batch, ordered: options.ordered ?? false, targets: options.targets ?? [] } as unknown as PreparedDestination;
  const circuits =
    options.circuits ?? ({ admit: () => ({ send: 1, keep: 1, probe: 0, skipped: 0, breakers: [] }), abandon: () => undefined, allOpenUntil: () => undefined } as unknown as UrlCircuits);
  const lane = new DestinationLane({
    destinationId: 'd',
    concurrency: options.concurrency,
    queueBound: options.queueBound,
    settings: () => settings,
    circuits,
    pace: new RatePace(60_000),
    tierWait: new RetryTierWait({ main: MAIN, retries: [{ tier: { name: '1m', ms: 60_000 }, topic: RETRY, leftover: false }], dlq: 'dlq' }, 600_000),
    events: {
      deliver: (job: DeliveryJob) => {
        const id = `${job.record.topic}/${job.record.partition}@${job.record.offset}`;
        started.push(id);
        return new Promise<DeliveryResult | void>((resolve, reject) => pending.set(id, { resolve: (result) => resolve(result as DeliveryResult | undefined), reject, size: 1 }));
      },
      deliverBatch: (job: BatchJob) => {
        const id = `batch ${job.events.map(({ record: r }) => `${r.topic}/${r.partition}@${r.offset}`).join(' ')}`;
        started.push(id);
        return new Promise<PromiseSettledResult<DeliveryResult>[]>((resolve, reject) =>
          pending.set(id, { resolve: (result) => resolve(job.events.map(() => ({ status: 'fulfilled', value: (result ?? 'delivered') as DeliveryResult }))), reject, size: job.events.length }),
        );
      },
    },
    stream: {
      pause: (topic, partition) => log.push(`pause ${topic}/${partition}`),
      resume: (topic, partition) => log.push(`resume ${topic}/${partition}`),
      release: (topic, partition, offset) => log.push(`release ${topic}/${partition}@${offset}`),
    },
    commits: new CommitAccount(ledger, options.uncommittedBound ?? laneUncommittedBound(options.concurrency)),
    logger: options.logger ?? silentLogger(),
    writeRetryMs: 1_000,
  });
  /** `held`: an ordered destination's attempt failed, its next one due in a second. */
  const finish = async (id: string, outcome: 'ok' | 'write failed' | 'write fenced' | 'held' = 'ok') => {
    const p = pending.get(id)!;
    pending.delete(id);
    if (outcome === 'ok') p.resolve();
    else if (outcome === 'held') p.resolve({ held: { attemptsMade: 1, firstAttemptAtMs: Date.now(), dueAtMs: Date.now() + 1_000, receivedAtMs: undefined, traceparent: undefined, problems: [] } });
    else if (outcome === 'write fenced') p.reject(new GroupFencedError(22, { groupId: 'g', generationId: 3, memberId: 'm', groupInstanceId: null, coordinator: 1 }));
    else p.reject(new Error('broker down'));
    await vi.advanceTimersByTimeAsync(0);
  };
  return { lane, log, started, finish, ledger, channel, commitLands, settings: settings as { batch?: unknown } };
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
    const { lane, started, finish, channel, commitLands } = laneFixture({ concurrency: 2, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1)]);
    expect(started).toEqual([`${MAIN}/0@1`]);
    await finish(`${MAIN}/0@1`);
    // The commit of 1 fails (the broker away): commits are stalled.
    await vi.advanceTimersByTimeAsync(60_000);
    channel.out[0]!.fail();
    await vi.advanceTimersByTimeAsync(0);
    lane.accept([record(MAIN, 0, 2), record(MAIN, 0, 3)]);
    await vi.advanceTimersByTimeAsync(900); // the next try (after commitEveryMs) goes unanswered
    expect(channel.sent).toHaveLength(2);
    expect(started).toEqual([`${MAIN}/0@1`]);
    expect(lane.queuedCount).toBe(2);
    await commitLands();
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/0@2`, `${MAIN}/0@3`]);
  });

  it('looks again by itself a second later when no commit answer wakes it (the partition that waited went in a rebalance)', async () => {
    const { lane, started, finish, channel } = laneFixture({ concurrency: 1, queueBound: 100 });
    lane.accept([record(MAIN, 0, 1)]);
    await finish(`${MAIN}/0@1`);
    await vi.advanceTimersByTimeAsync(60_000);
    channel.out[0]!.fail();
    await vi.advanceTimersByTimeAsync(0);
    lane.accept([record(MAIN, 0, 2)]);
    expect(started).toEqual([`${MAIN}/0@1`]);
    // The partition is no longer this member's: nothing waits for a commit any more, and no round answers.
    channel.progress.forget(`0:${MAIN}`);
    channel.member = false;
    await vi.advanceTimersByTimeAsync(999);
    expect(started).toEqual([`${MAIN}/0@1`]);
    // At 1,000 ms it looks again (its pump runs at the end of that turn: a fake immediate, one more fake millisecond).
    await vi.advanceTimersByTimeAsync(2);
    expect(started).toEqual([`${MAIN}/0@1`, `${MAIN}/0@2`]);
    await finish(`${MAIN}/0@2`);
  });

  it('holds at its bound of finished deliveries not yet committed, asks for a commit early at half, and goes on once they are committed', async () => {
    const { lane, started, finish, channel, commitLands } = laneFixture({ concurrency: 2, queueBound: 100, uncommittedBound: 4 });
    lane.accept([1, 2, 3, 4, 5, 6, 7].map((o) => record(MAIN, 0, o)));
    await finish(`${MAIN}/0@1`);
    expect(channel.sent).toHaveLength(0); // a round waits a minute unless asked for at once
    await finish(`${MAIN}/0@2`);
    expect(channel.sent).toHaveLength(1); // 2 of 4 wait for a commit: asked for at once
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
    // The round asked for at 6 (half the bound) took 5 and 6; 7 and 8 wait for the next: one more may start.
    expect(channel.out).toHaveLength(1);
    channel.out[0]!.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(started.at(-1)).toBe(`${MAIN}/0@10`);
  });

  it('with every URL\'s circuit open, attempts nothing and pauses its partitions; after the cool-down a probe goes, and its success lets the rest go', async () => {
    const policy = { windowMs: 10_000, minAttempts: 2, failureRatio: 0.5, unanswered: 5, coolDownMs: 5_000, maxCoolDownMs: 20_000, probes: 1, trackedLeaseMs: 30_000 };
    const circuits = new UrlCircuits({ destinationId: 'd', policy: () => policy, gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const targets = [{ target: webhookTarget('https://a.test/'), headers: {} }];
    const { lane, log, started, finish } = laneFixture({ concurrency: 4, queueBound: 100, circuits, targets });
    // Two failed requests open the circuit (the lane's deliveries are fakes: the test feeds the circuit their answers).
    const e503 = { outcome: '5xx' as const, verdict: 'retryable' as const, status: 503, reason: '503 Service Unavailable', durationMs: 1 };
    const settingsNow = { targets, printableUrls: [], ordered: false, id: 'd' } as PreparedDestination;
    for (let i = 0; i < 2; i++) circuits.settle(circuits.admit(settingsNow, Date.now()), [{ index: 0, result: e503 }], Date.now());
    expect(circuits.statuses()[0]!.state).toBe('open');

    lane.accept([record(MAIN, 0, 1), record(MAIN, 0, 2)]);
    lane.accept([record(MAIN, 1, 7)]);
    expect(started).toEqual([]);
    expect(lane.waitingForCircuits).toBe(true);
    expect(log).toEqual([`pause ${MAIN}/0`, `pause ${MAIN}/1`]);
    await vi.advanceTimersByTimeAsync(4_990);
    expect(started).toEqual([]);
    // Cool-down over: one probe (the head of a partition); the others wait for its answer, the partitions paused again.
    await vi.advanceTimersByTimeAsync(20);
    expect(started).toHaveLength(1);
    expect(lane.waitingForCircuits).toBe(true);
    expect(log.slice(2)).toEqual([`resume ${MAIN}/0`, `resume ${MAIN}/1`, `pause ${MAIN}/0`, `pause ${MAIN}/1`]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toHaveLength(1);
    // The probe answers: the circuit closes (the fake delivery's answer is fed to it here), the lane goes on.
    const [probe] = started;
    circuits.settle({ send: 1, keep: 1, probe: 1, skipped: 0, breakers: (circuits as unknown as { breakers: never[] }).breakers }, [{ index: 0, result: { outcome: '2xx', verdict: 'delivered', status: 200, reason: '200 OK', durationMs: 1 } }], Date.now());
    await finish(probe!);
    expect(started).toHaveLength(3);
    expect(lane.waitingForCircuits).toBe(false);
    expect(log.slice(6)).toEqual([`done ${probe!.slice(0, probe!.indexOf('@'))}@${probe!.slice(probe!.indexOf('@') + 1)}`, `resume ${MAIN}/0`, `resume ${MAIN}/1`]);
  });

  it('with every URL\'s circuit open, an event whose retry window ended goes on (to its dead letter, no request) while one still in its window waits', async () => {
    const policy = { windowMs: 10_000, minAttempts: 1, failureRatio: 0.5, unanswered: 5, coolDownMs: 5_000, maxCoolDownMs: 20_000, probes: 1, trackedLeaseMs: 30_000 };
    const circuits = new UrlCircuits({ destinationId: 'd', policy: () => policy, gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const targets = [{ target: webhookTarget('https://a.test/'), headers: {} }];
    const { lane, started } = laneFixture({ concurrency: 4, queueBound: 100, circuits, targets });
    const e503 = { outcome: '5xx' as const, verdict: 'retryable' as const, status: 503, reason: '503 Service Unavailable', durationMs: 1 };
    circuits.settle(circuits.admit({ targets, printableUrls: [], ordered: false, id: 'd' } as PreparedDestination, Date.now()), [{ index: 0, result: e503 }], Date.now());
    // The fixture's window is 10 min.
    const inWindow = record(RETRY, 0, 3, Date.now() - 1);
    inWindow.headers!['first-attempt-at'] = new Date(Date.now() - 1_000).toISOString();
    const ended = record(MAIN, 1, 4);
    ended.headers!['first-attempt-at'] = new Date(Date.now() - 600_001).toISOString();
    const fresh = record(MAIN, 1, 5);
    lane.accept([inWindow]);
    lane.accept([ended, fresh]);
    expect(started).toEqual([`${MAIN}/1@4`]);
    expect(lane.waitingForCircuits).toBe(true);
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

  it('a write refused by a rebalance is logged as a warning, any other failed write as an error', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) });
    const { lane, finish } = laneFixture({ concurrency: 4, queueBound: 100, logger });
    lane.accept([record(MAIN, 0, 1)]);
    await finish(`${MAIN}/0@1`, 'write fenced');
    await vi.advanceTimersByTimeAsync(1_000);
    await finish(`${MAIN}/0@1`, 'write failed');
    expect(lines.filter((l) => l.msg.startsWith('could not write a retry')).map((l) => pino.levels.labels[l.level])).toEqual(['warn', 'error']);
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

  it('ordering user: one event of a user at a time, the next parked until it is done; other users go on', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 8, queueBound: 100, ordered: true });
    lane.accept([record(MAIN, 0, 0, undefined, 'a'), record(MAIN, 0, 1, undefined, 'b'), record(MAIN, 0, 2, undefined, 'a'), record(MAIN, 0, 3, undefined, 'b'), record(MAIN, 0, 4, undefined, 'c')]);
    expect(started).toEqual([`${MAIN}/0@0`, `${MAIN}/0@1`, `${MAIN}/0@4`]);
    expect(lane.parkedCount).toBe(2);
    await finish(`${MAIN}/0@1`);
    expect(started.slice(3)).toEqual([`${MAIN}/0@3`]);
    await finish(`${MAIN}/0@0`);
    expect(started.slice(4)).toEqual([`${MAIN}/0@2`]);
    expect(log).toEqual([`done ${MAIN}/0@1`, `done ${MAIN}/0@0`]);
  });

  it("ordering user: a failed event waits in the lane, unfinished, holding back only its user's later events", async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 8, queueBound: 100, ordered: true });
    lane.accept([record(MAIN, 0, 0, undefined, 'a'), record(MAIN, 0, 1, undefined, 'a'), record(MAIN, 0, 2, undefined, 'b')]);
    await finish(`${MAIN}/0@0`, 'held');
    await finish(`${MAIN}/0@2`);
    expect(started).toEqual([`${MAIN}/0@0`, `${MAIN}/0@2`]);
    expect(log).toEqual([`done ${MAIN}/0@2`]); // 0 is not finished: the commit stays below it
    await vi.advanceTimersByTimeAsync(999);
    expect(started).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(started).toEqual([`${MAIN}/0@0`, `${MAIN}/0@2`, `${MAIN}/0@0`]);
    await finish(`${MAIN}/0@0`);
    expect(started.at(-1)).toBe(`${MAIN}/0@1`);
    expect(log).toEqual([`done ${MAIN}/0@2`, `done ${MAIN}/0@0`]);
  });

  it('ordering user: a revoked partition drops what its users had parked and held (the next owner reads it again)', async () => {
    const { lane, started, finish } = laneFixture({ concurrency: 8, queueBound: 100, ordered: true });
    lane.accept([record(MAIN, 0, 0, undefined, 'a'), record(MAIN, 0, 1, undefined, 'a')]);
    await finish(`${MAIN}/0@0`, 'held');
    expect(lane.revoke(MAIN, 0)).toEqual([]);
    expect(lane.parkedCount).toBe(0);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started).toEqual([`${MAIN}/0@0`]);
  });

  it('batch: sends a full batch at once on one permit, a batch not full maxWait after its first event', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 1, queueBound: 100, batch: { maxEvents: 3, maxBytes: 1_000, maxWaitMs: 100 } });
    lane.accept([0, 1, 2, 3, 4].map((offset) => record(MAIN, 0, offset)));
    lane.accept([record(MAIN, 1, 0)]);
    expect(started).toEqual([`batch ${MAIN}/0@0 ${MAIN}/0@1 ${MAIN}/0@2`]);
    // The next batch is full and waits for the one permit.
    await finish(started[0]!);
    expect(log).toEqual([`done ${MAIN}/0@0`, `done ${MAIN}/0@1`, `done ${MAIN}/0@2`]);
    expect(started[1]).toBe(`batch ${MAIN}/0@3 ${MAIN}/0@4 ${MAIN}/1@0`);
    await finish(started[1]!);
    // One more: not full, so the batch waits for more until maxWait after its first event.
    lane.accept([record(MAIN, 1, 1)]);
    await vi.advanceTimersByTimeAsync(99);
    expect(started).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(started[2]).toBe(`batch ${MAIN}/1@1`);
  });

  it('batch with ordering user: at most one event of a user in a batch, the next in a later one', async () => {
    const { lane, started, finish } = laneFixture({ concurrency: 4, queueBound: 100, ordered: true, batch: { maxEvents: 10, maxBytes: 1_000, maxWaitMs: 100 } });
    lane.accept([record(MAIN, 0, 0, undefined, 'a'), record(MAIN, 0, 1, undefined, 'a'), record(MAIN, 0, 2, undefined, 'b')]);
    await vi.advanceTimersByTimeAsync(100);
    expect(started).toEqual([`batch ${MAIN}/0@0 ${MAIN}/0@2`]);
    await finish(started[0]!);
    await vi.advanceTimersByTimeAsync(100);
    expect(started[1]).toBe(`batch ${MAIN}/0@1`);
  });

  it('batch taken out of the config with a batch open: its events go one by one, first', async () => {
    const { lane, started, settings } = laneFixture({ concurrency: 4, queueBound: 100, batch: { maxEvents: 10, maxBytes: 1_000, maxWaitMs: 100 } });
    lane.accept([record(MAIN, 0, 0), record(MAIN, 0, 1)]);
    expect(started).toEqual([]);
    delete settings.batch;
    lane.accept([record(MAIN, 0, 2)]);
    expect(started).toEqual([`${MAIN}/0@0`, `${MAIN}/0@1`, `${MAIN}/0@2`]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(started).toHaveLength(3);
  });

  it('batch: a revoked partition takes its events out of the open batch (not running: the stream hands them over again)', async () => {
    const { lane, started } = laneFixture({ concurrency: 4, queueBound: 100, batch: { maxEvents: 10, maxBytes: 1_000, maxWaitMs: 100 } });
    lane.accept([record(MAIN, 0, 0), record(MAIN, 0, 1)]);
    lane.accept([record(MAIN, 1, 0)]);
    expect(lane.revoke(MAIN, 0)).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(started).toEqual([`batch ${MAIN}/1@0`]);
  });

  it('ordering user: an event in flight when its partition went, answered with a retry, is given back to the stream', async () => {
    const { lane, log, started, finish } = laneFixture({ concurrency: 4, queueBound: 100, ordered: true });
    lane.accept([record(MAIN, 0, 0, undefined, 'a'), record(MAIN, 0, 1, undefined, 'a')]);
    expect(lane.revoke(MAIN, 0)).toEqual(['0']);
    await finish(`${MAIN}/0@0`, 'held');
    expect(log).toEqual([`release ${MAIN}/0@0`]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started).toEqual([`${MAIN}/0@0`]);
  });

  it('an event waiting for its rate-limit token is not running: a revoke gives it back to the stream', async () => {
    const { lane, started } = laneFixture({ concurrency: 4, queueBound: 100, rateLimit: { requestsPerSecond: 1, burst: 1 } });
    lane.accept([record(MAIN, 0, 0), record(MAIN, 0, 1)]);
    expect(started).toEqual([`${MAIN}/0@0`]);
    expect(lane.revoke(MAIN, 0)).toEqual(['0']);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(started).toEqual([`${MAIN}/0@0`]);
  });
});

