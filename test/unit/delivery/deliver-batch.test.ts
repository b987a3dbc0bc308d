import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { retryPolicyOf } from '../../../src/config/retry-policy.js';
import { classifyStatus } from '../../../src/delivery/classify.js';
import { EventDelivery } from '../../../src/delivery/deliver-event.js';
import { DeliveryCounters } from '../../../src/delivery/delivery-counters.js';
import { prepareDestination } from '../../../src/delivery/destination-settings.js';
import type { HttpSender, SendResult } from '../../../src/delivery/http-sender.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import { RatePace } from '../../../src/delivery/rate-pace.js';
import { RetryOrDeadLetter } from '../../../src/delivery/retry-or-dead-letter.js';
import { UrlCircuits } from '../../../src/delivery/url-circuits.js';
import type { InboundRecord, RecordProducer } from '../../../src/kafka/index.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { createMetrics } from '../../../src/observability/metrics.js';

const SECRET = 'batch-secret';
const body = (i: number) => `{"version":1,"type":"track","userId":"u-${i}","messageId":"m-${i}","timestamp":"2026-05-01T12:00:00.000Z","event":"E","properties":{}}`;

function record(i: number): InboundRecord {
  return { topic: 'deliveries.d', partition: 0, offset: String(i), key: Buffer.from(`u-${i}`), value: Buffer.from(body(i)), headers: { 'message-id': `m-${i}`, attempt: '0' }, timestamp: String(Date.now()) };
}

/** A deliverer's one batch destination with a sender that answers `answer(events in the body)`, and what it wrote to Kafka. */
function fixture(answer: (events: number) => number) {
  const loaded = parseConfigText(
    `
kafka: { brokers: ['127.0.0.1:9092'] }
delivery: { retryTiers: [10s], maxRetryWindow: 1h }
sources: [{ id: web, destinations: [d] }]
destinations:
  - id: d
    type: webhooks
    settings: { webhooks: [{ url: 'https://hooks.example.com/in' }], sharedSecret: ${SECRET}, batch: { maxEvents: 8 } }
`,
    'switchyard.yaml',
    {},
  );
  if (!loaded.ok) throw new Error(loaded.errors.join('; '));
  const { config } = loaded;
  const settings = prepareDestination(config.destinations[0]!);
  const metrics = createMetrics({ defaultMetrics: false });
  const counters = new DeliveryCounters(metrics, 'd');
  const logger = silentLogger();
  const requests: { events: number; body: Buffer; headers: Record<string, string> }[] = [];
  const sender: HttpSender = {
    send: (_target, sent, headers) => {
      const events = (JSON.parse(sent.toString('utf8')) as unknown[]).length;
      requests.push({ events, body: sent, headers });
      const result: SendResult = { ...classifyStatus(answer(events), undefined, Date.now()), durationMs: 1 };
      return Promise.resolve(result);
    },
    postForm: () => Promise.reject(new Error('no token requests here')),
    close: () => Promise.resolve(),
  };
  const written: { topic: string; messageId: string | undefined }[] = [];
  const producer = {
    send: (batches: { topic: string; messages: { headers?: Record<string, unknown> }[] }[]) => {
      for (const { topic, messages } of batches) for (const m of messages) written.push({ topic, messageId: m.headers?.['message-id'] as string | undefined });
      return Promise.resolve();
    },
  } as unknown as RecordProducer;
  const topics = { main: 'deliveries.d', retries: [{ tier: { name: '10s', ms: 10_000 }, topic: 'deliveries.d.retry.10s', leftover: false }], dlq: 'deliveries.d.dlq' };
  const circuits = new UrlCircuits({ destinationId: 'd', policy: () => ({ windowMs: 10_000, minAttempts: 100, failureRatio: 0.5, unanswered: 100, coolDownMs: 1_000, maxCoolDownMs: 4_000, probes: 1, trackedLeaseMs: 10_000 }), gauge: metrics.circuitState, logger });
  circuits.follow(settings);
  const next = new RetryOrDeadLetter({ destinationId: 'd', topics, policy: retryPolicyOf(config, undefined), producer, counters, logger });
  const delivery = new EventDelivery({ destinationId: 'd', sender, circuits, pace: new RatePace(3_600_000), counters, next, logger });
  const deliver = (count: number, hold = false) => {
    const events = Array.from({ length: count }, (_, i) => record(i)).map((r) => ({ record: r, envelope: readEnvelope(r.headers, r.timestamp) }));
    return delivery.deliverBatch({ events, settings, admitted: circuits.admit(settings, Date.now()), hold });
  };
  const batchSizes = async () => (await metrics.batchSize.get()).values.find((v) => v.metricName === 'switchyard_batch_size_count')?.value;
  return { deliver, requests, written, batchSizes };
}

const values = (outcomes: PromiseSettledResult<unknown>[]) => outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'rejected'));

describe('EventDelivery.deliverBatch', () => {
  it('sends the events as one array signed over its bytes; a 2xx delivers each', async () => {
    const { deliver, requests, batchSizes } = fixture(() => 200);
    expect(values(await deliver(3))).toEqual(['delivered', 'delivered', 'delivered']);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.body.toString('utf8')).toBe(`[${body(0)},${body(1)},${body(2)}]`);
    expect(requests[0]!.headers['x-signature']).toBe(createHmac('sha1', SECRET).update(requests[0]!.body).digest('hex'));
    expect(await batchSizes()).toBe(1);
  });

  it('413 splits in halves at once, down to what the receiver takes', async () => {
    const { deliver, requests, written } = fixture((events) => (events > 2 ? 413 : 200));
    expect(values(await deliver(7))).toEqual(Array(7).fill('delivered'));
    expect(requests.map((r) => r.events)).toEqual([7, 4, 3, 2, 2, 2, 1]);
    expect(written).toEqual([]);
  });

  it('a single event answered 413 is dead-lettered like any 4xx', async () => {
    const { deliver, written } = fixture(() => 413);
    expect(values(await deliver(2))).toEqual(['dead_lettered', 'dead_lettered']);
    expect(written.map((w) => w.topic)).toEqual(['deliveries.d.dlq', 'deliveries.d.dlq']);
  });

  it('a retryable answer sends each event to its retry tier; a permanent one dead-letters each', async () => {
    const retried = fixture(() => 503);
    expect(values(await retried.deliver(3))).toEqual(['retry_scheduled', 'retry_scheduled', 'retry_scheduled']);
    expect(retried.written).toEqual([0, 1, 2].map((i) => ({ topic: 'deliveries.d.retry.10s', messageId: `m-${i}` })));
    const refused = fixture(() => 400);
    expect(values(await refused.deliver(3))).toEqual(['dead_lettered', 'dead_lettered', 'dead_lettered']);
    expect(refused.written.map((w) => w.topic)).toEqual(Array(3).fill('deliveries.d.dlq'));
  });

  it('ordering user: a retryable answer holds each event in the lane with its next due time, writing nothing', async () => {
    const { deliver, written } = fixture(() => 503);
    const before = Date.now();
    const outcomes = values(await deliver(2, true)) as { held: { attemptsMade: number; dueAtMs: number } }[];
    expect(outcomes.map((o) => o.held.attemptsMade)).toEqual([1, 1]);
    for (const o of outcomes) expect(o.held.dueAtMs).toBeGreaterThanOrEqual(before + 10_000);
    expect(written).toEqual([]);
  });
});
