import { describe, expect, it } from 'vitest';
import { fetchWait } from '../../../src/delivery/fetch-wait.js';

const settings = { maxWaitTimeInMs: 500, idleWaitTimeInMs: 3_000, idleAfterMs: 10_000 };
const now = 1_000_000;
const idleSince = now - 10_000;

describe('fetch wait of a partition stream', () => {
  it.each([
    ['records fetched within idleAfterMs', { lastRecordsAt: now - 9_999, resumeTimes: [] }, 500],
    ['idle, nothing paused', { lastRecordsAt: idleSince, resumeTimes: [] }, 3_000],
    ['idle, a partition paused for room (may resume any moment)', { lastRecordsAt: idleSince, resumeTimes: [now + 60_000, undefined] }, 500],
    ['idle, a retry due before the idle wait ends', { lastRecordsAt: idleSince, resumeTimes: [now + 60_000, now + 2_999] }, 500],
    ['idle, a retry overdue (its partition still paused)', { lastRecordsAt: idleSince, resumeTimes: [now - 1] }, 500],
    ['idle, every retry due after the idle wait', { lastRecordsAt: idleSince, resumeTimes: [now + 3_000, now + 3_600_000] }, 3_000],
  ])('%s', (_, state, expected) => {
    expect(fetchWait(settings, { now, ...state })).toBe(expected);
  });

  it('has no idle mode without an idle wait, or with one no longer than the fetch wait', () => {
    const idle = { now, lastRecordsAt: idleSince, resumeTimes: [] };
    expect(fetchWait({ maxWaitTimeInMs: 500 }, idle)).toBe(500);
    expect(fetchWait({ maxWaitTimeInMs: 500, idleWaitTimeInMs: 400 }, idle)).toBe(500);
  });

  it('waits the room wait while a partition is paused for room, records flowing or not', () => {
    const room = { ...settings, roomWaitTimeInMs: 50 };
    expect(fetchWait(room, { now, lastRecordsAt: now, resumeTimes: [undefined] })).toBe(50);
    expect(fetchWait(room, { now, lastRecordsAt: idleSince, resumeTimes: [now + 60_000, undefined] })).toBe(50);
    expect(fetchWait(room, { now, lastRecordsAt: idleSince, resumeTimes: [now + 100] })).toBe(500);
    expect(fetchWait(room, { now, lastRecordsAt: now, resumeTimes: [] })).toBe(500);
    // Never longer than the fetch wait.
    expect(fetchWait({ ...settings, roomWaitTimeInMs: 900 }, { now, lastRecordsAt: now, resumeTimes: [undefined] })).toBe(500);
  });

  it('waits 2 s without records before it goes idle, unless told otherwise', () => {
    const state = { now, lastRecordsAt: now - 1_999, resumeTimes: [] };
    expect(fetchWait({ maxWaitTimeInMs: 500, idleWaitTimeInMs: 3_000 }, state)).toBe(500);
    expect(fetchWait({ maxWaitTimeInMs: 500, idleWaitTimeInMs: 3_000 }, { ...state, lastRecordsAt: now - 2_000 })).toBe(3_000);
    expect(fetchWait({ maxWaitTimeInMs: 500, idleWaitTimeInMs: 3_000, idleAfterMs: 1_000 }, state)).toBe(3_000);
  });
});
