// The idle-timer fix (src/kafka/idle-timer-fix.ts) takes hold on the pinned kafkajs: an
// idle request queue arms no timer. Unfixed, kafkajs arms one at a negative delay after
// every answer: it wakes every millisecond and, on Node 24, prints TimeoutNegativeWarning
// (nothing else keeps that warning off stderr). A kafkajs whose layout the fix does not
// know fails here instead of spinning quietly.
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { applyIdleTimerFix } from '../../../src/kafka/index.js';

interface RequestQueue {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  scheduleCheckPendingRequests(): void;
}

const require = createRequire(import.meta.url);
const RequestQueueClass = require('kafkajs/src/network/requestQueue/index.js') as new (options: Record<string, unknown>) => RequestQueue;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('the idle-timer fix on kafkajs', () => {
  const armed: NodeJS.Timeout[] = [];
  afterEach(() => {
    for (const timer of armed.splice(0)) clearTimeout(timer);
  });

  it.each([
    ['idle, never throttled', false, 0, -1],
    ['idle, throttled for 5 s', false, 0, 5_000],
    ['a request waiting, not throttled', true, 1, -1],
    ['a request waiting, throttled for 5 s', true, 1, 5_000],
  ] as const)('%s: a check of the pending requests is scheduled: %s', (_case, scheduled, pending, throttledForMs) => {
    applyIdleTimerFix();
    const queue = new RequestQueueClass({ maxInFlightRequests: 1, requestTimeout: 30_000, enforceRequestTimeout: false, clientId: 'test', broker: 'b:9092', logger: silent });
    queue.pending = Array.from({ length: pending }, () => ({}));
    queue.throttledUntil = throttledForMs < 0 ? -1 : Date.now() + throttledForMs;
    queue.scheduleCheckPendingRequests();
    if (queue.throttleCheckTimeoutId !== null) armed.push(queue.throttleCheckTimeoutId);
    expect(queue.throttleCheckTimeoutId !== null).toBe(scheduled);
  });
});
