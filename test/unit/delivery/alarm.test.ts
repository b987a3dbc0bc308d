import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Alarm } from '../../../src/delivery/alarm.js';

describe('Alarm', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each<[string, (number | undefined)[], number[]]>([
    // name, times asked for (at time 0), the times it rang
    ['rings once at the time asked for', [100], [100]],
    ['a later time keeps the earlier one', [100, 300], [100]],
    ['an earlier time moves it', [300, 100], [100]],
    ['undefined asks for nothing', [undefined], []],
  ])('%s', async (_name, asked, rang) => {
    const rings: number[] = [];
    const alarm = new Alarm(() => rings.push(Date.now()));
    for (const at of asked) alarm.at(at, Date.now());
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rings).toEqual(rang);
  });

  it('asked again once it rang, rings again; cleared, it does not', async () => {
    const rings: number[] = [];
    const alarm = new Alarm(() => rings.push(Date.now()));
    alarm.at(100, 0);
    await vi.advanceTimersByTimeAsync(100);
    alarm.at(250, Date.now());
    await vi.advanceTimersByTimeAsync(200);
    alarm.at(400, Date.now());
    alarm.clear();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(rings).toEqual([100, 250]);
  });
});
