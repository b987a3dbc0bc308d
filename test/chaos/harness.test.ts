// The chaos harness's own pure parts: the verdict, the routing and body oracles, the
// fault plan, the memory trend and the command line. A harness that miscounts would
// pass a run that lost calls, so its arithmetic is tested like product code.
import { describe, expect, it } from 'vitest';
import { deletionDestinations, deletionSources, expectedDeleteBody } from './deletions.js';
import { normalizeReceivedBody, renderExpectedBody } from './expected-body.js';
import { duplicateCauses, duplicateMechanisms } from './duplicate-causes.js';
import { planFaults } from './faults.js';
import { commitsAtKill, committedAt, killExposure, recordAnswered } from './kill-exposure.js';
import type { AnsweredEvent } from './kill-exposure.js';
import { avoidableLine } from './report.js';
import type { ChaosReport } from './run-chaos.js';
import { encodeFinished } from '../../src/kafka/offset-progress.js';
import type { FaultRecord } from './faults.js';
import { parseChaosArgs, PROFILES } from './profiles.js';
import { createRandom } from './random.js';
import { slope, trendOf } from './samples.js';
import { reasonsOf } from './tap.js';
import { chaosTopology, expectedDestinations, integrationsLetThrough, sourceOfRecord } from './topology.js';
import { orderViolations } from './user-order.js';
import { judge } from './verdict.js';
import type { Arrivals, Expectation, Kept, Observations } from './verdict.js';

function observations(parts: {
  arrivals?: Record<string, Record<string, Arrivals>>;
  deadLetters?: Record<string, Record<string, Kept>>;
  invalid?: Record<string, Kept>;
}): Observations {
  const nested = <T>(record: Record<string, Record<string, T>> = {}) => new Map(Object.entries(record).map(([d, byKey]) => [d, new Map(Object.entries(byKey))]));
  return { arrivals: nested(parts.arrivals), deadLetters: nested(parts.deadLetters), invalidKept: new Map(Object.entries(parts.invalid ?? {})) };
}

const load = (key: string, destinations: string[] | undefined, acknowledged = true): Expectation => ({ key, origin: 'load', acknowledged, claim: 'valid', destinations });

describe('judge', () => {
  it('counts a call delivered at every destination, and duplicates past the first 2xx', () => {
    const verdict = judge([load('m-1', ['a', 'b'])], observations({ arrivals: { a: { 'm-1': { requests: 3, delivered: 2 } }, b: { 'm-1': { requests: 1, delivered: 1 } } } }));
    expect(verdict.load).toMatchObject({ acknowledged: 1, delivered: 1, lost: 0, expectedPairs: 2, deliveredPairs: 2, duplicateDeliveries: 1, duplicatesByDestination: { a: 1 } });
    expect(verdict.lostCount + verdict.unexpectedCount + verdict.problemCount).toBe(0);
  });

  it('counts a second 2xx from another URL of the destination as the contract, not as a duplicate', () => {
    const verdict = judge([load('m-1', ['fan'])], observations({ arrivals: { fan: { 'm-1': { requests: 2, delivered: 2, redelivered: 0 } } } }));
    expect(verdict.load.duplicateDeliveries).toBe(0);
  });

  it('accounts a dead letter only with an error header', () => {
    const verdict = judge(
      [load('m-1', ['a']), load('m-2', ['a'])],
      observations({ deadLetters: { a: { 'm-1': { count: 1, withError: 1 }, 'm-2': { count: 1, withError: 0 } } } }),
    );
    expect(verdict.load).toMatchObject({ deadLettered: 1, lost: 1, deadLetteredPairs: 1, lostPairs: 1 });
    expect(verdict.lost.map((f) => f.key)).toEqual(['m-2']);
    expect(verdict.problems.map((f) => f.what)).toEqual(['dead letter without an error header']);
  });

  it('takes an input of a copy group that reached nowhere as a dropped copy when another of the group got there, and as lost when none did', () => {
    const fuzz = (key: string, copyGroup: string): Expectation => ({ key, origin: 'fuzz', acknowledged: true, claim: 'unknown', destinations: ['a', 'b'], copyGroup });
    const verdict = judge(
      [fuzz('t-1', 'web/m-1'), fuzz('t-2', 'web/m-1'), fuzz('t-3', 'web/m-3'), fuzz('t-4', 'web/m-3')],
      observations({ arrivals: { a: { 't-1': { requests: 1, delivered: 1 } }, b: { 't-2': { requests: 1, delivered: 1 }, 't-3': { requests: 1, delivered: 1 } } } }),
    );
    // m-1: a by t-1 and b by t-2, both served; m-3: t-3 taken as the call (b served, a lost), t-4 dropped whole.
    expect(verdict.fuzz).toMatchObject({ droppedCopyPairs: 4, deliveredPairs: 3, lostPairs: 1 });
    expect(verdict.lost.map((f) => `${f.key}/${f.destination}`)).toEqual(['t-3/a']);
  });

  it('takes an input of a copy group that reached nowhere as dropped whole when another of the group was taken as the call, even routed elsewhere; lost when none was', () => {
    const fuzz = (key: string, copyGroup: string, destinations: string[]): Expectation => ({ key, origin: 'fuzz', acknowledged: true, claim: 'unknown', destinations, copyGroup });
    const verdict = judge(
      // m-1: the first copy filtered everywhere, the second (another content) to b: dropped. m-2: neither arrived: lost.
      [fuzz('t-1', 'web/m-1', []), fuzz('t-2', 'web/m-1', ['b']), fuzz('t-3', 'web/m-2', ['a']), fuzz('t-4', 'web/m-2', ['a'])],
      observations({}),
    );
    expect(verdict.fuzz).toMatchObject({ droppedCopyPairs: 1, lostPairs: 2 });
    expect(verdict.lost.map((f) => `${f.key}/${f.destination}`)).toEqual(['t-3/a', 't-4/a']);
  });

  it('calls a pair lost when the receiver only ever failed it and no dead letter exists', () => {
    const verdict = judge([load('m-1', ['a'])], observations({ arrivals: { a: { 'm-1': { requests: 4, delivered: 0 } } } }));
    expect(verdict.lost).toEqual([{ key: 'm-1', destination: 'a', what: 'reached the receiver 4 time(s) but never with a 2xx, and is not dead-lettered' }]);
  });

  it('flags a filtered call that arrived anyway, and a delivery to a destination not expected', () => {
    const verdict = judge(
      [load('m-1', []), load('m-2', ['a'])],
      observations({ arrivals: { a: { 'm-1': { requests: 1, delivered: 1 }, 'm-2': { requests: 1, delivered: 1 } }, off: { 'm-2': { requests: 1, delivered: 1 } } } }),
    );
    expect(verdict.load.filtered).toBe(1);
    expect(verdict.unexpected.map((f) => `${f.key}→${f.destination}`)).toEqual(['m-1→a', 'm-2→off']);
  });

  it('lets an unacknowledged call arrive or not, but only where it was to go', () => {
    const verdict = judge(
      [load('m-1', ['a'], false), load('m-2', ['a'], false)],
      observations({ arrivals: { a: { 'm-1': { requests: 1, delivered: 1 } }, off: { 'm-2': { requests: 1, delivered: 1 } } } }),
    );
    expect(verdict.load).toMatchObject({ acknowledged: 0, unacknowledged: 2, unacknowledgedArrived: 2, lost: 0 });
    expect(verdict.unexpected.map((f) => f.key)).toEqual(['m-2']);
  });

  it('takes calls.invalid as the answer for records written straight to Kafka, and requires it when the gateway claimed it', () => {
    const fuzz = (key: string, claim: Expectation['claim'], destinations?: string[]): Expectation => ({ key, origin: 'fuzz', acknowledged: true, claim, destinations });
    const verdict = judge(
      [fuzz('t-1', 'unknown'), fuzz('t-2', 'unknown', ['a']), fuzz('t-3', 'invalid'), fuzz('t-4', 'unknown'), fuzz('t-5', 'valid', ['a'])],
      observations({
        invalid: { 't-1': { count: 1, withError: 1 }, 't-5': { count: 1, withError: 1 } },
        arrivals: { a: { 't-2': { requests: 1, delivered: 1 }, 't-5': { requests: 1, delivered: 1 } } },
      }),
    );
    expect(verdict.fuzz).toMatchObject({ acknowledged: 5, invalidKept: 1, delivered: 2, lost: 2 });
    expect(verdict.lost.map((f) => f.key)).toEqual(['t-3', 't-4']);
    expect(verdict.problems.map((f) => f.key)).toEqual(['t-5']);
  });

  it('reports arrivals, dead letters and invalid records that match nothing sent', () => {
    const verdict = judge(
      [],
      observations({ arrivals: { a: { 'stray:x': { requests: 1, delivered: 1 } } }, deadLetters: { a: { 'stray:y': { count: 1, withError: 1 } } }, invalid: { 'stray:z': { count: 1, withError: 1 } } }),
    );
    expect(verdict.unexpected.map((f) => f.key)).toEqual(['stray:x', 'stray:y', 'stray:z']);
  });
});

describe('routing oracle (docs/configuration.md#routing)', () => {
  it.each([
    [undefined, true],
    [{}, true],
    [{ All: false }, false],
    [{ All: false, Webhooks: true }, true],
    [{ All: false, Webhooks: { option: 1 } }, true],
    [{ Webhooks: false }, false],
    [{ All: true, Webhooks: false }, false],
    [{ webhooks: false }, true],
    [{ All: 'false' }, true],
    [{ All: false, Webhooks: null }, false],
    [[], true],
  ])('integrations %j → %s', (integrations, through) => {
    expect(integrationsLetThrough(integrations)).toBe(through);
  });

  const topology = chaosTopology({ failingShare: 0.2 });
  const web = topology.sources.find((s) => s.id === 'web')!;

  it('skips disabled destinations and applies the source track filter to track calls only', () => {
    expect(expectedDestinations(topology, web, { type: 'identify' })).toEqual(['steady', 'flaky']);
    expect(expectedDestinations(topology, web, { type: 'track', event: 'Debug Ping' })).toEqual([]);
    expect(expectedDestinations(topology, web, { type: 'page', event: 'Debug Ping' })).toEqual(['steady', 'flaky']);
  });

  it('sends a deletion to every enabled destination of its source, unfiltered, and only names sources with a live destination', () => {
    expect(deletionDestinations(topology, web)).toEqual(['steady', 'flaky']);
    expect(deletionDestinations(topology, topology.sources.find((s) => s.id === 'mobile')!)).toEqual(['fanout', 'bounce']);
    expect(deletionSources(topology).map((s) => s.id)).toEqual(['web', 'mobile', 'server']);
    expect(expectedDeleteBody('u-1', Date.UTC(2026, 4, 1))).toBe('{"type":"delete","userId":"u-1","timestamp":"2026-05-01T00:00:00.000Z"}');
  });

  it('adds fleet destinations up to the profile\'s count, fed by fleet sources of five, keeping the shares at 1', () => {
    expect(topology.destinations.map((d) => d.id)).toEqual(['steady', 'flaky', 'fanout', 'bounce', 'blackhole', 'off', 'unsteady', 'batched', 'ordered']);
    const big = chaosTopology({ failingShare: 0.2, destinations: 50 });
    expect(big.destinations).toHaveLength(50);
    const fleet = big.sources.filter((s) => s.id.startsWith('fleet-'));
    expect(fleet).toHaveLength(9);
    expect(fleet.flatMap((s) => s.destinations).sort()).toEqual(big.destinations.filter((d) => d.id.startsWith('fleet-')).map((d) => d.id).sort());
    expect(fleet.every((s) => s.destinations.length <= 5)).toBe(true);
    expect(big.sources.reduce((sum, s) => sum + s.share, 0)).toBeCloseTo(1);
    for (const d of big.destinations) expect(big.receivers.some((r) => d.receivers.includes(r.name))).toBe(true);
    expect(() => chaosTopology({ failingShare: 0.2, destinations: 8 })).toThrow('at least 9 destinations');
  });

  it('finds the source by header first, then by write key', () => {
    expect(sourceOfRecord(topology, 'server', 'web-write-key')?.id).toBe('server');
    expect(sourceOfRecord(topology, '', 'web-write-key')?.id).toBe('web');
    expect(sourceOfRecord(topology, undefined, 'nope')).toBeUndefined();
    expect(sourceOfRecord(topology, 'nope', 'web-write-key')).toBeUndefined();
  });
});

describe('body oracle (docs/webhooks.md)', () => {
  it('renders the two bodies of the contract byte for byte', () => {
    expect(
      renderExpectedBody(
        { type: 'track', userId: 'u-1', event: 'Order Completed', properties: { total: 99.5 }, context: { ip: '203.0.113.9' } },
        { messageId: 'm-1', timestamp: '2026-05-01T12:00:00.000Z' },
      ),
    ).toBe('{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}');
    expect(renderExpectedBody({ type: 'alias', previousId: 'anon-7', userId: 'u-1' }, { messageId: 'm-2', timestamp: '2026-05-01T12:00:00.000Z' })).toBe(
      '{"version":1,"type":"alias","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"anon-7","User ID":"u-1"}',
    );
  });

  it('normalizes a received body only when its timestamp and messageId have the contract form', () => {
    expect(normalizeReceivedBody('{"version":1,"type":"identify","messageId":"x","timestamp":"2026-05-01T12:00:00.000Z"}', undefined)).toEqual({
      ok: true,
      text: '{"version":1,"type":"identify","messageId":"<messageId>","timestamp":"<timestamp>"}',
    });
    expect(normalizeReceivedBody('{"version":1,"timestamp":"2026-05-01T12:00:00Z"}', 'x').ok).toBe(false);
    expect(normalizeReceivedBody('not json', 'x').ok).toBe(false);
  });
});

describe('fault plan', () => {
  it('spreads the faults over 10–85 % of the load, kills every role, and repeats for a seed', () => {
    const plan = (seed: number) => planFaults({ kills: 6, brokerRestarts: 2, receiverOutages: 3, reloads: 2 }, 100_000, 'steady', createRandom(seed));
    const faults = plan(7);
    expect(faults).toEqual(plan(7));
    expect(faults.filter((f) => f.kind === 'kill')).toHaveLength(6);
    expect(new Set(faults.flatMap((f) => (f.kind === 'kill' ? [f.role] : [])))).toEqual(new Set(['gateway', 'router', 'deliverer']));
    expect(faults.filter((f) => f.kind === 'broker-restart')).toHaveLength(2);
    expect(faults.filter((f) => f.kind === 'reload')).toHaveLength(2);
    for (const fault of faults) expect(fault.atMs).toBeGreaterThanOrEqual(10_000);
    for (const fault of faults) expect(fault.atMs).toBeLessThanOrEqual(85_000);
    expect(faults.map((f) => f.atMs)).toEqual([...faults.map((f) => f.atMs)].sort((a, b) => a - b));
  });
});

describe('duplicate causes', () => {
  const record = (fault: FaultRecord['fault'], startedAtMs: number): FaultRecord => ({ fault, startedAtMs, endedAtMs: startedAtMs + 1_000 });
  const faults = [
    record({ kind: 'kill', atMs: 0, role: 'deliverer', downMs: 0 }, 10_000),
    record({ kind: 'kill', atMs: 0, role: 'router', downMs: 0 }, 20_000),
    record({ kind: 'broker-restart', atMs: 0, downMs: 1_000 }, 200_000),
  ];

  it('puts each 2xx past the first down to the last fault started before it, within the window', () => {
    const causes = duplicateCauses(
      [
        [9_000, 12_000], // after the deliverer's kill
        [15_000, 21_000, 25_000], // two after the router's kill
        [1_000], // no duplicate
        [100_000, 150_000], // 130 s after the last fault: none
      ],
      faults,
    );
    expect(causes).toEqual({
      'kill router': { count: 2, medianGapMs: 10_000, medianAfterFaultMs: 5_000 },
      'kill deliverer': { count: 1, medianGapMs: 3_000, medianAfterFaultMs: 2_000 },
      none: { count: 1, medianGapMs: 50_000, medianAfterFaultMs: 0 },
    });
  });

  it('puts a duplicate before any fault down to none', () => {
    expect(duplicateCauses([[1_000, 2_000]], faults)).toEqual({ none: { count: 1, medianGapMs: 1_000, medianAfterFaultMs: 0 } });
  });
});

describe('duplicate mechanisms', () => {
  const faults: FaultRecord[] = [
    { fault: { kind: 'kill', atMs: 0, role: 'deliverer', downMs: 0 }, startedAtMs: 10_000, endedAtMs: 11_000 },
    { fault: { kind: 'reload', atMs: 0 }, startedAtMs: 30_000, endedAtMs: 31_000 },
  ];

  it('tells a copy routed twice, an answer the deliverer did not take, and a record sent twice apart', () => {
    expect(
      duplicateMechanisms(
        [
          { answeredAt: [5_000, 5_100], deliveryRecords: 2, retryRecords: 0 }, // two records in deliveries.<id>
          { answeredAt: [12_000, 13_000], deliveryRecords: 1, retryRecords: 1 }, // a 2xx, then its retry delivered
          { answeredAt: [9_000, 12_000], deliveryRecords: 1, retryRecords: 0 }, // one record answered twice, after the kill
          { answeredAt: [9_500, 31_000], deliveryRecords: 1, retryRecords: 0 }, // again only after the reload: the kill between lost it first
          { answeredAt: [10_500, 31_000], deliveryRecords: 1, retryRecords: 0 }, // first answered while the deliverer was down: open at the kill, which lost it
          { answeredAt: [11_500, 31_500], deliveryRecords: 1, retryRecords: 0 }, // first answered after the deliverer was back: the reload
          { answeredAt: [31_000, 29_000, 32_000], deliveryRecords: 1, retryRecords: 1 }, // one of each, the reload between
          { answeredAt: [1_000], deliveryRecords: 1, retryRecords: 3 }, // no duplicate
          { answeredAt: [100_000, 200_000], deliveryRecords: 1, retryRecords: 0 }, // long after every fault
        ],
        faults,
      ),
    ).toEqual({ 'answer not taken': 2, 'routed twice': 1, 'redelivered kill deliverer': 3, 'redelivered reload': 2, 'redelivered none': 1 });
  });
});

describe('dead-letter reasons', () => {
  it('leave the URLs out, so that reasons from different ports count together', () => {
    expect(reasonsOf('http://127.0.0.1:4100/hook: 500 Internal Server Error; https://h.example/x?y=1: 302 Found (redirects are not followed)')).toBe(
      '500 Internal Server Error; 302 Found (redirects are not followed)',
    );
  });
});

describe('memory trend', () => {
  it('is the least-squares slope', () => {
    expect(slope([{ x: 0, y: 1 }, { x: 1, y: 3 }, { x: 2, y: 5 }])).toBeCloseTo(2);
    expect(slope([{ x: 0, y: 5 }])).toBe(0);
  });

  it('leaves out the warm-up and reports MiB per minute', () => {
    const mib = 1024 * 1024;
    const samples = Array.from({ length: 10 }, (_, i) => ({
      atMs: i * 60_000,
      // 50 MiB of warm-up growth in the first two samples, then 1 MiB a minute.
      rssBytes: (i < 2 ? i * 50 : 100 + i) * mib,
      heapUsedBytes: 20 * mib,
      externalBytes: 5 * mib,
      eventLoopP99Ms: i,
    }));
    const trend = trendOf(samples);
    expect(trend.samples).toBe(8);
    expect(trend.rssSlopeMiBPerMin).toBeCloseTo(1);
    expect(trend.rssSlopeSecondHalfMiBPerMin).toBeCloseTo(1);
    expect(trend.heapSlopeMiBPerMin).toBeCloseTo(0);
    expect(trend.eventLoopP99MaxMs).toBe(9);
    expect(trend.series[0]).toEqual([0, 102, 20, 5]);
  });
});

describe('command line', () => {
  it('starts from the profile and applies the knobs', () => {
    const { profile, reportFile } = parseChaosArgs(['--profile', 'short', '--kills', '5', '--failing-share', '0.5', '--seed', '42', '--report', 'r.json']);
    expect(profile).toMatchObject({ name: 'short', calls: PROFILES.short.calls, kills: 5, failingShare: 0.5, seed: 42 });
    expect(reportFile).toBe('r.json');
    expect(parseChaosArgs([]).profile.name).toBe('full');
    expect(parseChaosArgs([]).profile).toMatchObject({ destinations: 50, maxDuplicateRate: 0.005 });
    expect(parseChaosArgs(['--profile', 'short', '--destinations', '20']).profile.destinations).toBe(20);
    expect(parseChaosArgs(['--profile', 'soak', '--soak-minutes', '2']).profile.calls).toBe(2 * 60 * PROFILES.soak.ratePerSecond);
  });

  it('refuses what it cannot run, saying what to give', () => {
    expect(() => parseChaosArgs(['--profile', 'huge'])).toThrow('--profile must be short, full or soak');
    expect(() => parseChaosArgs(['--kills', '2.5'])).toThrow('--kills must be a whole number');
    expect(() => parseChaosArgs(['--failing-share', '2'])).toThrow('between 0 and 1');
    expect(() => parseChaosArgs(['--destinations', '3'])).toThrow('--destinations must be at least 9');
  });
});

describe('per-user order check', () => {
  const at = (key: string, user: string, offset: number, seq: number, partition = 0) => ({ key, user, partition, offset: BigInt(offset), seq });
  it.each([
    ['in topic order', [at('a1', 'a', 1, 1), at('b1', 'b', 2, 2), at('a2', 'a', 3, 3)], 0],
    ['other users interleaved in any order', [at('a1', 'a', 1, 5), at('b1', 'b', 2, 1), at('a2', 'a', 3, 6), at('b2', 'b', 4, 2)], 0],
    ['a later event of a user first', [at('a1', 'a', 1, 3), at('a2', 'a', 2, 2)], 1],
    ['one early event counted once, however many come after it', [at('a1', 'a', 1, 9), at('a2', 'a', 2, 10), at('a3', 'a', 3, 1)], 1],
  ])('%s', (_name, deliveries, expected) => {
    const result = orderViolations(deliveries);
    expect(result.violationCount).toBe(expected);
    expect(result.checked).toBe(deliveries.length);
  });
});


describe('what a deliverer kill can redo', () => {
  // deliveries.a partition 0 committed at 10 with 12 and 13 finished above it; retry partition 1 at 5; partition 2 never committed.
  const commits = commitsAtKill([
    { topic: 'deliveries.a', partitions: [{ partition: 0, offset: '10', metadata: encodeFinished(10n, [12n, 13n]) }, { partition: 2, offset: '-1', metadata: null }] },
    { topic: 'retry.a.1s', partitions: [{ partition: 1, offset: '5', metadata: null }] },
  ]);
  const record = (topic: string, partition: number, offset: number, writtenAtMs: number) => ({ topic, partition, offset: BigInt(offset), writtenAtMs });

  it('takes a record as committed below the committed offset or among the finished offsets of the metadata, not otherwise', () => {
    const at = (offset: number, partition = 0, topic = 'deliveries.a') => committedAt(commits, { topic, partition, offset: BigInt(offset) });
    expect([9, 10, 11, 12, 13, 14].map((o) => at(o))).toEqual([true, false, false, true, true, false]);
    expect(at(4, 1, 'retry.a.1s')).toBe(true);
    expect(at(5, 1, 'retry.a.1s')).toBe(false);
    expect(at(0, 2)).toBe(false); // no commit at all
    expect(at(0, 1)).toBe(false); // a partition the group never committed
  });

  it('puts an answer down to the last record of the event written at or before it', () => {
    const delivery = record('deliveries.a', 0, 11, 1_000);
    const retry = record('retry.a.1s', 1, 7, 2_000);
    expect(recordAnswered([delivery, retry], 1_500)).toBe(delivery);
    expect(recordAnswered([delivery, retry], 2_000)).toBe(retry);
    expect(recordAnswered([delivery, retry], 999)).toBeUndefined();
  });

  it('counts per URL and per event of a batch the answers before the kill whose record was not committed', () => {
    const kill = { atMs: 10_000, commits };
    const events: AnsweredEvent[] = [
      // Two events of one batched request, both uncommitted: two.
      { url: 'batch', key: 'm-1', answeredAt: [9_000], records: [record('deliveries.a', 0, 11, 8_000)] },
      { url: 'batch', key: 'm-2', answeredAt: [9_000], records: [record('deliveries.a', 0, 14, 8_000)] },
      // Committed (below the offset, and finished above it): none.
      { url: 'good', key: 'm-3', answeredAt: [9_000], records: [record('deliveries.a', 0, 9, 8_000)] },
      { url: 'good', key: 'm-4', answeredAt: [9_000], records: [record('deliveries.a', 0, 12, 8_000)] },
      // Answered after the kill only: none.
      { url: 'good', key: 'm-5', answeredAt: [10_001], records: [record('deliveries.a', 0, 15, 8_000)] },
      // Answered for its retry record, committed; its delivery record (uncommitted) no longer matters.
      { url: 'good', key: 'm-6', answeredAt: [9_500], records: [record('deliveries.a', 0, 16, 8_000), record('retry.a.1s', 1, 3, 9_000)] },
      // Answered at two URLs of one destination, uncommitted: one per URL.
      { url: 'fan-1', key: 'm-7', answeredAt: [9_900], records: [record('deliveries.a', 2, 0, 9_000)] },
      { url: 'fan-2', key: 'm-7', answeredAt: [9_901], records: [record('deliveries.a', 2, 0, 9_000)] },
      // Its records not found: not counted, but said.
      { url: 'good', key: 'm-8', answeredAt: [9_000], records: [] },
    ];
    expect(killExposure(kill, undefined, events)).toMatchObject({ answeredNotCommitted: 4, unplaced: 1, redeliveredNotCommitted: 0, notCommittedAnsweredForLaterRecord: 0, notCommittedNotAnsweredAgain: 4, redeliveredCommitted: 0 });
  });

  it('tells a redelivery of an uncommitted record from one of a committed record, which it lists', () => {
    const kill = { atMs: 10_000, commits };
    const events: AnsweredEvent[] = [
      { url: 'good', key: 'm-1', answeredAt: [9_000, 12_000], records: [record('deliveries.a', 0, 11, 8_000)] },
      { url: 'good', key: 'm-2', answeredAt: [9_000, 12_000], records: [record('deliveries.a', 0, 12, 8_000)] },
      // Answered again after the next kill: put down to that one, not this.
      { url: 'good', key: 'm-3', answeredAt: [9_000, 30_000], records: [record('deliveries.a', 0, 9, 8_000)] },
      // Uncommitted, answered again for another record (the successor's attempt failed, a retry delivered it): not a redelivery of the record.
      { url: 'good', key: 'm-4', answeredAt: [9_000, 12_000], records: [record('deliveries.a', 0, 14, 8_000), record('retry.a.1s', 1, 9, 11_000)] },
    ];
    const exposure = killExposure(kill, 20_000, events);
    expect(exposure).toMatchObject({ answeredNotCommitted: 2, redeliveredNotCommitted: 1, notCommittedAnsweredForLaterRecord: 1, redeliveredCommitted: 1 });
    expect(exposure.committedRedeliveries).toEqual([{ key: 'm-2', url: 'good', topic: 'deliveries.a', partition: 0, offset: '12', answeredAtMs: [9_000, 12_000] }]);
  });

  it('prints the redeliveries after the kills beside what the kills could redo, and says when they are more', () => {
    const kill = (openEvents: number, answeredNotCommitted: number, read = true): ChaosReport['delivererKills'][number] => ({
      atMs: 0,
      openEvents,
      commitsRead: read,
      commitsReadAfterMs: 100,
      ...(read ? {} : { commitsNote: 'not read: the broker did not answer within 15000 ms' }),
      answeredNotCommitted,
      unplaced: 0,
      redeliveredNotCommitted: 0,
      notCommittedAnsweredForLaterRecord: 0,
      notCommittedNotAnsweredAgain: 0,
      notAnsweredAgain: [],
      redeliveredCommitted: 0,
      committedRedeliveries: [],
    });
    const line = (redelivered: number, kills: ChaosReport['delivererKills']) => avoidableLine({ duplicateMechanisms: { 'redelivered kill deliverer': redelivered, 'routed twice': 1 }, delivererKills: kills });
    expect(line(79, [kill(2, 80)])).toBe(
      "duplicates of copies routed twice or records sent again after a reload: 1 (target 0); records sent again after the deliverer's 1 SIGKILL(s): 79, against 82 events a kill could redo (2 in open requests, 80 answered 2xx but not committed at the kill): 79 ≤ 82; of those not committed, answered again at their URL: 0 for the same record, 0 through a later record (the successor's attempt failed; counted `answer not taken` above), 0 not again (another URL answered first, or dead-lettered)",
    );
    const twoKills = line(5, [kill(1, 2), kill(0, 0, false)]);
    expect(twoKills).toContain('2 SIGKILL(s): 5, against 3 events a kill could redo (1 in open requests, 2 answered 2xx but not committed at the kill): 5 > 3, MORE than a kill can redo;');
    expect(twoKills).toContain('; the commits of 1 kill(s) could not be read, their answered events not counted: not read: the broker did not answer within 15000 ms');
  });
});
