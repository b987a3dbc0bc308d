// The carved lane (src/delivery/destination-lane.ts and its parts) against a verbatim
// copy of the lane before the carve (test/support/lane-original.ts): the same random
// scripts (records on several partitions and users, outcomes of every kind, circuits
// opening and closing, batch settings, rate limits, held retries, commit back-pressure,
// revokes, reloads, a stop) drive each under fake timers, and every action either takes
// that can be seen from outside is recorded with its time. The two records must be equal.
// LANE_DIFF_RUNS=20000 runs more scripts (300 by default, about 3 s). When the lane's
// behaviour is changed on purpose, this test and the copy go.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from 'pino';
import type { InboundRecord } from '../../../src/kafka/index.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from '../../../src/delivery/deliver-event.js';
import { DestinationLane } from '../../../src/delivery/destination-lane.js';
import type { LaneParts } from '../../../src/delivery/destination-lane.js';
import { CommitAccount } from '../../../src/delivery/commit-account.js';
import type { PreparedDestination } from '../../../src/delivery/destination-settings.js';
import { RatePace } from '../../../src/delivery/rate-pace.js';
import { RetryTierWait } from '../../../src/delivery/retry-tier-wait.js';
import type { Admitted, UrlCircuits } from '../../../src/delivery/url-circuits.js';
import { DestinationLane as OriginalLane } from '../../support/lane-original.js';

const MAIN = 'deliveries.d';
const RETRY = 'deliveries.d.retry.1m';
const PARTITIONS: [string, number][] = [
  [MAIN, 0],
  [MAIN, 1],
  [MAIN, 2],
  [RETRY, 0],
];
const WINDOW_MS = 600_000;
const START = Date.parse('2026-05-01T12:00:00Z');

type Outcome = 'ok' | 'held' | 'write-failed' | 'mixed';
type Op =
  | { op: 'accept'; p: number; n: number; keys: (string | null)[]; due: number; old: boolean; bytes: number }
  | { op: 'finish'; i: number; outcome: Outcome }
  | { op: 'advance'; ms: number }
  | { op: 'circuits'; state: 'open' | 'closed' | 'probe-fails' | 'probe-ok'; ms: number; urls: number }
  | { op: 'commits'; state: 'stall' | 'land' | 'unstall' }
  | { op: 'settings'; batch: { maxEvents: number; maxBytes: number; maxWaitMs: number } | undefined; rate: { requestsPerSecond: number; burst: number } | undefined }
  | { op: 'revoke'; p: number }
  | { op: 'wake' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('accept' as const),
      p: fc.nat(PARTITIONS.length - 1),
      n: fc.integer({ min: 1, max: 6 }),
      keys: fc.array(fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null, freq: 3 }), { minLength: 6, maxLength: 6 }),
      due: fc.constantFrom(-1_000, 0, 500, 3_000, 60_000),
      old: fc.boolean(),
      bytes: fc.integer({ min: 1, max: 40 }),
    }),
  },
  { weight: 8, arbitrary: fc.record({ op: fc.constant('finish' as const), i: fc.nat(20), outcome: fc.constantFrom<Outcome>('ok', 'ok', 'held', 'write-failed', 'mixed') }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.constantFrom(0, 1, 7, 60, 250, 1_000, 1_500, 5_000, 61_000) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('circuits' as const),
      state: fc.constantFrom('open' as const, 'closed' as const, 'probe-fails' as const, 'probe-ok' as const),
      ms: fc.constantFrom(10, 500, 3_000),
      urls: fc.integer({ min: 1, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('commits' as const), state: fc.constantFrom('stall' as const, 'land' as const, 'land' as const, 'land' as const, 'unstall' as const, 'unstall' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('settings' as const),
      batch: fc.option(fc.record({ maxEvents: fc.integer({ min: 1, max: 4 }), maxBytes: fc.integer({ min: 20, max: 120 }), maxWaitMs: fc.constantFrom(0, 100, 1_000) }), { nil: undefined }),
      rate: fc.option(fc.record({ requestsPerSecond: fc.constantFrom(1, 5, 50), burst: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), p: fc.nat(PARTITIONS.length - 1) }) },
  { weight: 1, arbitrary: fc.constant({ op: 'wake' as const }) },
);

interface Script {
  concurrency: number;
  queueBound: number;
  uncommittedBound: number;
  ordered: boolean;
  batch: { maxEvents: number; maxBytes: number; maxWaitMs: number } | undefined;
  rate: { requestsPerSecond: number; burst: number } | undefined;
  ops: Op[];
  /** Whether the destination leaves the config before the end (a paced request then given back). */
  leaves: number | undefined;
}

const scriptArb: fc.Arbitrary<Script> = fc.record({
  concurrency: fc.integer({ min: 1, max: 4 }),
  queueBound: fc.integer({ min: 2, max: 12 }),
  uncommittedBound: fc.integer({ min: 2, max: 10 }),
  ordered: fc.boolean(),
  batch: fc.option(fc.record({ maxEvents: fc.integer({ min: 1, max: 4 }), maxBytes: fc.integer({ min: 20, max: 120 }), maxWaitMs: fc.constantFrom(0, 100, 1_000) }), { nil: undefined }),
  rate: fc.option(fc.record({ requestsPerSecond: fc.constantFrom(1, 5, 50), burst: fc.integer({ min: 1, max: 3 }) }), { nil: undefined }),
  ops: fc.array(opArb, { minLength: 10, maxLength: 80, size: 'max' }),
  leaves: fc.option(fc.nat(60), { nil: undefined, freq: 4 }),
});

type Lane = Pick<DestinationLane, 'accept' | 'revoke' | 'wake' | 'stop' | 'queuedCount' | 'runningCount' | 'parkedCount' | 'waitingForCircuits'>;

/** Runs `script` on a lane made by `make` under fake timers; returns everything it did, with times. */
async function run(script: Script, make: (parts: LaneParts) => Lane): Promise<string[]> {
  vi.useFakeTimers({ now: START });
  const trace: string[] = [];
  const at = (line: string): void => {
    trace.push(`${Date.now() - START} ${line}`);
  };
  const pending: { id: string; events: number; resolve: (outcome: Outcome) => void; reject: () => void }[] = [];
  const settings = { rateLimit: script.rate, batch: script.batch, ordered: script.ordered, targets: [] } as unknown as PreparedDestination;
  let present = true;
  // Circuits: a fake whose every URL is open until `openUntil`; then one probe goes, whose outcome the script gives.
  let openUntil: number | undefined;
  let probeOut = false;
  let urls = 1;
  const circuits = {
    allOpenUntil: (_s: PreparedDestination, now: number) => {
      if (openUntil === undefined) return undefined;
      if (now < openUntil) return openUntil;
      return probeOut ? now + 1_000 : undefined;
    },
    admit: (_s: PreparedDestination, now: number): Admitted => {
      const probe = openUntil !== undefined && now >= openUntil && !probeOut;
      if (probe) probeOut = true;
      const send = probe ? 1 : openUntil === undefined ? (1 << urls) - 1 : 0;
      at(`admit send=${send} probe=${probe}`);
      return { send, keep: send, probe: probe ? 1 : 0, skipped: 0, breakers: [] } as unknown as Admitted;
    },
    abandon: (admitted: Admitted) => {
      at(`abandon send=${admitted.send}`);
      if (admitted.probe > 0) probeOut = false;
    },
  } as unknown as UrlCircuits;
  // Commits: tickets numbered in finish order; the script lands them all, or stalls them.
  let tickets = 0;
  let committed = 0;
  let stalled = false;
  let waiting: (() => void)[] = [];
  const ledger = {
    finish: (topic: string, partition: number, offset: string) => {
      at(`finish ${topic}/${partition}@${offset}`);
      return ++tickets;
    },
    committedThrough: () => committed,
    commitsStalled: () => stalled,
    commitSoon: () => at('commit soon'),
    whenCommitted: (callback: () => void) => waiting.push(callback),
  };
  const land = () => {
    committed = tickets;
    const callbacks = waiting;
    waiting = [];
    for (const callback of callbacks) callback();
  };
  const started = (id: string, events: number, job: DeliveryJob | BatchJob) => {
    at(`deliver ${id} send=${job.admitted.send} hold=${job.hold}`);
    return new Promise<Outcome>((resolve, reject) => pending.push({ id, events, resolve, reject: () => reject(new Error('broker down')) }));
  };
  const heldResult = (): DeliveryResult =>
    ({ held: { attemptsMade: 1, firstAttemptAtMs: Date.now(), dueAtMs: Date.now() + 1_000, receivedAtMs: undefined, traceparent: undefined, problems: [] } }) as unknown as DeliveryResult;
  const idOf = (r: InboundRecord) => `${r.topic}/${r.partition}@${r.offset}`;
  const lane = make({
    destinationId: 'd',
    concurrency: script.concurrency,
    queueBound: script.queueBound,
    settings: () => (present ? settings : undefined),
    circuits,
    pace: new RatePace(60_000),
    tierWait: new RetryTierWait({ main: MAIN, retries: [{ tier: { name: '1m', ms: 60_000 }, topic: RETRY, leftover: false }], dlq: 'dlq' }, WINDOW_MS),
    events: {
      deliver: async (job) => {
        const outcome = await started(idOf(job.record), 1, job);
        if (outcome === 'held' && job.hold) return heldResult();
        return 'delivered' as unknown as DeliveryResult;
      },
      deliverBatch: async (job) => {
        const outcome = await started(`batch ${job.events.map(({ record }) => idOf(record)).join(' ')}`, job.events.length, job);
        return job.events.map((_e, i): PromiseSettledResult<DeliveryResult> => {
          const each = outcome === 'mixed' ? (['ok', 'held', 'write-failed'] as const)[i % 3] : outcome;
          if (each === 'write-failed') return { status: 'rejected', reason: new Error('broker down') };
          return { status: 'fulfilled', value: each === 'held' && job.hold ? heldResult() : ('delivered' as unknown as DeliveryResult) };
        });
      },
    },
    stream: {
      pause: (topic, partition, resumeAt) => at(`pause ${topic}/${partition}${resumeAt === undefined ? '' : ` until ${resumeAt - START}`}`),
      resume: (topic, partition) => at(`resume ${topic}/${partition}`),
      release: (topic, partition, offset) => at(`release ${topic}/${partition}@${offset}`),
    },
    commits: new CommitAccount(ledger, script.uncommittedBound),
    logger: { error: (fields: { topic: string; partition: number; offset: string }) => at(`write failed ${fields.topic}/${fields.partition}@${fields.offset}`) } as unknown as Logger,
    writeRetryMs: 1_000,
  });
  const offsets = PARTITIONS.map(() => 0);
  const state = () =>
    at(`state queued=${lane.queuedCount} running=${lane.runningCount} parked=${lane.parkedCount} circuits=${lane.waitingForCircuits} timers=${vi.getTimerCount()}`);
  for (const [index, op] of script.ops.entries()) {
    if (index === script.leaves) present = false;
    switch (op.op) {
      case 'accept': {
        const [topic, partition] = PARTITIONS[op.p]!;
        const records: InboundRecord[] = [];
        for (let k = 0; k < op.n; k++) {
          const offset = offsets[op.p]!++;
          const headers: Record<string, string> = { 'source-id': 'web', 'message-id': `m-${op.p}-${offset}`, attempt: topic === RETRY ? '1' : '0' };
          if (topic === RETRY) headers['due-at'] = String(Date.now() + op.due);
          if (op.old) headers['first-attempt-at'] = new Date(Date.now() - WINDOW_MS - 1).toISOString();
          const key = op.keys[k] ?? null;
          records.push({ topic, partition, offset: String(offset), key: key === null ? null : Buffer.from(key), value: Buffer.alloc(op.bytes, 0x61), headers, timestamp: String(Date.now()) });
        }
        lane.accept(records);
        break;
      }
      case 'finish': {
        if (pending.length === 0) break;
        const [p] = pending.splice(op.i % pending.length, 1);
        at(`answer ${p!.id} ${op.outcome}`);
        if (op.outcome === 'write-failed') p!.reject();
        else p!.resolve(op.outcome);
        break;
      }
      case 'advance':
        await vi.advanceTimersByTimeAsync(op.ms);
        break;
      case 'circuits':
        urls = op.urls;
        if (op.state === 'open') openUntil = Date.now() + op.ms;
        else if (op.state === 'closed') openUntil = undefined;
        else if (probeOut) {
          probeOut = false;
          openUntil = op.state === 'probe-ok' ? undefined : Date.now() + op.ms;
        }
        break;
      case 'commits':
        if (op.state === 'stall') stalled = true;
        else if (op.state === 'unstall') stalled = false;
        else land();
        break;
      case 'settings':
        Object.assign(settings, { batch: op.batch, rateLimit: op.rate });
        break;
      case 'revoke': {
        const [topic, partition] = PARTITIONS[op.p]!;
        at(`revoke ${topic}/${partition} running ${lane.revoke(topic, partition).join(',')}`);
        break;
      }
      case 'wake':
        lane.wake();
        break;
    }
    state();
    await Promise.resolve();
  }
  // Let everything run out: what is in flight answered, the timers run, then the lane stops.
  for (let round = 0; round < 40; round++) {
    stalled = false;
    land();
    openUntil = undefined;
    probeOut = false;
    for (const p of pending.splice(0)) p.resolve('ok');
    await vi.advanceTimersByTimeAsync(round < 30 ? 1_500 : 120_000);
    state();
  }
  const stopped = lane.stop();
  for (const p of pending.splice(0)) p.resolve('ok');
  await vi.advanceTimersByTimeAsync(0);
  await stopped;
  state();
  vi.useRealTimers();
  return trace;
}

describe('the carved lane against the lane before the carve', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('does the same as the original, step for step, in every random script', async () => {
    await fc.assert(
      fc.asyncProperty(scriptArb, async (script) => {
        const original = await run(script, (parts) => new OriginalLane(parts));
        const carved = await run(script, (parts) => new DestinationLane(parts));
        expect(carved).toEqual(original);
      }),
      { numRuns: Number(process.env.LANE_DIFF_RUNS ?? 300) },
    );
  });
});
