// A destination's life (docs/webhooks.md#automatic-disabling, docs/operations.md#operational-events)
// on a real broker with thresholds of seconds, with two deliverer "pods" (each its own
// Kafka client, metrics and services, as `switchyard deliverer` wires them): a receiver
// that answers 503 makes its destination failing (at half of `after` and at 90 %), then
// disabled; while disabled its events are neither delivered nor dead-lettered; the state
// survives a restart of both pods; `switchyard destinations enable` (the CLI, a real
// process) delivers every event, in each user's order. Each transition is one event on
// the operations topic and one signed POST to the operations webhook, whatever the number
// of pods; another destination delivers all along.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import type { Config } from '../../src/config/schema.js';
import { createKafka } from '../../src/kafka/index.js';
import { createLogger, silentLogger } from '../../src/observability/logger.js';
import type { DestinationStates } from '../../src/lifecycle/state-follower.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { startDaemon, writeConfigFile } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver, staysQuiet } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const SECRET_KEY = Buffer.from('operations-webhook-test-key-0001');
const SECRET = `whsec_${SECRET_KEY.toString('base64')}`;
const AFTER_S = 3;

const trackBody = (userId: string, messageId: string) =>
  `{"version":1,"type":"track","userId":"${userId}","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":1}}`;

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let prefix: string;
let shape: Record<string, unknown>;
let config: Config;
let flaky: Receiver;
let steady: Receiver;
let operations: Receiver;
let gone: Receiver;
let pods: Service[][] = [];

/** One deliverer pod: the services `switchyard deliverer` runs, on a client and metrics of its own. */
async function startPod(): Promise<Service[]> {
  const logger = process.env.LIFECYCLE_TEST_LOG === undefined ? silentLogger() : createLogger({ level: 'debug', secrets: () => [] });
  const deps = testRoleDeps(config, { kafka: createKafka(config.kafka, logger), logger });
  const services = ROLE_FACTORIES.deliverer(deps);
  for (const service of services) await service.start();
  return services;
}

async function stopPods(): Promise<void> {
  for (const pod of pods) for (const service of [...pod].reverse()) await service.stop();
  pods = [];
}

const statesOf = (pod: Service[]) => pod.find((s) => s.name === 'destination-states') as DestinationStates;

async function produce(destination: string, events: [string, string][]): Promise<void> {
  const messages = events.map(([userId, messageId]) => ({
    key: userId,
    value: trackBody(userId, messageId),
    headers: { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '' },
  }));
  await kafka.produce(`${prefix}deliveries.${destination}`, messages);
}

/** The operational events of the topic, in order, of one destination (when given). */
async function operationEvents(atLeast: number, destination?: string): Promise<Record<string, unknown>[]> {
  const all = async () => (await kafka.readAll(`${prefix}operations`, { timeoutMs: 30_000 })).map((m) => JSON.parse(m.text) as Record<string, unknown>).filter((e) => destination === undefined || e.destination === destination);
  return waitFor(async () => {
    const events = await all();
    return events.length >= atLeast ? events : undefined;
  }, { timeoutMs: 100_000, what: `${atLeast} operational events${destination === undefined ? '' : ` of ${destination}`}` });
}

/** The Standard Webhooks signature, computed here from the spec. */
function expectedSignature(id: string, timestamp: string, body: string): string {
  return `v1,${createHmac('sha256', SECRET_KEY).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The distinct message ids in the order the receiver first got them. */
const firstDeliveries = (receiver: Receiver, status: (i: number) => boolean) => {
  const seen: string[] = [];
  receiver.requests.forEach((r, i) => {
    const id = String(r.headers['message-id'] ?? (JSON.parse(r.text) as { messageId: string }).messageId);
    if (status(i) && !seen.includes(id)) seen.push(id);
  });
  return seen;
};

beforeAll(async () => {
  kafka = await createTestKafka();
  flaky = await startReceiver();
  steady = await startReceiver();
  operations = await startReceiver();
  gone = await startReceiver();
  flaky.reply({ status: 503 });
  // 501 is permanent: each event is dead-lettered after one request.
  gone.reply({ status: 501 });
  prefix = randomPrefix();
  shape = {
    kafka: { brokers: testBrokers(), clientId: randomName('lifecycle'), topicPrefix: prefix, partitions: 2 },
    // NOTE: the circuit breaker is kept out of the way: this file is about the lifecycle.
    delivery: { timeout: '1s', retryTiers: ['200ms', '500ms'], maxRetryWindow: '120s', circuitBreaker: { minAttempts: 1000, unanswered: 1000 } },
    sources: [{ id: 'web', writeKey: 'web-write-key' }],
    operations: { webhooks: [{ url: operations.url('/ops'), secret: SECRET }] },
    destinations: [
      { id: 'flaky', type: 'webhooks', settings: { webhooks: [{ url: flaky.url() }], ordering: 'user', autoDisable: { after: `${AFTER_S}s`, minAttempts: 3 } } },
      { id: 'steady', type: 'webhooks', settings: { webhooks: [{ url: steady.url() }] } },
      { id: 'gone', type: 'webhooks', settings: { webhooks: [{ url: gone.url() }] } },
    ],
  };
  config = testConfig(shape, 'destination-lifecycle.test.yaml');
  pods = [await startPod(), await startPod()];
}, 120_000);

afterAll(async () => {
  await stopPods();
  for (const receiver of [flaky, steady, operations, gone]) await receiver?.close();
  await kafka?.close();
});

describe('a destination whose receiver is down', () => {
  it('goes failing at half of `after` and at 90 %, then is disabled; each transition written once by two pods', async () => {
    await produce('flaky', [
      ['u-1', 'a-1'],
      ['u-2', 'b-1'],
      ['u-1', 'a-2'],
      ['u-2', 'b-2'],
    ]);
    await produce('steady', [['u-1', 's-1']]);

    await waitFor(() => pods.every((pod) => statesOf(pod).view.lifecycle('flaky').state === 'disabled'), { timeoutMs: 60_000, what: 'both pods to see flaky disabled' });
    const events = await operationEvents(3, 'flaky');
    expect(events.map((e) => [e.type, e.destination, e.share ?? null])).toEqual([
      ['destination.failing', 'flaky', 0.5],
      ['destination.failing', 'flaky', 0.9],
      ['destination.disabled', 'flaky', null],
    ]);
    const disabled = events[2]!;
    expect(disabled).toMatchObject({ state: 'disabled', by: 'switchyard', automatic: true });
    expect(String(disabled.reason)).toContain(`no successful attempt for ${AFTER_S}s`);
    expect(steady.requests.length).toBeGreaterThanOrEqual(1);
  });

  it('sums the dead letters of every pod per destination and minute into one message.dead_lettered event', async () => {
    // Three users: both pods dead-letter some (two partitions). The event of a minute comes once it ended.
    await produce('gone', [
      ['u-1', 'g-1'],
      ['u-2', 'g-2'],
      ['u-3', 'g-3'],
    ]);
    const events = await operationEvents(1, 'gone');
    // NOTE: the three may fall in two minutes (each summed once it ended, plus its grace):
    // up to two minutes and a half.
    await waitFor(async () => (await operationEvents(1, 'gone')).reduce((n, e) => n + Number(e.count), 0) >= 3, { timeoutMs: 160_000, what: 'the three dead letters of gone in events' });
    const all = await operationEvents(events.length, 'gone');
    expect(all.every((e) => e.type === 'message.dead_lettered' && e.state === 'active')).toBe(true);
    expect(all.reduce((n, e) => n + Number(e.count), 0)).toBe(3);
    expect(all.flatMap((e) => e.messageIds as string[]).sort()).toEqual(['g-1', 'g-2', 'g-3']);
    // One event per minute, whichever pod dead-lettered which event.
    expect(new Set(all.map((e) => e.minute)).size).toBe(all.length);
  }, 220_000);

  it('POSTs each event to the operations webhook, signed as Standard Webhooks', async () => {
    // The three of the first test (failing twice, then disabled).
    const onTopic = await operationEvents(3);
    await waitFor(() => operations.requests.length >= onTopic.length, { what: 'every event at the operations webhook' });
    for (const [i, request] of operations.requests.slice(0, onTopic.length).entries()) {
      const id = String(request.headers['webhook-id']);
      const timestamp = String(request.headers['webhook-timestamp']);
      expect(request.headers['webhook-signature']).toBe(expectedSignature(id, timestamp, request.text));
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.text).toBe(JSON.stringify(onTopic[i]));
      expect(id).toBe(onTopic[i]!.id);
    }
    // Each event once at the webhook, as on the topic (two pods run, one writes).
    await waitFor(async () => operations.requests.length === (await operationEvents(0)).length, { what: 'as many webhook requests as events' });
    expect(new Set(operations.requests.map((r) => r.headers['webhook-id'])).size).toBe(operations.requests.length);
  });

  it('while disabled, neither delivers nor dead-letters its events, also across a restart of every pod', async () => {
    flaky.reply({ status: 200 });
    await produce('flaky', [
      ['u-1', 'a-3'],
      ['u-2', 'b-3'],
    ]);
    const before = flaky.requests.length;
    expect(await staysQuiet(flaky, 2_000)).toBe(true);
    await stopPods();
    pods = [await startPod(), await startPod()];
    for (const pod of pods) expect(statesOf(pod).view.lifecycle('flaky')).toMatchObject({ state: 'disabled', by: 'switchyard' });
    expect(await staysQuiet(flaky, 2_000)).toBe(true);
    expect(flaky.requests.length).toBe(before);
    const topics = await kafka.admin.listTopics();
    if (topics.includes(`${prefix}deliveries.flaky.dlq`)) expect(await kafka.readAll(`${prefix}deliveries.flaky.dlq`, { timeoutMs: 5_000 })).toEqual([]);
  }, 90_000);

  it('`switchyard destinations enable` delivers every event, in each user\'s order, with nothing dead-lettered', async () => {
    const failedBefore = flaky.requests.length;
    const file = writeConfigFile(shape);
    const cli = startDaemon(['destinations', 'enable', 'flaky', '--reason', 'receiver fixed', '--config', file], { KAFKA_BROKERS: testBrokers().join(',') });
    expect(await cli.exited, cli.output()).toBe(0);
    expect(cli.output()).toContain('flaky  active');
    await waitFor(() => firstDeliveries(flaky, (i) => i >= failedBefore).length === 6, { timeoutMs: 60_000, what: 'all six flaky events delivered' });
    const delivered = firstDeliveries(flaky, (i) => i >= failedBefore);
    expect(delivered.filter((id) => id.startsWith('a-'))).toEqual(['a-1', 'a-2', 'a-3']);
    expect(delivered.filter((id) => id.startsWith('b-'))).toEqual(['b-1', 'b-2', 'b-3']);
    const events = await operationEvents(4, 'flaky');
    expect(events.map((e) => e.type)).toEqual(['destination.failing', 'destination.failing', 'destination.disabled', 'destination.enabled']);
    expect(events[3]).toMatchObject({ destination: 'flaky', state: 'active', reason: 'receiver fixed' });
    expect(String(events[3]!.by)).toContain('(cli)');
    await waitFor(() => operations.requests.some((r) => r.text.includes('"type":"destination.enabled"')), { what: 'the enabled event at the operations webhook' });
    const topics = await kafka.admin.listTopics();
    if (topics.includes(`${prefix}deliveries.flaky.dlq`)) expect(await kafka.readAll(`${prefix}deliveries.flaky.dlq`, { timeoutMs: 5_000 })).toEqual([]);
  }, 90_000);
});
