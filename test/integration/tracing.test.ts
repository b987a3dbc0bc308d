// Trace context through every hop, in-process against the real broker and a real
// receiver: without an SDK the caller's traceparent reaches the webhook unchanged;
// with one, gateway → router → delivery attempt form one trace whose last span is
// the parent the receiver sees. Last, the real daemon switched on by OTEL_* variables
// exports the same trace over OTLP/HTTP to a local collector stand-in.
import { randomBytes } from 'node:crypto';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivererService } from '../../src/delivery/deliverer-service.js';
import { createGatewayService } from '../../src/gateway/gateway-service.js';
import type { GatewayService } from '../../src/gateway/gateway-service.js';
import { SpanKind } from '../../src/observability/tracing.js';
import { installTracing } from '../../src/observability/tracing-sdk.js';
import type { TracingSdk } from '../../src/observability/tracing-sdk.js';
import { createRouterService } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { startRole, writeConfigFile } from '../support/daemon.js';
import { randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { ReceivedRequest, Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const WRITE_KEY = 'wk-tracing-0001';
const CALLER_SPAN_ID = 'b7ad6b7169203331';

let receiver: Receiver;
let gateway: GatewayService;
let services: Service[] = [];
let sdk: TracingSdk | undefined;

beforeAll(async () => {
  receiver = await startReceiver();
  const config = testConfig(
    {
      kafka: { brokers: testBrokers(), clientId: randomName('tracing'), topicPrefix: randomPrefix(), partitions: 2 },
      gateway: { port: 0, host: '127.0.0.1' },
      delivery: { timeout: '5s', retryTiers: ['200ms'], maxRetryWindow: '1m' },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: receiver.url() }] } }],
    },
    'tracing.test.yaml',
  );
  const deps = testRoleDeps(config);
  gateway = createGatewayService(deps);
  services = [createDelivererService(deps, { sampleIntervalMs: 60_000 }), createRouterService({ ...deps, tuning: { lagIntervalMs: 60_000 } }), gateway];
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'gateway, router and deliverer to be ready' });
});

afterAll(async () => {
  await sdk?.shutdown();
  for (const service of [...services].reverse()) await service.stop();
  await receiver?.close();
});

async function track(messageId: string, traceparent: string): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${gateway.port()}/v1/track`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`, traceparent },
    body: JSON.stringify({ userId: 'u-trace', event: 'Order Completed', messageId, properties: { total: 1 } }),
  });
  expect(response.status).toBe(200);
}

function requestsFor(messageId: string): ReceivedRequest[] {
  return receiver.requests.filter((r) => (JSON.parse(r.text) as { messageId?: string }).messageId === messageId);
}

function traceId(): string {
  return randomBytes(16).toString('hex');
}

describe('without an OpenTelemetry SDK', () => {
  it('passes the caller’s traceparent to the webhook unchanged', async () => {
    const traceparent = `00-${traceId()}-${CALLER_SPAN_ID}-01`;
    await track('plain-1', traceparent);
    const [request] = await waitFor(() => (requestsFor('plain-1').length > 0 ? requestsFor('plain-1') : undefined), { what: 'the webhook request' });
    expect(request!.headers.traceparent).toBe(traceparent);
  });
});

describe('with an OpenTelemetry SDK', () => {
  const exporter = new InMemorySpanExporter();
  const spansOf = (trace: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === trace);
  const one = (spans: ReadableSpan[], name: string) => {
    const found = spans.filter((s) => s.name === name);
    expect(found, `spans named ${name}`).toHaveLength(1);
    return found[0]!;
  };

  beforeAll(() => {
    sdk = installTracing({ exporter, batch: false, role: 'test' });
  });

  it('makes gateway → router → delivery one trace, joined by the receiver', async () => {
    const trace = traceId();
    await track('traced-1', `00-${trace}-${CALLER_SPAN_ID}-01`);
    const [request] = await waitFor(() => (requestsFor('traced-1').length > 0 ? requestsFor('traced-1') : undefined), { what: 'the webhook request' });
    // The delivery span ends just after the answer: wait for all three.
    const spans = await waitFor(() => (spansOf(trace).length >= 3 ? spansOf(trace) : undefined), { what: 'three spans of the trace' });
    expect(spans).toHaveLength(3);

    const gatewaySpan = one(spans, 'POST /v1/track');
    const routerSpan = one(spans, 'route track');
    const deliverySpan = one(spans, 'deliver hooks');
    expect(gatewaySpan.parentSpanContext?.spanId).toBe(CALLER_SPAN_ID);
    expect(routerSpan.parentSpanContext?.spanId).toBe(gatewaySpan.spanContext().spanId);
    expect(deliverySpan.parentSpanContext?.spanId).toBe(routerSpan.spanContext().spanId);
    // The receiver's request is the delivery attempt's child.
    expect(request!.headers.traceparent).toBe(`00-${trace}-${deliverySpan.spanContext().spanId}-01`);

    expect(gatewaySpan.kind).toBe(SpanKind.SERVER);
    expect(gatewaySpan.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/track',
      'http.response.status_code': 200,
      'switchyard.source': 'web',
      'switchyard.calls.accepted': 1,
      'switchyard.calls.invalid': 0,
    });
    expect(routerSpan.kind).toBe(SpanKind.CONSUMER);
    expect(routerSpan.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.message.id': 'traced-1',
      'switchyard.source': 'web',
      'switchyard.destinations': ['hooks'],
    });
    expect(routerSpan.attributes['messaging.destination.name']).toMatch(/calls$/);
    expect(deliverySpan.kind).toBe(SpanKind.CLIENT);
    expect(deliverySpan.attributes).toMatchObject({
      'switchyard.destination': 'hooks',
      'messaging.message.id': 'traced-1',
      'http.response.status_code': 200,
      'switchyard.delivery.attempt': 1,
      'switchyard.delivery.outcomes': ['2xx'],
      'switchyard.delivery.result': 'delivered',
    });
    expect(deliverySpan.status.code).toBe(0);
    // Each hop's span ends after its work: the router's once its write was acknowledged.
    for (const span of spans) expect(span.ended).toBe(true);
  });

  it('makes each retry of an event its own attempt span under the router’s', async () => {
    receiver.replyWith((request) => ((JSON.parse(request.text) as { messageId?: string }).messageId === 'traced-2' && requestsFor('traced-2').length === 1 ? { status: 503 } : { status: 200 }));
    const trace = traceId();
    await track('traced-2', `00-${trace}-${CALLER_SPAN_ID}-01`);
    const spans = await waitFor(() => (spansOf(trace).length >= 4 ? spansOf(trace) : undefined), { what: 'four spans of the trace' });
    receiver.reply({ status: 200 });

    const routerSpan = one(spans, 'route track');
    const attempts = spans.filter((s) => s.name === 'deliver hooks').sort((a, b) => Number(a.attributes['switchyard.delivery.attempt']) - Number(b.attributes['switchyard.delivery.attempt']));
    expect(attempts.map((s) => s.parentSpanContext?.spanId)).toEqual([routerSpan.spanContext().spanId, routerSpan.spanContext().spanId]);
    expect(attempts.map((s) => s.attributes['http.response.status_code'])).toEqual([503, 200]);
    expect(attempts.map((s) => s.attributes['switchyard.delivery.result'])).toEqual(['retry_scheduled', 'delivered']);
    expect(attempts.map((s) => s.status.code)).toEqual([2, 0]);
    // Each request carried its own attempt's context.
    expect(requestsFor('traced-2').map((r) => r.headers.traceparent)).toEqual(attempts.map((s) => `00-${trace}-${s.spanContext().spanId}-01`));
  });
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}

describe('switchyard all with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('exports the hops of a trace over OTLP/HTTP, the last ones flushed at SIGTERM', async () => {
    const collector = await startReceiver();
    const hooks = await startReceiver();
    try {
      const file = writeConfigFile({
        kafka: { brokers: testBrokers(), clientId: randomName('otlp'), topicPrefix: randomPrefix(), partitions: 1 },
        gateway: { port: 0, host: '127.0.0.1' },
        admin: { port: 0, host: '127.0.0.1' },
        sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'] }],
        destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: hooks.url() }] } }],
      });
      // The batch processor's 5 s delay is left as it is: the spans must come out with the shutdown flush.
      const daemon = await startRole('all', file, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url(''), OTEL_SERVICE_NAME: 'switchyard-test' });
      expect(daemon.logs.some((line) => line.msg === 'tracing on: spans are exported over OTLP/HTTP')).toBe(true);
      const listening = await daemon.waitForLog((line) => line.msg === 'gateway listening', 'the gateway port');
      const trace = traceId();
      const response = await fetch(`http://127.0.0.1:${listening.port as number}/v1/identify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`, traceparent: `00-${trace}-${CALLER_SPAN_ID}-01` },
        body: JSON.stringify({ userId: 'u-otlp', messageId: 'otlp-1', traits: { plan: 'pro' } }),
      });
      expect(response.status).toBe(200);
      await waitFor(() => hooks.requests.length > 0, { what: 'the webhook request' });
      daemon.kill('SIGTERM');
      expect(await daemon.exited).toBe(0);

      expect(collector.requests.every((r) => r.path === '/v1/traces' && r.headers['content-type'] === 'application/json')).toBe(true);
      const exported = collector.requests.flatMap((r) => {
        const payload = JSON.parse(r.text) as { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
        return payload.resourceSpans.flatMap((rs) => {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
          return rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ ...span, service })));
        });
      });
      const ofTrace = exported.filter((span) => span.traceId === trace);
      const byName = new Map(ofTrace.map((span) => [span.name, span]));
      expect([...byName.keys()].sort()).toEqual(['POST /v1/identify', 'deliver hooks', 'route identify']);
      expect(byName.get('POST /v1/identify')!.parentSpanId).toBe(CALLER_SPAN_ID);
      expect(byName.get('route identify')!.parentSpanId).toBe(byName.get('POST /v1/identify')!.spanId);
      expect(byName.get('deliver hooks')!.parentSpanId).toBe(byName.get('route identify')!.spanId);
      expect(hooks.requests[0]!.headers.traceparent).toBe(`00-${trace}-${byName.get('deliver hooks')!.spanId}-01`);
      expect(ofTrace.every((span) => span.service === 'switchyard-test')).toBe(true);
    } finally {
      await collector.close();
      await hooks.close();
    }
  });
});
