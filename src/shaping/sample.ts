// `sample` (docs/webhooks.md#shaping): whether a destination keeps an event, decided by
// its messageId alone, so the answer is the same on every router replica, after a
// restart and for every routing of the same call again.
import { hash } from 'node:crypto';

const SCALE = 2 ** 48;

/**
 * Where a messageId falls in [0, 1): the first 48 bits of the SHA-256 of its UTF-8
 * bytes, over 2^48. Any program can compute the same (docs/webhooks.md#shaping).
 * NOTE: a cryptographic hash, not a faster one, because messageIds are often
 * sequential (`order-1`, `order-2`, …) and SHA-256 spreads them evenly; it costs about
 * a microsecond, once per call whatever the number of sampled destinations.
 */
export function samplePoint(messageId: string): number {
  return hash('sha256', messageId, 'buffer').readUIntBE(0, 6) / SCALE;
}

/**
 * Whether a destination with `sample: fraction` keeps the event at `point`. The same
 * point for every destination: a destination at 0.1 gets a subset of what one at 0.5
 * gets (sampling is consistent, as for trace ids).
 */
export function sampleKeeps(point: number, fraction: number): boolean {
  return point < fraction;
}
