import { createRequire } from 'node:module';
import { runInThisContext } from 'node:vm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ignoreKafkajsNegativeTimeoutWarning,
  isKafkajsNegativeTimeout,
  warningType,
} from '../../../src/kafka/negative-timeout-warning.js';

const KAFKAJS_STACK = 'Error\n    at setTimeout (node:timers:125:19)\n    at RequestQueue.scheduleCheckPendingRequests (/app/node_modules/kafkajs/src/network/requestQueue/index.js:317:37)';
const WINDOWS_STACK = 'Error\n    at RequestQueue.scheduleCheckPendingRequests (C:\\app\\node_modules\\kafkajs\\src\\network\\requestQueue\\index.js:317:37)';
const OWN_STACK = 'Error\n    at setTimeout (node:timers:125:19)\n    at retryLater (/app/src/delivery/retry.ts:10:3)';

describe('warningType', () => {
  it.each([
    ['a type argument', 'msg', 'TimeoutNegativeWarning', 'TimeoutNegativeWarning'],
    ['an options object', 'msg', { type: 'DeprecationWarning', code: 'DEP0005' }, 'DeprecationWarning'],
    ['options without a type', 'msg', { code: 'X1' }, 'Warning'],
    ['a string alone', 'msg', undefined, 'Warning'],
    ['an Error', Object.assign(new Error('msg'), { name: 'TimeoutNegativeWarning' }), undefined, 'TimeoutNegativeWarning'],
  ] as const)('reads the type from %s', (_case, warning, typeOrOptions, expected) => {
    expect(warningType(warning, typeOrOptions)).toBe(expected);
  });
});

describe('isKafkajsNegativeTimeout', () => {
  it.each([
    ['from kafkajs', 'TimeoutNegativeWarning', KAFKAJS_STACK, true],
    ['from kafkajs on Windows', 'TimeoutNegativeWarning', WINDOWS_STACK, true],
    ['from our own code', 'TimeoutNegativeWarning', OWN_STACK, false],
    ['another type from kafkajs', 'DeprecationWarning', KAFKAJS_STACK, false],
    ['without a stack', 'TimeoutNegativeWarning', '', false],
  ] as const)('a warning %s: %s', (_case, type, stack, expected) => {
    expect(isKafkajsNegativeTimeout(type, stack)).toBe(expected);
  });
});

describe('ignoreKafkajsNegativeTimeoutWarning', () => {
  const seen: Error[] = [];
  const listener = (warning: Error) => seen.push(warning);
  // Node's own listener (the one that prints) is set aside, so the test output stays clean.
  let others: ((warning: Error) => void)[] = [];
  beforeEach(() => {
    seen.length = 0;
    others = process.listeners('warning');
    process.removeAllListeners('warning');
    process.on('warning', listener);
  });
  afterEach(() => {
    process.off('warning', listener);
    for (const other of others) process.on('warning', other);
  });

  /** Lets process.emitWarning's nextTick 'warning' events arrive. */
  const warningsSettled = () => new Promise<void>((resolve) => setImmediate(resolve));

  /** Raises a TimeoutNegativeWarning from code whose stack frames name `filename`. */
  function warnFrom(filename: string): void {
    const raise = runInThisContext("(() => process.emitWarning('-5 is a negative number.', 'TimeoutNegativeWarning'))", { filename }) as () => void;
    raise();
  }

  it.each([
    ['kafkajs', '/app/node_modules/kafkajs/src/network/requestQueue/index.js', []],
    ['our own code', '/app/src/delivery/retry.js', ['TimeoutNegativeWarning']],
    ['another package', '/app/node_modules/undici/lib/timers.js', ['TimeoutNegativeWarning']],
  ] as const)('a TimeoutNegativeWarning raised by %s: the warning listeners get %j', async (_case, filename, expected) => {
    ignoreKafkajsNegativeTimeoutWarning();
    ignoreKafkajsNegativeTimeoutWarning(); // a second call must not wrap twice
    warnFrom(filename);
    await warningsSettled();
    expect(seen.map((warning) => warning.name)).toEqual(expected);
  });

  it('passes every other warning on with its type and code', async () => {
    ignoreKafkajsNegativeTimeoutWarning();
    process.emitWarning('a warning of our own', { type: 'ExperimentalWarning', code: 'SY001' });
    await warningsSettled();
    expect(seen.map((warning) => [warning.name, (warning as Error & { code?: string }).code])).toEqual([['ExperimentalWarning', 'SY001']]);
  });

  // NOTE: Node 23+ warns about a process's first negative delay only, and Node 22 not at
  // all: this is a real check on Node 24, in a process that set no negative timer before.
  it('kafkajs\'s request queue with nothing throttled arms a negative timer, and no warning shows', async () => {
    ignoreKafkajsNegativeTimeoutWarning();
    const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as new (options: object) => {
      scheduleCheckPendingRequests(): void;
      destroy(): void;
    };
    const queue = new RequestQueue({ maxInFlightRequests: null, requestTimeout: 1_000, clientId: 'test', broker: 'b:9092', logger: silent() });
    queue.scheduleCheckPendingRequests();
    queue.destroy();
    await warningsSettled();
    expect(seen.map((warning) => warning.name)).toEqual([]);
  });
});

function silent() {
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined, namespace: () => logger };
  return logger;
}
