/** Cutting the queue into batches: pure, so the limits are tested without sending. */
import type { BatchLimits, QueuedCall } from './transport.js';

/**
 * How many calls from the front of `queue` make the next batch: as many as fit in
 * `limits.maxCalls` and `limits.maxBytes`, and always at least one when the queue is
 * not empty (a single call is at most 32 KB, far below any batch limit).
 */
export function nextBatchSize(queue: readonly QueuedCall[], limits: BatchLimits): number {
  let bytes = limits.overheadBytes;
  let count = 0;
  for (const call of queue) {
    if (count >= limits.maxCalls) break;
    const next = bytes + limits.callBytes(call);
    if (count > 0 && next > limits.maxBytes) break;
    bytes = next;
    count += 1;
  }
  return count;
}
