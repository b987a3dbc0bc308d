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

  /** A crash as kafkajs reports it: it asks restartOnFailure about a retriable one first. */
  async function crash(rejoiner: Rejoiner, error: Error, retriable: boolean): Promise<boolean> {
    if (retriable) expect(await rejoiner.retry().restartOnFailure!(error)).toBe(false);
    return rejoiner.crashed(error);
  }

  it('never lets kafkajs restart the consumer itself, and keeps kafkajs\'s five retries', async () => {
    const rejoiner = new Rejoiner(async () => undefined, logger, 'group g');
    const retry = rejoiner.retry();
    expect(retry.retries).toBe(5);
    expect(await retry.restartOnFailure!(named('KafkaJSNumberOfRetriesExceeded'))).toBe(false);
  });

  it('joins again after any crash kafkajs would have restarted from: after 0.5 s, then 1 s, 2 s… while it keeps crashing, and from 0.5 s again after a join', async () => {
    const starts: number[] = [];
    const rejoiner = new Rejoiner(async () => void starts.push(Date.now()), logger, 'group g');
    const t0 = Date.now();
    // "The coordinator is loading": retriable, and not a lost cluster.
    expect(await crash(rejoiner, named('KafkaJSProtocolError'), true)).toBe(true);
    await vi.advanceTimersByTimeAsync(499);
    expect(starts).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(starts).toEqual([t0 + 500]);
    await crash(rejoiner, named('KafkaJSProtocolError'), true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(starts).toEqual([t0 + 500, t0 + 1_500]);
    rejoiner.joined();
    await crash(rejoiner, named('KafkaJSConnectionError'), true);
    await vi.advanceTimersByTimeAsync(500);
    expect(starts).toHaveLength(3);
  });

  it('joins again after kafkajs gave up on an unreachable cluster, which it does not count retriable', async () => {
    let starts = 0;
    const rejoiner = new Rejoiner(async () => void (starts += 1), logger, 'group g');
    expect(await crash(rejoiner, named('KafkaJSGroupCoordinatorNotFound'), false)).toBe(true);
    await vi.advanceTimersByTimeAsync(500);
    expect(starts).toBe(1);
  });

  it('tries again when a start itself fails, the delay capped at 30 s', async () => {
    let calls = 0;
    const rejoiner = new Rejoiner(async () => {
      calls += 1;
      throw named('KafkaJSConnectionError');
    }, logger, 'group g');
    rejoiner.crashed(named('KafkaJSGroupCoordinatorNotFound'));
    // 0.5 + 1 + 2 + 4 + 8 + 16 + 30 + 30 s
    await vi.advanceTimersByTimeAsync(91_500);
    expect(calls).toBe(8);
    await rejoiner.stop();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(calls).toBe(8);
  });

  it('leaves crashes for good alone, and joins nothing again after stop (a crash while stopping is not one for good)', async () => {
    const rejoiner = new Rejoiner(async () => undefined, logger, 'group g');
    expect(await crash(rejoiner, named('KafkaJSProtocolError'), false)).toBe(false);
    expect(rejoiner.crashed(new TypeError('x is undefined'))).toBe(false);
    // kafkajs's question was about another crash than the one it reports.
    await rejoiner.retry().restartOnFailure!(named('KafkaJSProtocolError'));
    expect(rejoiner.crashed(named('KafkaJSProtocolError'))).toBe(false);
    await rejoiner.stop();
    expect(await crash(rejoiner, named('KafkaJSGroupCoordinatorNotFound'), true)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stop waits for a start under way, so the owner stops the consumer after it', async () => {
    let finish: () => void = () => undefined;
    const rejoiner = new Rejoiner(() => new Promise<void>((resolve) => (finish = resolve)), logger, 'group g');
    rejoiner.crashed(named('KafkaJSConnectionError'));
    await vi.advanceTimersByTimeAsync(500);
    let stopped = false;
    const stopping = rejoiner.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(10);
    expect(stopped).toBe(false);
    finish();
    await stopping;
    expect(stopped).toBe(true);
  });
});
