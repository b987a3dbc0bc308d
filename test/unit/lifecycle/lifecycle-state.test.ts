import { describe, expect, it } from 'vitest';
import { INITIAL_LIFECYCLE, applyTransition, parseTransitionRequest, retryWindowExtension } from '../../../src/lifecycle/lifecycle-state.js';
import type { DestinationLifecycle, TransitionRequest } from '../../../src/lifecycle/lifecycle-state.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);
const failing = (at: number, share: number): TransitionRequest => ({ kind: 'failing', destination: 'd', at, noSuccessSince: T0, share, attempts: 7 });
const autoDisable = (at: number): TransitionRequest => ({ kind: 'disable', destination: 'd', at, by: 'switchyard', reason: 'no success', automatic: true });
const manualDisable = (at: number): TransitionRequest => ({ kind: 'disable', destination: 'd', at, by: 'ops', reason: 'maintenance', automatic: false });
const enable = (at: number): TransitionRequest => ({ kind: 'enable', destination: 'd', at, by: 'ops', reason: 'fixed' });
const recovered = (at: number): TransitionRequest => ({ kind: 'recovered', destination: 'd', at, succeededAt: at - 10 });

/** Folds requests as every process does; returns the final state and the event types accepted. */
function fold(requests: TransitionRequest[]): { state: DestinationLifecycle; types: string[] } {
  let state = INITIAL_LIFECYCLE;
  const types: string[] = [];
  for (const request of requests) {
    const accepted = applyTransition(state, request);
    if (accepted === undefined) continue;
    state = accepted.next;
    types.push(accepted.entry.type);
  }
  return { state, types };
}

describe('applyTransition', () => {
  it.each([
    ['active → failing → failing 90 % → disabled', [failing(T0 + 500, 0.5), failing(T0 + 900, 0.9), autoDisable(T0 + 1000)], 'disabled', ['destination.failing', 'destination.failing', 'destination.disabled']],
    ['a second pod saying failing again is ignored', [failing(T0 + 500, 0.5), failing(T0 + 501, 0.5)], 'failing', ['destination.failing']],
    ['a share already announced is not announced again', [failing(T0 + 900, 0.9), failing(T0 + 901, 0.5), failing(T0 + 902, 0.9)], 'failing', ['destination.failing']],
    ['an automatic disable after a recovery is ignored', [failing(T0 + 500, 0.5), recovered(T0 + 600), autoDisable(T0 + 1000)], 'active', ['destination.failing', 'destination.recovered']],
    ['an automatic disable of an active destination is ignored', [autoDisable(T0)], 'active', []],
    ['a manual disable applies whatever the state', [manualDisable(T0)], 'disabled', ['destination.disabled']],
    ['a late failing does not undo a disable', [failing(T0 + 500, 0.5), autoDisable(T0 + 1000), failing(T0 + 1001, 0.9)], 'disabled', ['destination.failing', 'destination.disabled']],
    ['two pods disabling make one transition', [failing(T0 + 500, 0.5), autoDisable(T0 + 1000), autoDisable(T0 + 1001)], 'disabled', ['destination.failing', 'destination.disabled']],
    ['enable of an active destination is ignored', [enable(T0)], 'active', []],
    ['enable after disable', [manualDisable(T0), enable(T0 + 5000), enable(T0 + 5001)], 'active', ['destination.disabled', 'destination.enabled']],
    ['recovered while active is ignored', [recovered(T0)], 'active', []],
  ] as const)('%s', (_name, requests, state, types) => {
    const result = fold([...requests]);
    expect(result.state.state).toBe(state);
    expect(result.types).toEqual(types);
  });

  it('keeps who disabled and why, and the history of transitions', () => {
    const { state } = fold([failing(T0 + 500, 0.5), manualDisable(T0 + 700)]);
    expect(state).toMatchObject({ state: 'disabled', since: T0 + 700, by: 'ops', reason: 'maintenance' });
    expect(state.history.map((h) => [h.type, h.at, h.by])).toEqual([
      ['destination.failing', T0 + 500, undefined],
      ['destination.disabled', T0 + 700, 'ops'],
    ]);
    expect(state.failingSince).toBeUndefined();
  });

  it('an enable resets the clock, forgets who disabled, and remembers how long it was disabled', () => {
    const { state } = fold([manualDisable(T0), enable(T0 + 60_000)]);
    expect(state).toMatchObject({ state: 'active', since: T0 + 60_000, resetAt: T0 + 60_000, resumed: { at: T0 + 60_000, disabledMs: 60_000 } });
    expect(state.by).toBeUndefined();
    expect(state.reason).toBeUndefined();
  });

  it("the disabled event's details name who, why and whether it was automatic", () => {
    const failed = applyTransition(INITIAL_LIFECYCLE, failing(T0 + 500, 0.5))!;
    const disabled = applyTransition(failed.next, autoDisable(T0 + 1000))!;
    expect(disabled.details).toEqual({ by: 'switchyard', reason: 'no success', automatic: true, failingSince: new Date(T0).toISOString() });
    expect(failed.details).toEqual({ noSuccessSince: new Date(T0).toISOString(), share: 0.5, attempts: 7 });
  });
});

describe('retryWindowExtension', () => {
  const enabledAgain = fold([manualDisable(T0), enable(T0 + 10_000)]).state;
  it('is the time spent disabled, for one window after the enable', () => {
    expect(retryWindowExtension(enabledAgain, 4_000, T0 + 10_001)).toEqual({ extraMs: 10_000, untilMs: T0 + 10_000 + 4_000 + 10_000 });
    expect(retryWindowExtension(enabledAgain, 4_000, T0 + 24_000)).toBeUndefined();
  });
  it('is nothing for a destination never disabled, or disabled now', () => {
    expect(retryWindowExtension(INITIAL_LIFECYCLE, 4_000, T0)).toBeUndefined();
    expect(retryWindowExtension(fold([manualDisable(T0)]).state, 4_000, T0 + 1)).toBeUndefined();
  });
});

describe('parseTransitionRequest', () => {
  it('reads back what was written, and refuses what is not a request', () => {
    for (const request of [failing(T0, 0.5), autoDisable(T0), enable(T0), recovered(T0)]) expect(parseTransitionRequest(JSON.parse(JSON.stringify(request)))).toEqual(request);
    expect(parseTransitionRequest({ kind: 'disable', destination: 'd', at: T0 })).toBeUndefined();
    expect(parseTransitionRequest({ kind: 'explode', destination: 'd', at: T0 })).toBeUndefined();
    expect(parseTransitionRequest('enable')).toBeUndefined();
  });
});
