// RetryOrDeadLetter.afterFailure: the failed answers of each attempt go into the next
// record's attempt-history header (and a held retry's envelope), and the `error` leads
// with what the receiver answered, a skipped URL's with its last answer from the history.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { retryPolicyOf } from '../../../src/config/retry-policy.js';
import type { AttemptAnswer } from '../../../src/delivery/attempt-history.js';
import { classifyStatus } from '../../../src/delivery/classify.js';
import { DeliveryCounters } from '../../../src/delivery/delivery-counters.js';
import { prepareDestination } from '../../../src/delivery/destination-settings.js';
import { readEnvelope } from '../../../src/delivery/envelope.js';
import type { Envelope } from '../../../src/delivery/envelope.js';
import { summarize } from '../../../src/delivery/fan-out.js';
import type { UrlResult } from '../../../src/delivery/fan-out.js';
import { RetryOrDeadLetter, isHeldRetry } from '../../../src/delivery/retry-or-dead-letter.js';
import type { InboundRecord, RecordHeaders, RecordProducer } from '../../../src/kafka/index.js';
import { silentLogger } from '../../../src/observability/logger.js';
import { createMetrics } from '../../../src/observability/metrics.js';

const T0 = Date.UTC(2026, 4, 1, 12);

function fixture(extraHeaders: RecordHeaders = {}) {
  const loaded = parseConfigText(
    `
kafka: { brokers: ['127.0.0.1:9092'] }
delivery: { retryTiers: [10s], maxRetryWindow: 1h }
sources: [{ id: web, destinations: [d] }]
destinations:
  - id: d
    type: webhooks
    settings: { webhooks: [{ url: 'https://user:pw@a.example.com/in?token=x' }, { url: 'https://b.example.com:8443/in' }] }
`,
    'switchyard.yaml',
    {},
  );
  if (!loaded.ok) throw new Error(loaded.errors.join('; '));
  const settings = prepareDestination(loaded.config.destinations[0]!);
  const metrics = createMetrics({ defaultMetrics: false });
  const written: { topic: string; headers: RecordHeaders }[] = [];
  const producer = {
    send: (batches: { topic: string; messages: { headers: RecordHeaders }[] }[]) => {
      for (const { topic, messages } of batches) for (const m of messages) written.push({ topic, headers: m.headers });
      return Promise.resolve();
    },
  } as unknown as RecordProducer;
  const topics = { main: 'deliveries.d', retries: [{ tier: { name: '10s', ms: 10_000 }, topic: 'deliveries.d.retry.10s', leftover: false }], dlq: 'deliveries.d.dlq' };
  const next = new RetryOrDeadLetter({ destinationId: 'd', topics, policy: retryPolicyOf(loaded.config, undefined), producer, counters: new DeliveryCounters(metrics, 'd'), logger: silentLogger() });
  const record: InboundRecord = { topic: 'deliveries.d', partition: 0, offset: '7', key: Buffer.from('u-1'), value: Buffer.from('{}'), headers: { 'message-id': 'm-1', attempt: '0', ...extraHeaders }, timestamp: String(T0) };
  const fail = (envelope: Envelope, results: UrlResult[], attemptedAtMs: number, hold = false) =>
    next.afterFailure({ record, envelope, settings, firstAttemptAtMs: Date.now(), attemptedAtMs, results, summary: summarize(results) }, hold);
  return { fail, written, envelope: readEnvelope(record.headers, record.timestamp) };
}

const answered = (index: number, status: number, response?: string, durationMs = 12): UrlResult => ({
  index,
  result: { ...classifyStatus(status, undefined, T0), ...(response === undefined ? {} : { response }), durationMs },
});
const refused = (index: number): UrlResult => ({ index, result: { outcome: 'network', verdict: 'retryable', reason: 'connection refused', durationMs: 1 } });
const skipped = (index: number): UrlResult => ({ index, result: { outcome: 'circuit_open', verdict: 'retryable', reason: '503 Service Unavailable (its last failed answer; no request this attempt)', durationMs: 0 } });
const history = (headers: RecordHeaders) => JSON.parse(String(headers['attempt-history'])) as AttemptAnswer[];

describe('RetryOrDeadLetter.afterFailure', () => {
  it("writes each attempt's failed answers, by URL, into the retry's attempt-history; the error leads with the answer", async () => {
    const { fail, written, envelope } = fixture();
    expect(await fail(envelope, [refused(1), answered(0, 500, 'boom: database down', 41.6)], T0)).toBe('retry_scheduled');
    const [retry] = written;
    expect(retry!.topic).toBe('deliveries.d.retry.10s');
    expect(retry!.headers.error).toBe('webhooks[0] https://a.example.com: 500 Internal Server Error: boom: database down; webhooks[1] https://b.example.com:8443: connection refused');
    expect(history(retry!.headers)).toEqual([
      { at: '2026-05-01T12:00:00.000Z', urlIndex: 0, origin: 'https://a.example.com', status: 500, latencyMs: 42, response: 'boom: database down' },
      { at: '2026-05-01T12:00:00.000Z', urlIndex: 1, origin: 'https://b.example.com:8443', error: 'connection refused', latencyMs: 1 },
    ]);
    // Neither user info nor path nor query of the URL is stored.
    expect(JSON.stringify(retry!.headers)).not.toMatch(/user|pw|token|\/in/);
  });

  it('a held retry carries the answers in its envelope; the next failure adds to them, and a skipped URL is named by its last answer', async () => {
    const { fail, written, envelope } = fixture();
    const held = await fail(envelope, [answered(0, 503), answered(1, 500, 'boom')], T0, true);
    if (!isHeldRetry(held)) throw new Error('expected a held retry');
    expect(written).toEqual([]);
    expect(held.held.answers?.map((a) => [a.urlIndex, a.status])).toEqual([
      [0, 503],
      [1, 500],
    ]);
    // The next attempt: URL 0 skipped by its circuit (so worth another try), URL 1 refuses the event.
    expect(await fail(held.held, [skipped(0), answered(1, 400, 'missing field: total')], T0 + 10_000)).toBe('retry_scheduled');
    const [retry] = written;
    expect(retry!.topic).toBe('deliveries.d.retry.10s');
    expect(retry!.headers.error).toBe(
      'webhooks[0] https://a.example.com: 503 Service Unavailable (its last answer, at 2026-05-01T12:00:00.000Z; no request this attempt); ' +
        'webhooks[1] https://b.example.com:8443: 400 Bad Request: missing field: total',
    );
    expect(history(retry!.headers).map((a) => [a.at, a.urlIndex, a.status, a.response])).toEqual([
      ['2026-05-01T12:00:00.000Z', 0, 503, undefined],
      ['2026-05-01T12:00:00.000Z', 1, 500, 'boom'],
      ['2026-05-01T12:00:10.000Z', 1, 400, 'missing field: total'],
    ]);
  });

  it("reads the earlier answers from the record's attempt-history header", async () => {
    const earlier: AttemptAnswer[] = [{ at: '2026-05-01T11:59:00.000Z', urlIndex: 0, origin: 'https://a.example.com', status: 502, latencyMs: 3 }];
    const { fail, written, envelope } = fixture({ 'attempt-history': Buffer.from(JSON.stringify(earlier)) });
    await fail(envelope, [answered(0, 503)], T0);
    expect(history(written[0]!.headers).map((a) => [a.at, a.status])).toEqual([
      ['2026-05-01T11:59:00.000Z', 502],
      ['2026-05-01T12:00:00.000Z', 503],
    ]);
  });
});
