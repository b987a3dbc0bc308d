import { describe, expect, it } from 'vitest';
import { CircuitBreaker, DEFAULT_CIRCUIT_POLICY } from '../../../src/delivery/circuit-breaker.js';
import type { Admission, CircuitPolicy, CircuitState, CircuitTransition, Verdict } from '../../../src/delivery/circuit-breaker.js';
import { circuitPolicy } from '../../../src/delivery/deliverer-service.js';

/** A 1 s window (slices of 100 ms), 4 attempts at least, half failed; 3 connections in a row; 2 probes. */
const POLICY: CircuitPolicy = {
  windowMs: 1_000,
  minAttempts: 4,
  failureRatio: 0.5,
  unanswered: 3,
  coolDownMs: 1_000,
  maxCoolDownMs: 3_000,
  probes: 2,
  trackedLeaseMs: 10_000,
};

/**
 * A step: at time `at`, either ask for an admission (and expect one), or settle the
 * admission of an earlier step (by its index in the script) with a verdict.
 */
type Step =
  | { at: number; admit: Admission; state: CircuitState }
  | { at: number; settle: number; verdict: Verdict; state: CircuitState };

const admit = (at: number, expected: Admission, state: CircuitState): Step => ({ at, admit: expected, state });
const settle = (at: number, step: number, verdict: Verdict, state: CircuitState): Step => ({ at, settle: step, verdict, state });

/** Runs a script, checking each admission and the state after each step; returns the transitions. */
function run(steps: Step[], policy = POLICY): CircuitTransition[] {
  const transitions: CircuitTransition[] = [];
  const breaker = new CircuitBreaker(policy, (t) => transitions.push(t));
  const given: Admission[] = [];
  steps.forEach((step, i) => {
    if ('admit' in step) {
      const got = breaker.admit(step.at);
      given[i] = got;
      expect(got, `step ${i}: admission at ${step.at}`).toBe(step.admit);
    } else {
      breaker.settle(given[step.settle]!, step.verdict, step.at, `failure at ${step.at}`);
    }
    expect(breaker.state, `step ${i}: state`).toBe(step.state);
  });
  return transitions;
}

/** Sequential requests from `t0`, one each 10 ms, each settled with its verdict; the last one's state is `last`. */
function sequence(t0: number, verdicts: Verdict[], states: CircuitState[], offset: number): Step[] {
  const steps: Step[] = [];
  verdicts.forEach((verdict, i) => {
    const at = t0 + i * 10;
    steps.push(admit(at, 'watch', 'closed'));
    steps.push(settle(at, offset + 2 * i, verdict, states[i]!));
  });
  return steps;
}

/** Four failed requests from `t0` (the window's minimum, all failed): the circuit opens at the fourth. */
const fourFailures = (t0: number, offset = 0): Step[] => sequence(t0, ['failure', 'failure', 'failure', 'failure'], ['closed', 'closed', 'closed', 'open'], offset);

describe('CircuitBreaker', () => {
  it.each<[string, Step[], Partial<CircuitTransition>[], Partial<CircuitPolicy>?]>([
    ['below the minimum of attempts even all failures keep it closed', sequence(0, ['failure', 'failure', 'failure'], ['closed', 'closed', 'closed'], 0), []],
    ['opens when at least half of the window\'s attempts (the minimum reached) failed', [
      ...sequence(0, ['success', 'failure', 'success', 'failure'], ['closed', 'closed', 'closed', 'open'], 0),
    ], [{ from: 'closed', to: 'open', cause: 'failure-rate', attempts: 4, failed: 2, coolDownMs: 1_000 }]],
    ['a run of failures among many successes does not open it: the rate is judged, not the run', [
      ...sequence(0, ['success', 'success', 'success', 'success', 'success', 'success', 'failure', 'failure', 'failure'], ['closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'closed'], 0),
    ], []],
    ['attempts older than the window no longer count', [
      ...sequence(0, ['failure', 'failure', 'failure'], ['closed', 'closed', 'closed'], 0),
      // 1.2 s later the three failures are out of the window: one more is 1 of 1.
      admit(1_200, 'watch', 'closed'),
      settle(1_200, 6, 'failure', 'closed'),
    ], []],
    ['connections failing outright 3 times in a row open it below the minimum of attempts', [
      ...sequence(0, ['unreachable', 'unreachable', 'unreachable'], ['closed', 'closed', 'open'], 0),
    ], [{ to: 'open', cause: 'unanswered', unanswered: 3 }]],
    ['timeouts are no answer either: a hanging URL opens after 3', [
      ...sequence(0, ['timeout', 'unreachable', 'timeout'], ['closed', 'closed', 'open'], 0),
    ], [{ to: 'open', cause: 'unanswered', unanswered: 3 }], { minAttempts: 100 }],
    ['timeouts of requests not watched are left out of the run: many in flight to a slow receiver time out together', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      settle(5_000, 1, 'timeout', 'closed'),
      settle(5_000, 2, 'timeout', 'closed'),
      settle(5_000, 3, 'timeout', 'closed'),
      settle(5_000, 4, 'timeout', 'closed'),
      settle(5_000, 0, 'success', 'closed'),
    ], [], { minAttempts: 100 }],
    ['any answer between ends the run, a 503 too (the rate never reaches its minimum here)', [
      ...sequence(0, ['unreachable', 'timeout', 'failure', 'unreachable', 'timeout', 'failure', 'unreachable', 'unreachable', 'timeout'], ['closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'closed', 'open'], 0),
    ], [{ to: 'open', cause: 'unanswered', unanswered: 3 }], { minAttempts: 100 }],
    ['a success ends the run too', [
      ...sequence(0, ['unreachable', 'unreachable', 'success', 'unreachable', 'unreachable'], ['closed', 'closed', 'closed', 'closed', 'closed'], 0),
    ], [], { minAttempts: 100 }],
    ['a timeout counts as a failure in the rate', sequence(0, ['success', 'timeout', 'success', 'timeout'], ['closed', 'closed', 'closed', 'open'], 0), [{ to: 'open', cause: 'failure-rate', failed: 2 }]],
    ['503s in a row open it only through the rate', sequence(0, ['failure', 'failure', 'failure', 'failure', 'failure'], ['closed', 'closed', 'closed', 'closed', 'closed'], 0), [], { minAttempts: 6 }],
    ['open, the URL is skipped for the cool-down; then probes go, up to 2 at once', [
      ...fourFailures(0),
      admit(31, 'skip', 'open'),
      admit(1_029, 'skip', 'open'),
      admit(1_030, 'probe', 'half-open'),
      admit(1_031, 'probe', 'half-open'),
      admit(1_032, 'skip', 'half-open'),
    ], [{ to: 'open' }, { from: 'open', to: 'half-open' }]],
    ['one slow probe does not keep it shut: the other probe\'s success closes it', [
      ...fourFailures(0),
      admit(1_030, 'probe', 'half-open'),
      admit(1_031, 'probe', 'half-open'),
      settle(1_040, 9, 'success', 'closed'),
      admit(1_041, 'watch', 'closed'),
      settle(3_000, 8, 'timeout', 'closed'),
    ], [{ to: 'open' }, { to: 'half-open' }, { from: 'half-open', to: 'closed' }]],
    ['one failed probe frees no slot: the second decides; both failed re-open with the cool-down doubled, up to the maximum', [
      ...fourFailures(0),
      admit(1_030, 'probe', 'half-open'),
      settle(1_030, 8, 'timeout', 'half-open'),
      admit(1_031, 'probe', 'half-open'),
      admit(1_032, 'skip', 'half-open'),
      settle(1_033, 10, 'failure', 'open'),
      admit(3_032, 'skip', 'open'),
      admit(3_033, 'probe', 'half-open'),
      admit(3_033, 'probe', 'half-open'),
      settle(3_034, 14, 'unreachable', 'half-open'),
      settle(3_034, 15, 'unreachable', 'open'),
      admit(6_034, 'probe', 'half-open'),
      admit(6_034, 'probe', 'half-open'),
      settle(6_035, 18, 'failure', 'half-open'),
      settle(6_035, 19, 'failure', 'open'),
    ], [
      { to: 'open', coolDownMs: 1_000 },
      { to: 'half-open' },
      { to: 'open', cause: 'probes', coolDownMs: 2_000 },
      { to: 'half-open' },
      { to: 'open', cause: 'probes', coolDownMs: 3_000 },
      { to: 'half-open' },
      { to: 'open', cause: 'probes', coolDownMs: 3_000 },
    ]],
    ['a closed circuit starts a fresh window and the first cool-down again', [
      ...fourFailures(0),
      admit(1_030, 'probe', 'half-open'),
      admit(1_030, 'probe', 'half-open'),
      settle(1_031, 8, 'failure', 'half-open'),
      settle(1_031, 9, 'failure', 'open'),
      admit(3_031, 'probe', 'half-open'),
      settle(3_032, 12, 'success', 'closed'),
      // One failure right after closing: 1 of 1 attempts in the fresh window, below the minimum.
      admit(3_033, 'watch', 'closed'),
      settle(3_034, 14, 'failure', 'closed'),
      ...fourFailures(5_000, 16),
    ], [{ to: 'open' }, { to: 'half-open' }, { to: 'open', coolDownMs: 2_000 }, { to: 'half-open' }, { to: 'closed' }, { to: 'open', coolDownMs: 1_000 }]],
    ['a cancelled probe decides nothing and frees its slot', [
      ...fourFailures(0),
      admit(1_030, 'probe', 'half-open'),
      admit(1_030, 'probe', 'half-open'),
      admit(1_031, 'skip', 'half-open'),
      settle(1_032, 8, 'unknown', 'half-open'),
      admit(1_033, 'probe', 'half-open'),
    ], [{ to: 'open' }, { to: 'half-open' }]],
    ['one watched request at a time; the rest are plain sends, and their results count too', [
      admit(0, 'watch', 'closed'),
      admit(1, 'send', 'closed'),
      admit(2, 'send', 'closed'),
      admit(2, 'send', 'closed'),
      settle(3, 1, 'failure', 'closed'),
      settle(3, 2, 'failure', 'closed'),
      settle(3, 3, 'success', 'closed'),
      settle(4, 0, 'failure', 'open'),
    ], [{ to: 'open', attempts: 4, failed: 3 }]],
    ['cancelled requests count in neither direction', [
      ...sequence(0, ['unknown', 'unknown', 'unknown', 'failure', 'failure', 'failure'], ['closed', 'closed', 'closed', 'closed', 'closed', 'closed'], 0),
    ], []],
    ['late failures of requests sent before the circuit opened do not re-open it or double the cool-down', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      settle(1, 0, 'failure', 'closed'),
      settle(1, 1, 'failure', 'closed'),
      settle(1, 2, 'failure', 'closed'),
      settle(1, 3, 'failure', 'open'),
      settle(2, 4, 'failure', 'open'),
      admit(1_001, 'probe', 'half-open'),
    ], [{ to: 'open', coolDownMs: 1_000 }, { to: 'half-open' }]],
    ['a late success of a request sent before the circuit opened closes it: the URL answers', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      settle(1, 0, 'failure', 'closed'),
      admit(2, 'watch', 'closed'),
      settle(2, 3, 'failure', 'closed'),
      admit(3, 'watch', 'closed'),
      settle(3, 5, 'failure', 'closed'),
      admit(4, 'watch', 'closed'),
      settle(4, 7, 'failure', 'open'),
      settle(40, 1, 'success', 'closed'),
      admit(41, 'watch', 'closed'),
    ], [{ to: 'open' }, { to: 'closed' }]],
    ['a watched request whose result never comes back frees its slot after the lease', [
      admit(0, 'watch', 'closed'),
      admit(9_999, 'send', 'closed'),
      admit(10_000, 'watch', 'closed'),
    ], []],
    ['a probe whose result never comes back frees its slot after the lease', [
      ...fourFailures(0),
      admit(1_030, 'probe', 'half-open'),
      admit(1_030, 'probe', 'half-open'),
      admit(11_029, 'skip', 'half-open'),
      admit(11_030, 'probe', 'half-open'),
    ], [{ to: 'open' }, { to: 'half-open' }]],
  ])('%s', (_name, steps, expected, policy = {}) => {
    const transitions = run(steps, { ...POLICY, ...policy });
    expect(transitions).toHaveLength(expected.length);
    transitions.forEach((t, i) => expect(t).toMatchObject(expected[i]!));
  });

  it('nextAdmissionAt: now while closed, the end of the cool-down while open, the oldest probe\'s lease while every probe is out', () => {
    const breaker = new CircuitBreaker(POLICY);
    expect(breaker.nextAdmissionAt(5)).toBe(5);
    for (let i = 0; i < 4; i++) breaker.settle(breaker.admit(i), 'failure', i, '503');
    expect(breaker.state).toBe('open');
    expect(breaker.nextAdmissionAt(10)).toBe(3 + 1_000);
    expect(breaker.admit(1_003)).toBe('probe');
    expect(breaker.nextAdmissionAt(1_004)).toBe(1_004);
    expect(breaker.admit(1_005)).toBe('probe');
    expect(breaker.nextAdmissionAt(1_006)).toBe(1_003 + POLICY.trackedLeaseMs);
  });

  it('a receiver answering 80 % at once, 15 % 503 and 5 % timeouts never opens with the defaults (64 in flight, 10,000 requests)', () => {
    const policy = { ...DEFAULT_CIRCUIT_POLICY, trackedLeaseMs: 11_000 };
    const breaker = new CircuitBreaker(policy);
    // A fixed pseudo-random sequence (a linear congruential generator), so the run is the same every time.
    let seed = 42;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const inFlight: { admission: Admission; endsAt: number; verdict: Verdict }[] = [];
    let now = 0;
    for (let sent = 0; sent < 10_000; ) {
      while (inFlight.length < 64) {
        const roll = next();
        const verdict: Verdict = roll < 0.8 ? 'success' : roll < 0.95 ? 'failure' : 'timeout';
        inFlight.push({ admission: breaker.admit(now), endsAt: now + (verdict === 'timeout' ? 5_000 : 5), verdict });
        sent += 1;
      }
      inFlight.sort((a, b) => a.endsAt - b.endsAt);
      const done = inFlight.shift()!;
      now = done.endsAt;
      breaker.settle(done.admission, done.verdict, now);
      expect(breaker.state).toBe('closed');
    }
  });

  it('keeps the reason of the last failure for the dead-letter text', () => {
    const breaker = new CircuitBreaker(POLICY);
    breaker.settle(breaker.admit(0), 'failure', 0, '503 Service Unavailable');
    breaker.settle(breaker.admit(1), 'timeout', 1, 'no complete answer within 5s');
    expect(breaker.lastFailure).toBe('no complete answer within 5s');
    expect(breaker.failures).toBe(2);
    expect(breaker.windowTotals(2)).toEqual({ attempts: 2, failed: 2 });
  });

  it('a reload\'s new thresholds apply to the next result', () => {
    const breaker = new CircuitBreaker(POLICY);
    for (let i = 0; i < 3; i++) breaker.settle(breaker.admit(i), 'failure', i);
    breaker.updatePolicy({ ...POLICY, minAttempts: 10 });
    breaker.settle(breaker.admit(4), 'failure', 4);
    expect(breaker.state).toBe('closed');
    breaker.updatePolicy({ ...POLICY, minAttempts: 3 });
    breaker.settle(breaker.admit(5), 'failure', 5);
    expect(breaker.state).toBe('open');
  });

  it.each<[string, Partial<CircuitPolicy>]>([
    ['minAttempts 0', { minAttempts: 0 }],
    ['minAttempts 1.5', { minAttempts: 1.5 }],
    ['unanswered 0', { unanswered: 0 }],
    ['probes 0', { probes: 0 }],
    ['failureRatio 0', { failureRatio: 0 }],
    ['failureRatio 1.5', { failureRatio: 1.5 }],
    ['windowMs 0', { windowMs: 0 }],
  ])('refuses %s', (_name, bad) => {
    expect(() => new CircuitBreaker({ ...POLICY, ...bad })).toThrow(RangeError);
  });
});

describe('circuitPolicy', () => {
  const delivery = (maxRetryWindowMs: number, timeoutMs = 5_000) => ({ timeoutMs, retryTiers: [], maxRetryWindowMs, concurrencyPerDestination: 64, bufferBudgetBytes: 64 * 1024 * 1024, blockPrivateNetworks: false, transactionalMoves: false });

  it.each<[string, number, Partial<CircuitPolicy>, Partial<CircuitPolicy>, Partial<CircuitPolicy>]>([
    ['the documented defaults with the 4 h window', 4 * 3_600_000, {}, {}, { windowMs: 10_000, minAttempts: 20, failureRatio: 0.5, unanswered: 5, coolDownMs: 30_000, maxCoolDownMs: 600_000, probes: 3, trackedLeaseMs: 11_000 }],
    ['a 1 min window: cool-downs up to 15 s', 60_000, {}, {}, { coolDownMs: 15_000, maxCoolDownMs: 15_000 }],
    ['a 6 s window: cool-downs of 1.5 s', 6_000, {}, {}, { coolDownMs: 1_500, maxCoolDownMs: 1_500 }],
    ['tuning shortens the cool-down', 4 * 3_600_000, { coolDownMs: 2_000 }, {}, { coolDownMs: 2_000, maxCoolDownMs: 600_000 }],
    ['the config\'s settings win over the tuning', 4 * 3_600_000, { coolDownMs: 2_000 }, { coolDownMs: 5_000, minAttempts: 50 }, { coolDownMs: 5_000, minAttempts: 50 }],
  ])('%s', (_name, windowMs, tuning, overrides, expected) => {
    expect(circuitPolicy(delivery(windowMs), tuning, overrides)).toMatchObject(expected);
  });
});
