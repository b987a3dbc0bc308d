// A Kafka topic as a destination (docs/kafka.md#a-topic-as-a-destination), on real brokers:
// calls routed by the router to a webhook and to topics of the same cluster come out of
// the topics byte for byte as the webhook got them (`value: body`) or wrapped with their
// routing (`value: call`), keyed and with their headers, a user's records in order in one
// partition, read as a read_committed consumer reads them (the same cluster is written in
// transactions); `integrations: { Kafka: false }` keeps a call out of them; produce errors
// end in the dead letters (a record too large at once, the others past the window); another cluster (a second broker of the
// test's own) gets every event; the address guard refuses a private cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { startDedicatedBroker } from '../support/dedicated-broker.js';
import type { DedicatedBroker } from '../support/dedicated-broker.js';
import { createTestKafka, randomName, randomPrefix, readCommitted, readTopic, testBrokers } from '../support/kafka.js';
import type { ReadMessage } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

type TestKafka = Awaited<ReturnType<typeof createTestKafka>>;

let kafka: TestKafka;
let receiver: Receiver;
const running: Service[][] = [];

beforeAll(async () => {
  kafka = await createTestKafka();
  receiver = await startReceiver();
});

afterAll(async () => {
  for (const services of running.reverse()) for (const service of [...services].reverse()) await service.stop().catch(() => undefined);
  await receiver?.close();
  await kafka?.close();
});

/** Starts the roles in this process, as `switchyard all` composes them. */
async function startRoles(shape: Record<string, unknown>, roles: readonly ('router' | 'deliverer')[]): Promise<Service[]> {
  const deps = testRoleDeps(testConfig(shape, 'deliver-kafka.test.yaml'));
  const services = roles.flatMap((role) => ROLE_FACTORIES[role](deps));
  running.push(services);
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'the roles to be ready' });
  return services;
}

const track = (user: string, i: number, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ type: 'track', userId: user, messageId: `${user}-${i}`, event: `Step ${i}`, timestamp: '2026-05-01T12:00:00.000Z', properties: { i, note: 'é ✓' }, ...extra });

const headerOf = (message: ReadMessage, name: string) => message.headers[name];

describe('a topic of the same cluster as a destination', () => {
  it('gets every routed call as the webhook got it, keyed by user and in order per user; value: call wraps it with its routing', { timeout: 120_000 }, async () => {
    const prefix = randomPrefix();
    const lake = randomName('lake');
    const wrapped = randomName('wrapped');
    await kafka.admin.createTopics({ topics: [{ topic: lake, numPartitions: 3 }, { topic: wrapped, numPartitions: 2 }] });
    const hooks = receiver.url(`/${randomName('hooks')}`);
    await startRoles(
      {
        kafka: { brokers: testBrokers(), clientId: randomName('kdest'), topicPrefix: prefix, partitions: 2 },
        delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '1m', concurrencyPerDestination: 8 },
        sources: [{ id: 'web', destinations: ['hooks', 'lake', 'wrapped'] }],
        destinations: [
          { id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: hooks }] } },
          { id: 'lake', type: 'kafka', settings: { topic: lake, headers: { team: 'growth' }, ordering: 'user' } },
          { id: 'wrapped', type: 'kafka', settings: { topic: wrapped, key: 'messageId', value: 'call', batch: { maxEvents: 10, maxWait: '50ms' } } },
        ],
      },
      ['router', 'deliverer'],
    );
    const users = ['ana', 'bo', 'cy', 'dee'];
    const PER_USER = 15;
    const calls = Array.from({ length: PER_USER }, (_, i) => users.map((user) => ({ key: user, value: track(user, i), headers: { 'source-id': 'web' } }))).flat();
    // Kept out of both topics by its integrations, delivered to the webhook.
    calls.push({ key: 'ana', value: track('ana', 99, { integrations: { Kafka: false } }), headers: { 'source-id': 'web' } });
    await kafka.produce(`${prefix}calls`, calls);

    const path = new URL(hooks).pathname;
    await waitFor(() => receiver.requests.filter((r) => r.path === path).length >= calls.length, { timeoutMs: 60_000, what: 'every call at the webhook' });
    const bodies = new Map(receiver.requests.filter((r) => r.path === path).map((r) => [(JSON.parse(r.text) as { messageId: string }).messageId, r.body]));
    expect(bodies.size).toBe(calls.length);

    const inLake = await readCommitted(lake, { atLeast: calls.length - 1, settleMs: 1_000 });
    expect(inLake).toHaveLength(calls.length - 1);
    for (const record of inLake) {
      const id = headerOf(record, 'message-id')!;
      // Byte for byte what the webhook got.
      expect(record.value!.equals(bodies.get(id)!), id).toBe(true);
      expect(record.key).toBe(id.split('-')[0]);
      expect(record.headers).toEqual({ team: 'growth', 'message-id': id, 'source-id': 'web', type: 'track' });
    }
    expect(inLake.some((r) => headerOf(r, 'message-id') === 'ana-99')).toBe(false);
    // A user's records: one partition, in the order of the calls.
    for (const user of users) {
      const mine = inLake.filter((r) => r.key === user);
      expect(new Set(mine.map((r) => r.partition)).size, user).toBe(1);
      expect(mine.map((r) => headerOf(r, 'message-id'))).toEqual(Array.from({ length: PER_USER }, (_, i) => `${user}-${i}`));
    }

    const inWrapped = await readCommitted(wrapped, { atLeast: calls.length - 1, settleMs: 1_000 });
    expect(inWrapped).toHaveLength(calls.length - 1);
    for (const record of inWrapped) {
      const id = headerOf(record, 'message-id')!;
      const body = bodies.get(id)!;
      expect(record.key).toBe(id);
      const value = JSON.parse(record.text) as Record<string, unknown>;
      expect(value).toEqual({ type: 'track', messageId: id, source: 'web', destination: 'wrapped', receivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) as unknown, call: JSON.parse(body.toString('utf8')) as unknown });
      // The call inside is the webhook's bytes, spliced in as they are.
      expect(record.value!.subarray(record.value!.length - body.length - 1).equals(Buffer.concat([body, Buffer.from('}')]))).toBe(true);
    }
  });
});

describe('produce errors', () => {
  it('dead-letter a record the topic refuses at once, and one for a missing topic after its retry window', { timeout: 120_000 }, async () => {
    const prefix = randomPrefix();
    const small = randomName('small');
    await kafka.admin.createTopics({ topics: [{ topic: small, numPartitions: 1, configs: [{ name: 'max.message.bytes', value: '400' }] }] });
    const missing = randomName('missing');
    await startRoles(
      {
        kafka: { brokers: testBrokers(), clientId: randomName('kdest'), topicPrefix: prefix, partitions: 1 },
        delivery: { timeout: '1s', retryTiers: ['1s'], maxRetryWindow: '4s' },
        sources: [{ id: 'web' }],
        destinations: [
          { id: 'small', type: 'kafka', settings: { topic: small } },
          { id: 'nowhere', type: 'kafka', settings: { topic: missing } },
        ],
      },
      ['deliverer'],
    );
    const delivery = (id: string, value: string) => ({ key: 'u1', value, headers: { 'source-id': 'web', 'message-id': id, attempt: '0', 'first-attempt-at': '' } });
    await kafka.produce(`${prefix}deliveries.small`, [delivery('fits', track('u1', 1)), delivery('too-large', track('u1', 2, { properties: { pad: 'x'.repeat(2_000) } }))]);
    await kafka.produce(`${prefix}deliveries.nowhere`, [delivery('lost-topic', track('u1', 3))]);

    const [tooLarge] = await readTopic(kafka.admin, `${prefix}deliveries.small.dlq`, { atLeast: 1, timeoutMs: 60_000 });
    expect(headerOf(tooLarge!, 'message-id')).toBe('too-large');
    expect(headerOf(tooLarge!, 'attempt')).toBe('1');
    expect(headerOf(tooLarge!, 'error')).toMatch(new RegExp(`^topic ${small}: produce to topic ${small} failed: .*MESSAGE_TOO_LARGE`));
    const stored = await readCommitted(small, { atLeast: 1 });
    expect(stored.map((r) => headerOf(r, 'message-id'))).toEqual(['fits']);

    const [lost] = await readTopic(kafka.admin, `${prefix}deliveries.nowhere.dlq`, { atLeast: 1, timeoutMs: 60_000 });
    expect(headerOf(lost!, 'message-id')).toBe('lost-topic');
    // NOTE: into the same cluster the write is a transaction, whose first attempt on a missing topic outlasts this 4 s window: one attempt or more.
    expect(Number(headerOf(lost!, 'attempt'))).toBeGreaterThanOrEqual(1);
    expect(headerOf(lost!, 'error')).toMatch(new RegExp(`^topic ${missing}: `));
    expect(lost!.value!.toString('utf8')).toBe(track('u1', 3));
    expect((await kafka.admin.listTopics()).includes(missing)).toBe(false);
  });
});

describe('a topic of another cluster', () => {
  let other: DedicatedBroker | undefined;
  afterAll(async () => {
    await other?.stop();
  });

  it('gets every event (at least once), and the address guard refuses a private cluster', { timeout: 240_000 }, async () => {
    other = await startDedicatedBroker();
    const otherKafka = await createTestKafka([other.brokers]);
    try {
      const prefix = randomPrefix();
      const topic = randomName('remote');
      await otherKafka.admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
      await startRoles(
        {
          kafka: { brokers: testBrokers(), clientId: randomName('kdest'), topicPrefix: prefix, partitions: 2 },
          delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '2m', concurrencyPerDestination: 16 },
          sources: [{ id: 'web' }],
          destinations: [{ id: 'remote', type: 'kafka', settings: { topic, cluster: { brokers: [other.brokers], clientId: 'sy-remote' } } }],
        },
        ['deliverer'],
      );
      const COUNT = 500;
      const events = Array.from({ length: COUNT }, (_, i) => ({
        key: `u${i % 7}`,
        value: track(`u${i % 7}`, i),
        headers: { 'source-id': 'web', 'message-id': `m-${i}`, attempt: '0', 'first-attempt-at': '' },
      }));
      await kafka.produce(`${prefix}deliveries.remote`, events);
      const read = await readTopic(otherKafka.admin, topic, { atLeast: COUNT, timeoutMs: 90_000, settleMs: 500 }, [other.brokers]);
      const ids = new Set(read.map((r) => headerOf(r, 'message-id')));
      expect(ids.size).toBe(COUNT);
      for (const record of read) expect(record.text).toBe(track(record.key!, Number(headerOf(record, 'message-id')!.slice(2))));

      // The same cluster again, now as a private address with the guard on: nothing sent, each event dead-lettered as blocked.
      const guardedPrefix = randomPrefix();
      const guardedTopic = randomName('guarded');
      await otherKafka.admin.createTopics({ topics: [{ topic: guardedTopic, numPartitions: 1 }] });
      await startRoles(
        {
          kafka: { brokers: testBrokers(), clientId: randomName('kdest'), topicPrefix: guardedPrefix, partitions: 1 },
          delivery: { timeout: '5s', retryTiers: ['1s'], maxRetryWindow: '1m', blockPrivateNetworks: true },
          sources: [{ id: 'web' }],
          destinations: [{ id: 'guarded', type: 'kafka', settings: { topic: guardedTopic, cluster: { brokers: [other.brokers] } } }],
        },
        ['deliverer'],
      );
      await kafka.produce(`${guardedPrefix}deliveries.guarded`, events.slice(0, 3));
      const letters = await readTopic(kafka.admin, `${guardedPrefix}deliveries.guarded.dlq`, { atLeast: 3, timeoutMs: 60_000 });
      expect(letters.map((l) => headerOf(l, 'message-id'))).toEqual(['m-0', 'm-1', 'm-2']);
      const host = other.brokers.slice(0, other.brokers.lastIndexOf(':'));
      const refused = new RegExp(`^topic ${guardedTopic}: not sent: ${host.replace(/\./g, '\\.')}( resolves to [^,]+)?, .*delivery\\.blockPrivateNetworks refuses it$`);
      for (const letter of letters) expect(headerOf(letter, 'error')).toMatch(refused);
      const offsets = await otherKafka.admin.fetchTopicOffsets(guardedTopic);
      expect(offsets.map((p) => p.high)).toEqual(['0']);
    } finally {
      await otherKafka.close();
    }
  });
});
