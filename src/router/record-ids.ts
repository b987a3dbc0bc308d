import { createHash } from 'node:crypto';

/**
 * A message id for a Kafka record that came without one: a UUID (RFC 9562 version 8,
 * "custom") made from a SHA-256 of the record's coordinates and timestamp.
 *
 * NOTE: deterministic on purpose. After a crash the router routes the uncommitted
 * records again, and receivers deduplicate on messageId; a random id would turn each
 * such duplicate into a new event. The timestamp is in the hash so that a topic
 * deleted and created again (offsets restart at 0) does not repeat old ids.
 */
export function recordMessageId(topic: string, partition: number, offset: string, timestamp: string): string {
  const digest = createHash('sha256').update(`${topic}\u0000${partition}\u0000${offset}\u0000${timestamp}`).digest();
  digest[6] = (digest[6]! & 0x0f) | 0x80; // version 8
  digest[8] = (digest[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The record's timestamp in epoch ms, or `fallbackMs` when it is missing or not a number. */
export function recordTimestampMs(timestamp: string | undefined, fallbackMs: number): number {
  const ms = Number(timestamp);
  return Number.isSafeInteger(ms) && ms >= 0 ? ms : fallbackMs;
}
