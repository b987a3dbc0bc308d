// Batches (`settings.batch`, docs/webhooks.md#batches) through the real `switchyard
// deliverer`: a batch answered 503 is retried and every event delivered, across a
// SIGKILL; every request is a JSON array of at most maxEvents bodies signed over the
// array's bytes; a 413 splits a batch in halves; a 400 dead-letters each event of it.
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startRole } from '../support/daemon.js';
import { useDelivererBed } from '../support/deliverer-bed.js';
import { writeDelivererConfig } from '../support/deliverer-config.js';
import { randomName, randomPrefix } from '../support/kafka.js';
import type { Receiver, Reply } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const SECRET = 'batch-secret';
const body = (destination: string, i: number) =>
  `{"version":1,"type":"track","userId":"u-${i % 7}","messageId":"${destination}-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{"i":${i}}}`;

const bed = useDelivererBed();
const daemons = bed.daemons;
const receiver = () => bed.receiver();

async function produce(prefix: string, destination: string, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => ({ key: `u-${i % 7}`, value: body(destination, i), messageId: `${destination}-${i}` }));
  await bed.produceDeliveries(prefix, destination, events);
}

const idsOf = (text: string) => (JSON.parse(text) as { messageId: string }[]).map((event) => event.messageId);

/**
 * Answers `pick(events, index)` and counts, per message id, the 2xx answers that really
 * went out (written to a connection still open, so the deliverer could read them).
 */
function arrays(target: Receiver, pick: (ids: string[], index: number) => { status: number; delayMs?: number }) {
  const acked = new Map<string, number>();
  target.replyWith((request, index): Reply => {
    const ids = idsOf(request.text);
    const answer = pick(ids, index);
    return (_req, res) => {
      const send = () => {
        if (res.destroyed) return;
        if (answer.status < 300) res.once('finish', () => ids.forEach((id) => acked.set(id, (acked.get(id) ?? 0) + 1)));
        res.writeHead(answer.status);
        res.end();
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    };
  });
  return acked;
}

describe('batches', () => {
  it('delivers 220 events in arrays of at most maxEvents, signed over the array, after a 503 and across a SIGKILL', { timeout: 120_000 }, async () => {
    const prefix = randomPrefix();
    const warehouse = await receiver();
    const EVENTS = 220;
    const MAX_EVENTS = 20;
    const file = writeDelivererConfig({
      clientId: randomName('batch'),
      topicPrefix: prefix,
      partitions: 3,
      delivery: { timeout: '2s', retryTiers: ['1s'], maxRetryWindow: '10m', concurrencyPerDestination: 2 },
      destinations: { warehouse: { url: warehouse.url(), sharedSecret: SECRET, batch: { maxEvents: MAX_EVENTS, maxBytes: '64KB', maxWait: '100ms' } } },
    });
    // The first batch request gets a 503; the others a 200 after 250 ms, so that the kill lands mid-way.
    const acked = arrays(warehouse, (_ids, index) => (index === 0 ? { status: 503 } : { status: 200, delayMs: 250 }));
    await produce(prefix, 'warehouse', EVENTS);

    const first = await startRole('deliverer', file);
    daemons.push(first);
    await waitFor(() => acked.size >= 60, { timeoutMs: 60_000, what: `60 events delivered before the kill (${acked.size})` });
    first.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    expect(acked.size).toBeLessThan(EVENTS);

    const second = await startRole('deliverer', file);
    daemons.push(second);
    await waitFor(() => acked.size === EVENTS, { timeoutMs: 60_000, what: `all ${EVENTS} events delivered (${acked.size})` });
    expect([...acked.keys()].sort()).toEqual(Array.from({ length: EVENTS }, (_, i) => `warehouse-${i}`).sort());

    const firstRequest = warehouse.requests[0]!;
    for (const request of warehouse.requests) {
      const events = JSON.parse(request.text) as unknown[];
      expect(Array.isArray(events)).toBe(true);
      expect(events.length).toBeGreaterThan(0);
      expect(events.length).toBeLessThanOrEqual(MAX_EVENTS);
      // Byte for byte: the array is the single-event bodies joined by commas.
      expect(request.text).toBe(`[${idsOf(request.text).map((id) => body('warehouse', Number(id.split('-')[1]))).join(',')}]`);
      expect(request.headers['x-signature']).toBe(createHmac('sha1', SECRET).update(request.body).digest('hex'));
    }
    // The events of the batch answered 503 went to the retry tier and were delivered later.
    for (const id of idsOf(firstRequest.text)) expect(acked.has(id)).toBe(true);
    const duplicates = [...acked.values()].reduce((sum, n) => sum + n - 1, 0);
    process.stderr.write(`deliver-batches: ${warehouse.requests.length} requests, ${duplicates} events delivered twice\n`);
    // A kill redoes at most the batches in flight (2 permits) and those that finished while the last commit was out.
    expect(duplicates).toBeLessThanOrEqual(4 * MAX_EVENTS);

    second.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('splits a batch answered 413 in halves down to what fits, and dead-letters each event of a batch answered 400', { timeout: 90_000 }, async () => {
    const prefix = randomPrefix();
    const small = await receiver();
    const refusing = await receiver();
    const batch = { maxEvents: 8, maxBytes: '64KB', maxWait: '100ms' };
    const file = writeDelivererConfig({
      clientId: randomName('split'),
      topicPrefix: prefix,
      partitions: 1,
      delivery: { timeout: '2s', retryTiers: ['1s'], maxRetryWindow: '10m' },
      destinations: { small: { url: small.url(), batch }, refusing: { url: refusing.url(), batch } },
    });
    // More than 2 events is too large for this receiver.
    const acked = arrays(small, (ids) => (ids.length > 2 ? { status: 413 } : { status: 200 }));
    arrays(refusing, () => ({ status: 400 }));
    await produce(prefix, 'small', 16);
    await produce(prefix, 'refusing', 8);
    const daemon = await startRole('deliverer', file);
    daemons.push(daemon);

    await waitFor(() => acked.size === 16, { timeoutMs: 60_000, what: `16 events delivered in small batches (${acked.size})` });
    const sizes = small.requests.map((request) => idsOf(request.text).length);
    expect(Math.max(...sizes)).toBeGreaterThan(2); // some batch was split
    expect(sizes.filter((n) => n <= 2).reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(16);
    // Each split halves the batch: a batch of n is followed by ones of ceil(n/2) and floor(n/2), never other sizes.
    for (const n of sizes) expect([1, 2, 4, 8]).toContain(n);

    const letters = await bed.kafka().readAll(`${prefix}deliveries.refusing.dlq`, { atLeast: 8, timeoutMs: 30_000 });
    expect(letters.map((letter) => letter.headers['message-id']).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `refusing-${i}`).sort());
    for (const letter of letters) {
      expect(letter.headers.error).toMatch(/400/);
      // The dead letter keeps the event's own body, not the batch's.
      expect(letter.text).toBe(body('refusing', Number(letter.headers['message-id']!.split('-')[1])));
    }
    // Each event was sent once, in a batch refused as a whole: no retry.
    expect(refusing.requests.flatMap((request) => idsOf(request.text)).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `refusing-${i}`).sort());

    daemon.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
  });
});
