// Batches of events in one request (`settings.batch`, docs/webhooks.md#batches). Pure:
// when an open batch is full, the body of a batch, its id, and the halves of a batch a
// receiver found too large.
import { createHash } from 'node:crypto';
import type { BatchConfig, BatchFormat } from '../config/schema.js';
import type { UrlResult } from './fan-out.js';

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');
const NEWLINE = Buffer.from('\n');

/**
 * The body of a batch. `json`: `[`, the event bodies byte for byte, joined by `,`, `]`.
 * `ndjson`: each event body byte for byte followed by a line feed (an event body is
 * compact JSON: it holds no line feed of its own).
 */
export function batchBody(bodies: readonly Buffer[], format: BatchFormat = 'json'): Buffer {
  if (format === 'ndjson') {
    const lines: Buffer[] = [];
    for (const body of bodies) lines.push(body, NEWLINE);
    return Buffer.concat(lines, batchBytes(bodies.length, bodies.reduce((sum, body) => sum + body.length, 0), format));
  }
  const parts: Buffer[] = [OPEN];
  bodies.forEach((body, i) => {
    if (i > 0) parts.push(COMMA);
    parts.push(body);
  });
  parts.push(CLOSE);
  return Buffer.concat(parts, batchBytes(bodies.length, bodies.reduce((sum, body) => sum + body.length, 0)));
}

/** The bytes of a batch of `events` bodies of `bodyBytes` bytes in all: theirs, and a comma between each two and the brackets (`json`) or a line feed after each (`ndjson`). */
export function batchBytes(events: number, bodyBytes: number, format: BatchFormat = 'json'): number {
  return format === 'ndjson' ? bodyBytes + events : bodyBytes + Math.max(0, events - 1) + 2;
}

/** An open batch: its events and bytes so far. */
export interface BatchFill {
  events: number;
  /** The bodies' bytes (batchBytes adds the brackets and commas). */
  bodyBytes: number;
}

/**
 * Whether a body of `bytes` may join `open` within the limits. An empty batch takes any
 * one body, however large: an event larger than `maxBytes` goes alone.
 */
export function fitsIn(open: BatchFill, bytes: number, limits: Pick<BatchConfig, 'maxEvents' | 'maxBytes'> & Partial<Pick<BatchConfig, 'format'>>): boolean {
  if (open.events === 0) return true;
  return open.events < limits.maxEvents && batchBytes(open.events + 1, open.bodyBytes + bytes, limits.format) <= limits.maxBytes;
}

/** Whether `open` takes no more events: at `maxEvents`, or at `maxBytes` already. */
export function isFull(open: BatchFill, limits: Pick<BatchConfig, 'maxEvents' | 'maxBytes'> & Partial<Pick<BatchConfig, 'format'>>): boolean {
  return open.events >= limits.maxEvents || batchBytes(open.events, open.bodyBytes, limits.format) >= limits.maxBytes;
}

/**
 * The batch's id (`webhook-id` with `signing: standard`; docs/webhooks.md#batches):
 * `batch_` and 32 hex digits of the SHA-256 of the events' message ids in order, each
 * written as its length in UTF-8 bytes, `:` and the id (so no two lists of ids hash the
 * same text). The same events in the same order give the same id, whenever and however
 * often they are sent: a receiver can drop a batch it has taken already.
 */
export function batchId(messageIds: readonly string[]): string {
  const hash = createHash('sha256');
  for (const id of messageIds) hash.update(`${Buffer.byteLength(id, 'utf8')}:${id}`, 'utf8');
  return `batch_${hash.digest('hex').slice(0, 32)}`;
}

/** The halves of a batch a receiver refused as too large (413): the first gets the extra event of an odd count. */
export function halves<T>(items: readonly T[]): [T[], T[]] {
  const middle = Math.ceil(items.length / 2);
  return [items.slice(0, middle), items.slice(middle)];
}

/**
 * Whether a batch of `events` not delivered is to be split: more than one event, and
 * some URL answered 413 Payload Too Large. Its halves are sent at once, down to single
 * events; a single event answered 413 is a permanent failure as any other 4xx.
 */
export function wantsSplit(events: number, results: readonly UrlResult[]): boolean {
  return events > 1 && results.some(({ result }) => result.outcome !== 'cancelled' && result.status === 413);
}
