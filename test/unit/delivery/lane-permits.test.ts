import { describe, expect, it } from 'vitest';
import type { PreparedDestination } from '../../../src/delivery/destination-settings.js';
import { LanePermits } from '../../../src/delivery/lane-permits.js';
import type { Admission } from '../../../src/delivery/lane-permits.js';
import type { Admitted } from '../../../src/delivery/url-circuits.js';

const T0 = Date.UTC(2026, 4, 1, 12, 0, 0);
const settings = {} as PreparedDestination;

/** Circuits that admit `send` (a bit per URL) or, with `openUntil`, have every URL open; a pace that asks `paceMs`. Logs what it was asked. */
function permitsWith(capacity: number, world: { send?: number; openUntil?: number; paceMs?: number }) {
  const log: string[] = [];
  const circuits = {
    allOpenUntil: () => world.openUntil,
    admit: (): Admitted => ({ send: world.send ?? 1, keep: world.send ?? 1, probe: 0, skipped: 0, breakers: [] }),
    abandon: (admitted: Admitted, nowMs: number) => void log.push(`abandon ${admitted.send} at ${nowMs - T0}`),
  };
  const pace = { reserve: (_s: PreparedDestination, requests: number) => (log.push(`reserve ${requests}`), world.paceMs ?? 0) };
  return { permits: new LanePermits<string>(capacity, circuits, pace), log };
}

describe('LanePermits.admit', () => {
  it.each<[string, number, { send?: number; openUntil?: number; paceMs?: number }, boolean, Admission, number, string[]]>([
    // name, capacity, world, windows ended, admission, permits in use after, calls
    ['one URL: one permit, one token', 4, { send: 0b1 }, false, { grant: { admitted: expect.anything() as Admitted, requests: 1, weight: 1 }, paceMs: 0 }, 1, ['reserve 1']],
    ['three URLs: three permits, three tokens', 4, { send: 0b111 }, false, { grant: { admitted: expect.anything() as Admitted, requests: 3, weight: 3 }, paceMs: 0 }, 3, ['reserve 3']],
    ['more URLs than permits: all of them', 2, { send: 0b111 }, false, { grant: { admitted: expect.anything() as Admitted, requests: 3, weight: 3 }, paceMs: 0 }, 2, ['reserve 3']],
    ['no URL sent to (circuits open, window ended): one permit, no token', 4, { send: 0 }, false, { grant: { admitted: expect.anything() as Admitted, requests: 0, weight: 1 }, paceMs: 0 }, 1, ['reserve 0']],
    ['tokens not there yet: it waits, its permits held', 4, { send: 0b1, paceMs: 250 }, false, { grant: { admitted: expect.anything() as Admitted, requests: 1, weight: 1 }, paceMs: 250 }, 1, ['reserve 1']],
    ['every URL open: no permit taken, the time they open', 4, { openUntil: T0 + 5_000 }, false, { circuitsOpenUntilMs: T0 + 5_000 }, 0, []],
    ['every URL open, every window ended: it goes', 4, { send: 0, openUntil: T0 + 5_000 }, true, { grant: { admitted: expect.anything() as Admitted, requests: 0, weight: 1 }, paceMs: 0 }, 1, ['reserve 0']],
  ])('%s', (_name, capacity, world, windowsEnded, admission, inUse, calls) => {
    const { permits, log } = permitsWith(capacity, world);
    expect(permits.admit(settings, () => windowsEnded, T0)).toEqual(admission);
    expect(permits.inUse).toBe(inUse);
    expect(log).toEqual(calls);
  });

  it('no permit free: nothing taken, the circuits given back what they admitted', () => {
    const { permits, log } = permitsWith(2, { send: 0b11 });
    expect(permits.admit(settings, () => false, T0)).not.toBe('no-permit');
    expect(permits.allTaken).toBe(true);
    expect(permits.admit(settings, () => false, T0 + 1)).toBe('no-permit');
    expect(permits.inUse).toBe(2);
    expect(log).toEqual(['reserve 2', 'abandon 3 at 1']);
  });

  it('a request that ended frees its permits; one that never went gives back its admission too', () => {
    const { permits, log } = permitsWith(4, { send: 0b11 });
    const first = permits.admit(settings, () => false, T0);
    const second = permits.admit(settings, () => false, T0);
    if (typeof first !== 'object' || !('grant' in first) || typeof second !== 'object' || !('grant' in second)) throw new Error('both should go');
    expect(permits.allTaken).toBe(true);
    permits.release(first.grant);
    expect(permits.inUse).toBe(2);
    permits.giveBack(second.grant, T0 + 7);
    expect(permits.inUse).toBe(0);
    expect(log).toEqual(['reserve 2', 'reserve 2', 'abandon 3 at 7']);
  });
});

describe('LanePermits, the paced request', () => {
  it('holds one request until it is sent or given back', () => {
    const { permits } = permitsWith(4, { send: 0b1, paceMs: 300 });
    const admission = permits.admit(settings, () => false, T0);
    if (typeof admission !== 'object' || !('grant' in admission)) throw new Error('it should go');
    expect(permits.paced).toBeUndefined();
    expect(admission.paceMs).toBe(300);
    permits.wait('event 7', admission.grant);
    expect(permits.paced).toBe('event 7');
    expect(() => permits.wait('event 8', admission.grant)).toThrow(/paced already/);
    expect(permits.unpace()).toEqual({ request: 'event 7', grant: admission.grant });
    expect(permits.paced).toBeUndefined();
    expect(permits.unpace()).toBeUndefined();
    expect(permits.inUse).toBe(1); // its permits stay taken until it ends
  });
});
