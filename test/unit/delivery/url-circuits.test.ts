import { describe, expect, it } from 'vitest';
import type { PreparedDestination } from '../../../src/delivery/destination-settings.js';
import type { SendResult } from '../../../src/delivery/http-sender.js';
import { webhookTarget } from '../../../src/delivery/http-sender.js';
import { UrlCircuits, countBits } from '../../../src/delivery/url-circuits.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { createMetrics } from '../../../src/observability/metrics.js';

/** Two attempts in the window, both failed, open a circuit; one probe at a time decides. */
const BASE_POLICY = { windowMs: 10_000, minAttempts: 2, failureRatio: 0.5, unanswered: 5, coolDownMs: 1_000, maxCoolDownMs: 4_000, probes: 1, trackedLeaseMs: 10_000 };
const POLICY = () => BASE_POLICY;
const ok: SendResult = { outcome: '2xx', verdict: 'delivered', status: 200, reason: '200 OK', durationMs: 1 };
const e500: SendResult = { outcome: '5xx', verdict: 'retryable', status: 500, reason: '500 Internal Server Error', durationMs: 1 };
const cancelled: SendResult = { outcome: 'cancelled', durationMs: 1 };

function destination(urls: string[]): PreparedDestination {
  const targets = urls.map((url) => ({ target: webhookTarget(url), headers: {} }));
  return { id: 'hooks', targets, printableUrls: urls, ordered: false };
}

async function gauge(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const { values } = await metrics.circuitState.get();
  return Object.fromEntries(values.map((v) => [`${v.labels.destination}/${v.labels.url_index}`, v.value]));
}

describe('UrlCircuits', () => {
  it('skips a failing URL, reports circuit_open for it, and shows each state in the gauge by index', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: metrics.circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/?token=secret', 'https://b.test/']);
    for (const at of [0, 1]) {
      const admitted = circuits.admit(settings, at);
      expect(admitted.send).toBe(0b11);
      circuits.settle(admitted, [{ index: 0, result: e500 }, { index: 1, result: ok }], at);
    }
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 1, 'hooks/1': 0 });

    const skipping = circuits.admit(settings, 2);
    expect(skipping).toMatchObject({ send: 0b10, skipped: 0b01 });
    expect(countBits(skipping.send)).toBe(1);
    const [skipped] = circuits.skippedResults(skipping);
    expect(skipped).toEqual({
      index: 0,
      result: {
        outcome: 'circuit_open',
        verdict: 'retryable',
        reason: '500 Internal Server Error (its last failed answer; no request this attempt)',
        durationMs: 0,
      },
    });

    const probing = circuits.admit(settings, 1_001);
    expect(probing).toMatchObject({ send: 0b11, probe: 0b01 });
    expect(probing.keep & 0b01).toBe(0b01);
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 2, 'hooks/1': 0 });
    circuits.settle(probing, [{ index: 0, result: ok }, { index: 1, result: cancelled }], 1_002);
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 0, 'hooks/1': 0 });
  });

  it('an abandoned event frees its probe', () => {
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/']);
    for (const at of [0, 1]) circuits.settle(circuits.admit(settings, at), [{ index: 0, result: e500 }], at);
    const probing = circuits.admit(settings, 1_001);
    expect(probing.probe).toBe(1);
    expect(circuits.admit(settings, 1_002).skipped).toBe(1);
    circuits.abandon(probing, 1_003);
    expect(circuits.admit(settings, 1_004).probe).toBe(1);
  });

  it('a reload that changes a URL starts its circuit closed; a removed URL leaves the gauge', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: metrics.circuitState, logger: silentLogger() });
    const before = destination(['https://a.test/', 'https://b.test/']);
    for (const at of [0, 1]) {
      circuits.settle(circuits.admit(before, at), [{ index: 0, result: e500 }, { index: 1, result: e500 }], at);
    }
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 1, 'hooks/1': 1 });
    // Same first URL (its circuit stays open), a new second one.
    const after = destination(['https://a.test/', 'https://c.test/']);
    expect(circuits.admit(after, 2)).toMatchObject({ send: 0b10, skipped: 0b01 });
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 1, 'hooks/1': 0 });
    circuits.admit(destination(['https://a.test/']), 3);
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 1 });
    circuits.close();
    expect(await gauge(metrics)).toEqual({});
  });
});

describe('UrlCircuits skip reasons', () => {
  it('lead with what the URL answered last, with no breaker wording or timer', () => {
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/']);
    for (const at of [0, 1]) circuits.settle(circuits.admit(settings, at), [{ index: 0, result: e500 }], at);
    const skipped = circuits.admit(settings, 2);
    const probe = circuits.admit(settings, 1_001);
    const skippedDuringProbe = circuits.admit(settings, 1_002);
    expect(circuits.skippedResults(skippedDuringProbe)[0]!.result).toMatchObject({
      reason: '500 Internal Server Error (its last failed answer; no request this attempt)',
    });
    circuits.settle(probe, [{ index: 0, result: ok }], 1_003);
    expect(circuits.skippedResults(skipped)[0]!.result).toMatchObject({ reason: '500 Internal Server Error (its last failed answer; no request this attempt)' });
  });
});

describe('UrlCircuits.allOpenUntil', () => {
  it('is undefined while any URL lets a request through, else the earliest time one will', () => {
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/', 'https://b.test/']);
    expect(circuits.allOpenUntil(settings, 0)).toBeUndefined();
    for (const at of [0, 1]) circuits.settle(circuits.admit(settings, at), [{ index: 0, result: e500 }, { index: 1, result: ok }], at);
    // URL #0 open, URL #1 closed: requests still go.
    expect(circuits.allOpenUntil(settings, 2)).toBeUndefined();
    for (const at of [500, 501]) circuits.settle(circuits.admit(settings, at), [{ index: 1, result: e500 }], at);
    expect(circuits.allOpenUntil(settings, 502)).toBe(1_001);
    // The cool-down of #0 is over: its probe may go.
    expect(circuits.allOpenUntil(settings, 1_001)).toBeUndefined();
    const probing = circuits.admit(settings, 1_001);
    expect(probing.probe).toBe(0b01);
    // #0's one probe is out, #1 is still cooling down: the earliest is #1's end of cool-down.
    expect(circuits.allOpenUntil(settings, 1_100)).toBe(1_501);
  });

  it('takes the destination\'s own thresholds, and new ones at a reload', () => {
    const seen: (object | undefined)[] = [];
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: (o) => (seen.push(o), { ...BASE_POLICY, ...o }), gauge: createMetrics({ defaultMetrics: false }).circuitState, logger: silentLogger() });
    const strict = { ...destination(['https://a.test/']), circuitBreaker: { minAttempts: 1 } };
    circuits.settle(circuits.admit(strict, 0), [{ index: 0, result: e500 }], 0);
    expect(circuits.statuses(1)[0]!.state).toBe('open');
    const lenient = { ...destination(['https://b.test/']), circuitBreaker: { minAttempts: 3 } };
    for (const at of [10, 11]) circuits.settle(circuits.admit(lenient, at), [{ index: 0, result: e500 }], at);
    expect(circuits.statuses(12)[0]!.state).toBe('closed');
    expect(seen).toEqual([{ minAttempts: 1 }, { minAttempts: 3 }]);
  });
});

describe('UrlCircuits across a reload', () => {
  it('results of requests to a replaced URL do not count against the URL that took its place', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: metrics.circuitState, logger: silentLogger() });
    const before = destination(['https://old.test/', 'https://b.test/']);
    // Requests to the old URL are in flight when the reload replaces it.
    const inFlight = [circuits.admit(before, 0), circuits.admit(before, 0), circuits.admit(before, 0)];
    const after = destination(['https://new.test/', 'https://b.test/']);
    expect(circuits.admit(after, 1)).toMatchObject({ send: 0b11, skipped: 0 });
    for (const admitted of inFlight) circuits.settle(admitted, [{ index: 0, result: e500 }, { index: 1, result: ok }], 2);
    // The new URL has not failed once: its circuit stays closed.
    expect(circuits.admit(after, 3)).toMatchObject({ send: 0b11, skipped: 0 });
    expect(await gauge(metrics)).toEqual({ 'hooks/0': 0, 'hooks/1': 0 });
  });

  it('after close, a late result leaves no gauge series behind', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: metrics.circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/']);
    const inFlight = [circuits.admit(settings, 0), circuits.admit(settings, 0)];
    circuits.close();
    for (const admitted of inFlight) circuits.settle(admitted, [{ index: 0, result: e500 }], 1);
    expect(await gauge(metrics)).toEqual({});
  });
});

describe('UrlCircuits.statuses', () => {
  it('tells each URL\'s circuit, last failure, last success and since when it fails; a reload to another URL starts it afresh', () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const circuits = new UrlCircuits({ destinationId: 'hooks', policy: POLICY, gauge: metrics.circuitState, logger: silentLogger() });
    const settings = destination(['https://a.test/', 'https://b.test/']);
    for (const at of [10, 20]) {
      const admitted = circuits.admit(settings, at);
      circuits.settle(admitted, [{ index: 0, result: e500 }, { index: 1, result: ok }], at);
    }
    expect(circuits.statuses(30)).toEqual([
      { index: 0, state: 'open', failures: 2, window: { attempts: 2, failed: 2 }, nextProbeAtMs: 1_020, failingSinceMs: 10, lastFailure: { atMs: 20, outcome: '5xx', reason: '500 Internal Server Error' } },
      { index: 1, state: 'closed', failures: 0, window: { attempts: 2, failed: 0 }, lastSuccessAtMs: 20 },
    ]);
    // A cancelled attempt is no answer: nothing changes.
    const probing = circuits.admit(settings, 1_030);
    circuits.settle(probing, [{ index: 0, result: cancelled }, { index: 1, result: ok }], 1_030);
    expect(circuits.statuses()[0]).toMatchObject({ failingSinceMs: 10, lastFailure: { atMs: 20 } });
    // A 2xx ends the failing spell; the last failure is kept.
    const again = circuits.admit(settings, 1_040);
    circuits.settle(again, [{ index: 0, result: ok }, { index: 1, result: ok }], 1_040);
    expect(circuits.statuses(1_041)[0]).toEqual({ index: 0, state: 'closed', failures: 0, window: { attempts: 0, failed: 0 }, lastSuccessAtMs: 1_040, lastFailure: { atMs: 20, outcome: '5xx', reason: '500 Internal Server Error' } });
    circuits.admit(destination(['https://c.test/', 'https://b.test/']), 1_050);
    expect(circuits.statuses(1_051)).toEqual([
      { index: 0, state: 'closed', failures: 0, window: { attempts: 0, failed: 0 } },
      { index: 1, state: 'closed', failures: 0, window: { attempts: 4, failed: 0 }, lastSuccessAtMs: 1_040 },
    ]);
  });
});
