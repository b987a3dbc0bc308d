import { describe, expect, it } from 'vitest';
import { createCrashLevels } from '../../../src/runtime/crash-levels.js';
import { ERROR, KafkaAnswerError } from '../../../src/kafka/wire.js';

/** As the consumer engine's membership reports a join refused while the broker loads __consumer_offsets (wire.ts). */
const coordinatorLoading = new KafkaAnswerError(ERROR.COORDINATOR_LOAD_IN_PROGRESS, 'joining consumer group g');
/** As @platformatic/kafka wraps a broker's answer: the retriable error inside. */
const platformaticLoading = Object.assign(new Error('Received response with error while executing API JoinGroup(v9)'), {
  code: 'PLT_KFK_RESPONSE',
  errors: [Object.assign(new Error('The coordinator is loading'), { apiId: 'COORDINATOR_LOAD_IN_PROGRESS', canRetry: true })],
});
/** As @platformatic/kafka's connection pool fails when no broker answers: the network errors inside. */
const unreachable = Object.assign(new Error('Cannot connect to any broker.'), {
  code: 'PLT_KFK_MULTIPLE',
  errors: [Object.assign(new Error('Connection to 127.0.0.1:9092 failed.'), { code: 'PLT_KFK_NETWORK' })],
});
const bug = new TypeError("Cannot read properties of undefined (reading 'offset')");

describe('createCrashLevels', () => {
  it.each([
    ['the engine: the coordinator is loading', coordinatorLoading],
    ['@platformatic/kafka: the coordinator is loading', platformaticLoading],
    ['the cluster out of reach', unreachable],
  ])('keeps a transient crash (%s) at debug for a minute of crashes, then warns with how long', (_, error) => {
    const levels = createCrashLevels();
    expect(levels.crashed(error, true, 1_000)).toEqual({ level: 'debug' });
    expect(levels.crashed(error, true, 30_000)).toEqual({ level: 'debug' });
    expect(levels.crashed(error, true, 60_999)).toEqual({ level: 'debug' });
    expect(levels.crashed(error, true, 61_000)).toEqual({ level: 'warn', lastingMs: 60_000 });
  });

  it('starts counting again after the consumer joined', () => {
    const levels = createCrashLevels({ lastingMs: 10_000 });
    expect(levels.crashed(coordinatorLoading, true, 0)).toEqual({ level: 'debug' });
    levels.joined();
    expect(levels.crashed(coordinatorLoading, true, 15_000)).toEqual({ level: 'debug' });
    expect(levels.crashed(coordinatorLoading, true, 25_000)).toEqual({ level: 'warn', lastingMs: 10_000 });
  });

  it('warns at once for a crash that is not transient, and is fatal for one without a rejoin', () => {
    const levels = createCrashLevels();
    expect(levels.crashed(bug, true, 0)).toEqual({ level: 'warn' });
    expect(levels.crashed(coordinatorLoading, false, 0)).toEqual({ level: 'fatal' });
    expect(levels.crashed(bug, false, 0)).toEqual({ level: 'fatal' });
  });
});
