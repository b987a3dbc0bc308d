import { describe, expect, it } from 'vitest';
import { onceStop, runAll } from '../../src/runtime/service.js';

describe('runAll', () => {
  it('runs every step even when an earlier one fails, then throws the failure', async () => {
    const ran: number[] = [];
    await expect(
      runAll([
        async () => {
          ran.push(1);
          throw new Error('first');
        },
        async () => {
          ran.push(2);
        },
      ]),
    ).rejects.toThrow('first');
    expect(ran).toEqual([1, 2]);
  });

  it('aggregates several failures', async () => {
    const failing = async () => {
      throw new Error('x');
    };
    await expect(runAll([failing, failing])).rejects.toThrow('2 shutdown steps failed');
  });
});

describe('onceStop', () => {
  it('shares one promise between calls and runs the routine once', async () => {
    let runs = 0;
    const stop = onceStop(async () => {
      runs += 1;
    });
    const a = stop();
    const b = stop();
    expect(a).toBe(b);
    await a;
    expect(runs).toBe(1);
  });
});
