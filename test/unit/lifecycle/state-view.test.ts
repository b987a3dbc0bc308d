import { describe, expect, it } from 'vitest';
import { readStateRecord } from '../../../src/lifecycle/state-records.js';
import type { StateRecord } from '../../../src/lifecycle/state-records.js';
import { StateView } from '../../../src/lifecycle/state-view.js';
import { effectiveConfig, heldConfig } from '../../../src/lifecycle/effective-config.js';
import { testConfig } from '../../support/config.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);
const MINUTE = T0 - (T0 % 60_000);

/** A record as it is read back from the topic (through the same parser). */
function record(key: string, value: unknown): StateRecord | undefined {
  return readStateRecord(Buffer.from(key), value === null ? null : Buffer.from(JSON.stringify(value)));
}

describe('StateView', () => {
  it('makes one event of two pods writing the same transition, and says which record it was', () => {
    const view = new StateView();
    const failing = { kind: 'failing', destination: 'd', at: T0, noSuccessSince: T0 - 5_000, share: 0.5, attempts: 4 };
    const first = view.apply(0n, record('transition/d/1-a', failing));
    const second = view.apply(1n, record('transition/d/2-b', { ...failing, at: T0 + 1 }));
    expect(first).toMatchObject({ id: 'evt_transition/d/1-a', type: 'destination.failing', destination: 'd', state: 'failing', share: 0.5, at: new Date(T0).toISOString() });
    expect(second).toBeUndefined();
    expect(view.eventAt(0n)).toBe(first);
    expect(view.eventAt(1n)).toBeUndefined();
    expect(view.outcomeOf('transition/d/1-a')).toBe(first);
    expect(view.outcomeOf('transition/d/2-b')).toBeNull();
    expect(view.outcomeOf('transition/d/3-c')).toBeUndefined();
  });

  it('skips records it already folded and records that are not its own', () => {
    const view = new StateView();
    view.apply(5n, record('transition/d/1-a', { kind: 'disable', destination: 'd', at: T0, by: 'ops', reason: 'x', automatic: false }));
    expect(view.apply(5n, record('transition/d/1-a', { kind: 'enable', destination: 'd', at: T0, by: 'ops' }))).toBeUndefined();
    expect(view.apply(6n, readStateRecord(Buffer.from('something/else'), Buffer.from('{}')))).toBeUndefined();
    expect(view.apply(7n, readStateRecord(Buffer.from('transition/d/2'), Buffer.from('not json')))).toBeUndefined();
    expect(view.lifecycle('d').state).toBe('disabled');
    expect(view.nextOffset()).toBe(8n);
    expect([...view.disabled()]).toEqual(['d']);
  });

  it("keeps each pod's latest attempt report, and forgets one on its tombstone", () => {
    const view = new StateView();
    view.apply(0n, record('report/d/pod-a/1', { destination: 'd', instance: 'pod-a/1', at: T0, failures: [{ from: T0, to: T0, count: 2 }] }));
    view.apply(1n, record('report/d/pod-a/1', { destination: 'd', instance: 'pod-a/1', at: T0 + 1, failures: [{ from: T0, to: T0 + 1, count: 5 }] }));
    view.apply(2n, record('report/d/pod-b/2', { destination: 'd', instance: 'pod-b/2', at: T0, lastSuccessAt: T0, failures: [] }));
    expect(view.reportsOf('d').map((r) => [r.instance, r.failures.length, r.failures[0]?.count])).toEqual([
      ['pod-a/1', 1, 5],
      ['pod-b/2', 0, undefined],
    ]);
    view.apply(3n, record('report/d/pod-a/1', null));
    expect(view.reportsOf('d').map((r) => r.instance)).toEqual(['pod-b/2']);
  });

  it("sums every pod's dead letters of a minute once they are due, and takes the first summary only", () => {
    const view = new StateView();
    view.apply(0n, record(`deadletters/d/${MINUTE}/pod-a`, { destination: 'd', minute: MINUTE, instance: 'pod-a', count: 2, sample: ['m-1', 'm-2'] }));
    view.apply(1n, record(`deadletters/d/${MINUTE}/pod-b`, { destination: 'd', minute: MINUTE, instance: 'pod-b', count: 1, sample: ['m-3'] }));
    expect(view.deadLetterMinutesDue(MINUTE + 59_999)).toEqual([]);
    expect(view.deadLetterMinutesDue(MINUTE + 60_000)).toEqual([{ destination: 'd', minute: MINUTE, count: 3, messageIds: ['m-1', 'm-2', 'm-3'] }]);
    const summary = { kind: 'dead_lettered', destination: 'd', at: MINUTE + 61_000, minute: MINUTE, count: 3, messageIds: ['m-1', 'm-2', 'm-3'] };
    const event = view.apply(2n, record('transition/d/x-1', summary));
    expect(event).toMatchObject({ type: 'message.dead_lettered', destination: 'd', state: 'active', minute: new Date(MINUTE).toISOString(), count: 3, messageIds: ['m-1', 'm-2', 'm-3'] });
    expect(view.apply(3n, record('transition/d/x-2', { ...summary, count: 4 }))).toBeUndefined();
    expect(view.summedUp('d', MINUTE)).toBe(true);
    // A pod's report that comes after the summary is not summed again.
    view.apply(4n, record(`deadletters/d/${MINUTE}/pod-c`, { destination: 'd', minute: MINUTE, instance: 'pod-c', count: 1, sample: ['m-4'] }));
    expect(view.deadLetterMinutesDue(MINUTE + 120_000)).toEqual([]);
  });
});

describe('effectiveConfig', () => {
  const config = testConfig({
    sources: [{ id: 'web', writeKey: 'k' }],
    delivery: { maxRetryWindow: '1h' },
    destinations: [
      { id: 'on', type: 'webhooks', settings: { webhooks: [{ url: 'https://a.example.com/' }] } },
      { id: 'off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: 'https://b.example.com/' }] } },
      { id: 'back', type: 'webhooks', settings: { webhooks: [{ url: 'https://c.example.com/' }], retry: { maxWindow: '10m' } } },
    ],
  });
  const view = new StateView();
  view.apply(0n, record('transition/on/1', { kind: 'disable', destination: 'on', at: T0, by: 'ops', reason: 'x', automatic: false }));
  view.apply(1n, record('transition/off/1', { kind: 'disable', destination: 'off', at: T0, by: 'ops', reason: 'x', automatic: false }));
  view.apply(2n, record('transition/back/1', { kind: 'disable', destination: 'back', at: T0, by: 'ops', reason: 'x', automatic: false }));
  view.apply(3n, record('transition/back/2', { kind: 'enable', destination: 'back', at: T0 + 120_000, by: 'ops' }));

  it('turns a destination disabled in the state off, keeps enabled: false, and lengthens the window of one enabled again by the time it was off', () => {
    const { config: effective, nextChangeAtMs } = effectiveConfig(config, (id) => view.lifecycle(id), T0 + 180_000);
    expect(effective.destinations.map((d) => [d.id, d.enabled])).toEqual([
      ['on', false],
      ['off', false],
      ['back', true],
    ]);
    expect(effective.destinations[2]!.settings.retry?.maxWindowMs).toBe(600_000 + 120_000);
    expect(nextChangeAtMs).toBe(T0 + 120_000 + 600_000 + 120_000);
    expect(config.destinations[0]!.enabled).toBe(true);
  });

  it('ends the longer window one window after the enable', () => {
    const { config: effective } = effectiveConfig(config, (id) => view.lifecycle(id), T0 + 120_000 + 720_000);
    expect(effective.destinations[2]!.settings.retry?.maxWindowMs).toBe(600_000);
  });

  it('holds every destination back until the states are read', () => {
    expect(heldConfig(config).destinations.map((d) => d.enabled)).toEqual([false, false, false]);
  });
});
