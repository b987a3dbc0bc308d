// Destinations added and removed by rewriting the config file of a running
// `switchyard deliverer` under load: the destinations that did not change lose nothing
// and get nothing twice; a removed destination stops, and once added back delivers the
// rest of its events; an added one delivers all of its own (issue 13).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startRole } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { writeDelivererConfig } from '../support/deliverer-config.js';
import { createTestKafka, randomName, randomPrefix } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const EVENTS = 1_000; // per destination
const IN_FLIGHT = 4; // delivery.concurrencyPerDestination
const PARTITIONS = 3;
const DESTINATIONS = ['kept-a', 'kept-b', 'removed', 'added'] as const;
type Destination = (typeof DESTINATIONS)[number];

const body = (destination: string, i: number) =>
  `{"version":1,"type":"track","userId":"u-${i % 50}","messageId":"${destination}-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up","properties":{}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
const daemons: Daemon[] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});

afterAll(async () => {
  await killAll(daemons);
  await receiver?.close();
  await kafka?.close();
});

describe('deliverer config reload under load', () => {
  it('adds and removes destinations without losing or redelivering the others', { timeout: 240_000 }, async () => {
    const prefix = randomPrefix();
    const clientId = randomName('reload');
    /** Writes the config with destinations `ids` (to `file`: a reload). */
    const writeConfig = (ids: readonly Destination[], file?: string) =>
      writeDelivererConfig(
        {
          clientId,
          topicPrefix: prefix,
          partitions: PARTITIONS,
          delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '30m', concurrencyPerDestination: IN_FLIGHT },
          destinations: Object.fromEntries(ids.map((id) => [id, receiver.url(`/${id}`)])),
        },
        file,
      );
    // Per destination (the URL path), how many 200s each message id got. NOTE: 25 ms per
    // answer and 4 in flight (~160 events/s per destination): the reloads land mid-load.
    const acked = new Map<Destination, Map<string, number>>(DESTINATIONS.map((id) => [id, new Map()]));
    // The removed destination answers slowly while it is taken out: its requests then are
    // still in flight when the consumer joins again without its topics.
    let removedDelayMs = 25;
    receiver.replyWith((request) => {
      const id = request.path.slice(1) as Destination;
      const messageId = (JSON.parse(request.text) as { messageId: string }).messageId;
      const seen = acked.get(id)!;
      seen.set(messageId, (seen.get(messageId) ?? 0) + 1);
      return { status: 200, delayMs: id === 'removed' ? removedDelayMs : 25 };
    });
    const delivered = (id: Destination) => acked.get(id)!.size;
    const duplicates = (id: Destination) => [...acked.get(id)!.values()].reduce((sum, n) => sum + n - 1, 0);

    // Every destination's events wait in Kafka from the start, the added one's too.
    for (const id of DESTINATIONS) {
      const topic = `${prefix}deliveries.${id}`;
      await kafka.createTopic(topic, PARTITIONS); // waits for every partition's leader
      const messages = Array.from({ length: EVENTS }, (_, i) => ({
        key: `u-${i % 50}`,
        value: body(id, i),
        headers: { 'source-id': 'web', 'message-id': `${id}-${i}`, attempt: '0', 'first-attempt-at': '' },
      }));
      for (let start = 0; start < EVENTS; start += 500) await kafka.produce(`${prefix}deliveries.${id}`, messages.slice(start, start + 500));
    }

    const file = writeConfig(['kept-a', 'kept-b', 'removed']);
    const deliverer = await startRole('deliverer', file);
    daemons.push(deliverer);
    const reloads = () => deliverer.logs.filter((line) => line.msg === 'config reloaded').length;

    await waitFor(() => delivered('kept-a') >= 150 && delivered('removed') >= 150, { timeoutMs: 60_000, what: 'the first destinations under way' });
    removedDelayMs = 1_500;
    await new Promise((resolve) => setTimeout(resolve, 100)); // requests under way at the slow pace
    writeConfig(['kept-a', 'kept-b', 'added'], file);
    await waitFor(() => reloads() >= 1, { timeoutMs: 30_000, what: 'the deliverer to reload the config (removed out, added in)' });
    expect(delivered('kept-a')).toBeLessThan(EVENTS); // the reload really happened under load

    // The added destination starts; the removed one stops (once its in-flight requests end).
    await waitFor(() => delivered('added') >= 100, { timeoutMs: 60_000, what: 'the added destination to deliver' });
    const removedRequests = () => receiver.requests.filter((r) => r.path === '/removed').length;
    let removedBefore = removedRequests();
    await waitFor(
      () => {
        const now = removedRequests();
        const still = now === removedBefore;
        removedBefore = now;
        return still && delivered('added') >= 300;
      },
      { timeoutMs: 60_000, intervalMs: 1_000, what: 'the removed destination to get no more requests' },
    );
    const removedAtPause = delivered('removed');
    expect(removedAtPause).toBeLessThan(EVENTS);

    // Added back: it resumes where it stopped.
    removedDelayMs = 25;
    writeConfig(['kept-a', 'kept-b', 'added', 'removed'], file);
    await waitFor(() => reloads() >= 2, { timeoutMs: 30_000, what: 'the deliverer to reload the config (removed back in)' });

    await waitFor(() => DESTINATIONS.every((id) => delivered(id) === EVENTS), {
      timeoutMs: 120_000,
      what: `every destination's ${EVENTS} events delivered (${DESTINATIONS.map((id) => `${id} ${delivered(id)}`).join(', ')})`,
    });
    const counts = Object.fromEntries(DESTINATIONS.map((id) => [id, duplicates(id)]));
    // Nothing twice: the unchanged destinations, the added one, and the removed one added
    // back (what it had in flight when it was taken out was committed before it left).
    expect(counts).toEqual({ 'kept-a': 0, 'kept-b': 0, added: 0, removed: 0 });

    // Each lane change logged what happened to it; the stop, one line, not a "restart" per lane.
    const laneLines = () => deliverer.logs.filter((line) => typeof line.msg === 'string' && line.msg.includes('lane')).map((line) => `${String(line.destination ?? '')}: ${String(line.msg)}`);
    expect(laneLines()).toEqual(['removed: destination left the config or was disabled; its lane stopped']);
    deliverer.kill('SIGTERM');
    expect(await deliverer.exited).toBe(0);
    await deliverer.waitForLog((line) => line.msg === 'stopped cleanly', 'the deliverer to log its clean stop');
    expect(laneLines()).toEqual([
      'removed: destination left the config or was disabled; its lane stopped',
      ': stopping: each destination lane finishes its requests in flight',
    ]);
  });

  it("redoes nothing when a reload edits the delivery settings every lane runs on (each lane restarts)", { timeout: 180_000 }, async () => {
    const prefix = randomPrefix();
    const clientId = randomName('reload-edit');
    const ids = ['kept-a', 'kept-b'] as const;
    const writeConfig = (inFlight: number, file?: string) =>
      writeDelivererConfig(
        {
          clientId,
          topicPrefix: prefix,
          partitions: PARTITIONS,
          delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '30m', concurrencyPerDestination: inFlight },
          destinations: Object.fromEntries(ids.map((id) => [id, receiver.url(`/edit/${id}`)])),
        },
        file,
      );
    const acked = new Map<string, number>();
    receiver.replyWith((request) => {
      const messageId = (JSON.parse(request.text) as { messageId: string }).messageId;
      acked.set(messageId, (acked.get(messageId) ?? 0) + 1);
      // NOTE: 50 ms an answer: the 2,000 events take about ten seconds, so the lanes
      // restart while they go on (checked below).
      return { status: 200, delayMs: 50 };
    });
    for (const id of ids) {
      const topic = `${prefix}deliveries.${id}`;
      await kafka.createTopic(topic, PARTITIONS);
      const messages = Array.from({ length: EVENTS }, (_, i) => ({
        key: `u-${i % 50}`,
        value: body(id, i),
        headers: { 'source-id': 'web', 'message-id': `${id}-${i}`, attempt: '0', 'first-attempt-at': '' },
      }));
      for (let start = 0; start < EVENTS; start += 500) await kafka.produce(topic, messages.slice(start, start + 500));
    }
    const file = writeConfig(IN_FLIGHT);
    const deliverer = await startRole('deliverer', file);
    daemons.push(deliverer);
    const applied = () => deliverer.logs.filter((line) => line.msg === 'delivering for the configured destinations').length;
    await waitFor(() => acked.size >= 300, { timeoutMs: 60_000, what: 'the destinations under way' });
    const appliedBefore = applied();
    writeConfig(IN_FLIGHT * 2, file);
    await waitFor(() => applied() > appliedBefore, { timeoutMs: 30_000, what: 'the deliverer to apply the reload (concurrency doubled: each lane restarted)' });
    expect(acked.size, 'events delivered once the lanes had restarted (the restart must land under load)').toBeLessThan(2 * EVENTS);
    await waitFor(() => acked.size === 2 * EVENTS, { timeoutMs: 120_000, what: `every event delivered (${acked.size} of ${2 * EVENTS})` });
    expect([...acked].filter(([, n]) => n > 1)).toEqual([]);
    expect(deliverer.logs.filter((line) => line.msg === 'delivery settings changed; restarting its lane').map((line) => line.destination).sort()).toEqual([...ids]);
  });
});
