import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Rejoiner, isClusterUnreachable } from '../../../src/kafka/crash-restart.js';

const named = (name: string, cause?: unknown) => Object.assign(new Error(name), { name, cause });

describe('isClusterUnreachable', () => {
  it.each([
    ['the join that found no coordinator', named('KafkaJSGroupCoordinatorNotFound'), true],
    ['a refused connection', named('KafkaJSConnectionError'), true],
    ['retries exhausted around a connection error', named('KafkaJSNumberOfRetriesExceeded', named('KafkaJSConnectionError')), true],
    ['a wrapper whose cause is a lost coordinator', named('KafkaJSError', named('KafkaJSGroupCoordinatorNotFound')), true],
    ['an authorization failure', named('KafkaJSProtocolError'), false],
    ['a bug', new TypeError('x is undefined'), false],
    ['not an error', 'oops', false],
  ])('%s: %s', (_, error, expected) => {
    expect(isClusterUnreachable(error)).toBe(expected);
  });
});

describe('Rejoiner', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());
  const logger = pino({ level: 'silent' });

  it('takes an unreachable cluster, joins again after 1 s, then 2 s, 4 s… while it keeps crashing, and from 1 s again after a join', async () => {
    const starts: number[] = [];
    const rejoiner = new Rejoiner(async () => void starts.push(Date.now()), logger, 'group g');
    const t0 = Date.now();
    expect(rejoiner.crashed(named('KafkaJSGroupCoordinatorNotFound'), false)).toBe(true);
    await vi.advanceTimersByTimeAsync(999);
    expect(starts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([t0 + 1_000]);
    rejoiner.crashed(named('KafkaJSGroupCoordinatorNotFound'), false);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(starts).toEqual([t0 + 1_000, t0 + 3_000]);
    rejoiner.joined();
    rejoiner.crashed(named('KafkaJSConnectionError'), false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(starts).toHaveLength(3);
  });

  it('tries again when a start itself fails, the delay capped at 30 s', async () => {
    let calls = 0;
    const rejoiner = new Rejoiner(async () => {
      calls += 1;
      throw named('KafkaJSConnectionError');
    }, logger, 'group g');
    rejoiner.crashed(named('KafkaJSGroupCoordinatorNotFound'), false);
    // 1 + 2 + 4 + 8 + 16 + 30 + 30 s
    await vi.advanceTimersByTimeAsync(91_000);
    expect(calls).toBe(7);
    rejoiner.stop();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls).toBe(7);
  });

  it('leaves other crashes alone: those kafkajs restarts, those for good, and any after stop', () => {
    const rejoiner = new Rejoiner(async () => undefined, logger, 'group g');
    expect(rejoiner.crashed(named('KafkaJSConnectionError'), true)).toBe(false);
    expect(rejoiner.crashed(named('KafkaJSProtocolError'), false)).toBe(false);
    rejoiner.stop();
    expect(rejoiner.crashed(named('KafkaJSGroupCoordinatorNotFound'), false)).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
