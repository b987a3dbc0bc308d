// NOTE: kafkajs 2.2.4 (pinned) spins while idle: every connection's request queue
// re-arms a timer at the end of each check of its pending requests, and with nothing
// pending and no throttle the delay is negative, so it fires every millisecond for good
// (kafkajs issues #1556, #1604, #1704; the fix of PR #1667 is not released): hundreds of
// wake-ups a second and several percent of a core for a deliverer with nothing to do
// (docs/architecture.md#measured-figures-behind-the-code).
// The same method, minus the loop: a check is scheduled only while requests wait, as
// soon as the throttle ends (10 ms when it has ended, as kafkajs does after PR #1532).
import { createRequire } from 'node:module';

interface RequestQueueInternals {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}

const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

let applied = false;

/** Replaces kafkajs's RequestQueue.scheduleCheckPendingRequests; once per process, and only where it has the shape this fix knows. */
export function applyIdleTimerFix(): void {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  let RequestQueue: { prototype: Partial<Record<'scheduleCheckPendingRequests' | 'checkPendingRequests', unknown>> } | undefined;
  try {
    RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as typeof RequestQueue;
  } catch {
    return; // another kafkajs layout: left as it is
  }
  const prototype = RequestQueue?.prototype;
  if (typeof prototype?.scheduleCheckPendingRequests !== 'function' || typeof prototype.checkPendingRequests !== 'function') return;
  prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueueInternals): void {
    if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
    const untilUnthrottled = this.throttledUntil - Date.now();
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null;
        this.checkPendingRequests();
      },
      untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
    );
  };
}
