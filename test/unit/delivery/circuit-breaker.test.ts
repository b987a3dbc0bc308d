import { describe, expect, it } from 'vitest';
import { CircuitBreaker } from '../../../src/delivery/circuit-breaker.js';
import type { Admission, CircuitPolicy, CircuitState, CircuitTransition, Verdict } from '../../../src/delivery/circuit-breaker.js';
import { circuitPolicy } from '../../../src/delivery/deliverer-service.js';

const POLICY: CircuitPolicy = { failureThreshold: 3, coolDownMs: 1_000, maxCoolDownMs: 3_000, trackedLeaseMs: 10_000 };

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

/** Three sequential requests that each fail: the circuit opens at `t0 + 2`. */
const threeFailures = (t0: number): Step[] => [
  admit(t0, 'watch', 'closed'),
  settle(t0, 0, 'failure', 'closed'),
  admit(t0 + 1, 'watch', 'closed'),
  settle(t0 + 1, 2, 'failure', 'closed'),
  admit(t0 + 2, 'watch', 'closed'),
  settle(t0 + 2, 4, 'failure', 'open'),
];

describe('CircuitBreaker', () => {
  it.each<[string, Step[], Partial<CircuitTransition>[]]>([
    ['stays closed below the threshold; a success resets the count', [
      admit(0, 'watch', 'closed'),
      settle(0, 0, 'failure', 'closed'),
      admit(1, 'watch', 'closed'),
      settle(1, 2, 'failure', 'closed'),
      admit(2, 'watch', 'closed'),
      settle(2, 4, 'success', 'closed'),
      admit(3, 'watch', 'closed'),
      settle(3, 6, 'failure', 'closed'),
      admit(4, 'watch', 'closed'),
      settle(4, 8, 'failure', 'closed'),
    ], []],
    ['opens after the threshold of consecutive failures and skips the URL for the cool-down', [
      ...threeFailures(0),
      admit(3, 'skip', 'open'),
      admit(1_001, 'skip', 'open'),
    ], [{ from: 'closed', to: 'open', failures: 3, coolDownMs: 1_000 }]],
    ['after the cool-down one probe goes out, others are skipped; its success closes the circuit', [
      ...threeFailures(0),
      admit(1_002, 'probe', 'half-open'),
      admit(1_003, 'skip', 'half-open'),
      settle(1_010, 6, 'success', 'closed'),
      admit(1_011, 'watch', 'closed'),
    ], [{ to: 'open' }, { from: 'open', to: 'half-open' }, { from: 'half-open', to: 'closed', failures: 0 }]],
    ['a failed probe re-opens with the cool-down doubled, up to the maximum', [
      ...threeFailures(0),
      admit(1_002, 'probe', 'half-open'),
      settle(1_002, 6, 'failure', 'open'),
      admit(3_001, 'skip', 'open'),
      admit(3_002, 'probe', 'half-open'),
      settle(3_002, 9, 'failure', 'open'),
      admit(6_001, 'skip', 'open'),
      admit(6_002, 'probe', 'half-open'),
      settle(6_002, 12, 'failure', 'open'),
      admit(9_001, 'skip', 'open'),
      admit(9_002, 'probe', 'half-open'),
    ], [
      { to: 'open', coolDownMs: 1_000 },
      { to: 'half-open' },
      { to: 'open', failures: 4, coolDownMs: 2_000 },
      { to: 'half-open' },
      { to: 'open', failures: 5, coolDownMs: 3_000 },
      { to: 'half-open' },
      { to: 'open', failures: 6, coolDownMs: 3_000 },
      { to: 'half-open' },
    ]],
    ['a success after a failed probe resets the cool-down to the first one', [
      ...threeFailures(0),
      admit(1_002, 'probe', 'half-open'),
      settle(1_002, 6, 'failure', 'open'),
      admit(3_002, 'probe', 'half-open'),
      settle(3_002, 8, 'success', 'closed'),
      ...threeFailures(4_000).map((s) => ('settle' in s ? { ...s, settle: s.settle + 10 } : s)),
      admit(5_001, 'skip', 'open'),
      admit(5_002, 'probe', 'half-open'),
    ], [{ to: 'open' }, { to: 'half-open' }, { to: 'open', coolDownMs: 2_000 }, { to: 'half-open' }, { to: 'closed' }, { to: 'open', coolDownMs: 1_000 }, { to: 'half-open' }]],
    ['a cancelled probe decides nothing: the next request is the probe', [
      ...threeFailures(0),
      admit(1_002, 'probe', 'half-open'),
      admit(1_003, 'skip', 'half-open'),
      settle(1_004, 6, 'unknown', 'half-open'),
      admit(1_005, 'probe', 'half-open'),
    ], [{ to: 'open' }, { to: 'half-open' }]],
    ['one watched request at a time; the rest are plain sends, and their results count too', [
      admit(0, 'watch', 'closed'),
      admit(1, 'send', 'closed'),
      admit(2, 'send', 'closed'),
      settle(3, 1, 'failure', 'closed'),
      settle(3, 2, 'failure', 'closed'),
      settle(4, 0, 'failure', 'open'),
    ], [{ to: 'open', failures: 3 }]],
    ['cancelled requests neither count nor reset the count', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      settle(1, 1, 'unknown', 'closed'),
      settle(1, 0, 'failure', 'closed'),
      admit(2, 'watch', 'closed'),
      settle(3, 4, 'failure', 'closed'),
      admit(4, 'watch', 'closed'),
      admit(4, 'send', 'closed'),
      settle(5, 7, 'unknown', 'closed'),
      settle(5, 6, 'failure', 'open'),
    ], [{ to: 'open', failures: 3 }]],
    ['late failures of requests sent before the circuit opened do not re-open it or double the cool-down', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      admit(0, 'send', 'closed'),
      settle(1, 0, 'failure', 'closed'),
      settle(1, 1, 'failure', 'closed'),
      settle(1, 2, 'failure', 'open'),
      settle(2, 3, 'failure', 'open'),
      admit(1_001, 'probe', 'half-open'),
    ], [{ to: 'open', coolDownMs: 1_000 }, { to: 'half-open' }]],
    ['a late success of a request sent before the circuit opened closes it: the URL answers', [
      admit(0, 'watch', 'closed'),
      admit(0, 'send', 'closed'),
      settle(1, 0, 'failure', 'closed'),
      admit(1, 'watch', 'closed'),
      settle(2, 3, 'failure', 'closed'),
      admit(2, 'watch', 'closed'),
      settle(3, 5, 'failure', 'open'),
      settle(4, 1, 'success', 'closed'),
      admit(5, 'watch', 'closed'),
    ], [{ to: 'open' }, { to: 'closed' }]],
    ['a watched request whose result never comes back frees its slot after the lease', [
      admit(0, 'watch', 'closed'),
      admit(9_999, 'send', 'closed'),
      admit(10_000, 'watch', 'closed'),
    ], []],
  ])('%s', (_name, steps, expected) => {
    const transitions = run(steps);
    expect(transitions).toHaveLength(expected.length);
    transitions.forEach((t, i) => expect(t).toMatchObject(expected[i]!));
  });

  it('keeps the reason of the last failure for the dead-letter text', () => {
    const breaker = new CircuitBreaker(POLICY);
    breaker.settle(breaker.admit(0), 'failure', 0, '503 Service Unavailable');
    breaker.settle(breaker.admit(1), 'failure', 1, 'no complete answer within 5s');
    expect(breaker.lastFailure).toBe('no complete answer within 5s');
    expect(breaker.failures).toBe(2);
  });

  it('the defaults of docs/webhooks.md#delivery-and-retries open after 5 failures for 30 s', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 5, coolDownMs: 30_000, maxCoolDownMs: 600_000, trackedLeaseMs: 11_000 });
    for (let i = 0; i < 5; i++) breaker.settle(breaker.admit(i), 'failure', i, '500');
    expect(breaker.state).toBe('open');
    expect(breaker.openUntil).toBe(4 + 30_000);
  });

  it('refuses a threshold that is not a positive whole number', () => {
    expect(() => new CircuitBreaker({ ...POLICY, failureThreshold: 0 })).toThrow(RangeError);
    expect(() => new CircuitBreaker({ ...POLICY, failureThreshold: 1.5 })).toThrow(RangeError);
  });
});

describe('circuitPolicy', () => {
  const delivery = (maxRetryWindowMs: number, timeoutMs = 5_000) => ({ timeoutMs, retryTiers: [], maxRetryWindowMs, concurrencyPerDestination: 64, blockPrivateNetworks: false });

  it.each<[string, number, Partial<CircuitPolicy>, Partial<CircuitPolicy>]>([
    ['the DESIGN defaults with the 4 h window', 4 * 3_600_000, {}, { failureThreshold: 5, coolDownMs: 30_000, maxCoolDownMs: 600_000, trackedLeaseMs: 11_000 }],
    ['a 1 min window: cool-downs up to 15 s', 60_000, {}, { coolDownMs: 15_000, maxCoolDownMs: 15_000 }],
    ['a 6 s window: cool-downs of 1.5 s', 6_000, {}, { coolDownMs: 1_500, maxCoolDownMs: 1_500 }],
    ['tuning shortens the cool-down', 4 * 3_600_000, { coolDownMs: 2_000 }, { coolDownMs: 2_000, maxCoolDownMs: 600_000 }],
  ])('%s', (_name, windowMs, tuning, expected) => {
    expect(circuitPolicy(delivery(windowMs), tuning)).toMatchObject(expected);
  });
});
