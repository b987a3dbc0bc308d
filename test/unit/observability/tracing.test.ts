import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import {
  SpanKind,
  endSpan,
  formatTraceparent,
  outgoingTraceparent,
  parseTraceparent,
  startHopSpan,
  traceparentHeader,
  tracingActive,
  tracingRequest,
} from '../../../src/observability/tracing.js';
import { installTracing } from '../../../src/observability/tracing-sdk.js';
import type { TracingSdk } from '../../../src/observability/tracing-sdk.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const SPAN_ID = 'b7ad6b7169203331';
const SAMPLED = `00-${TRACE_ID}-${SPAN_ID}-01`;

describe('parseTraceparent', () => {
  it.each([
    [SAMPLED, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true }],
    [`00-${TRACE_ID}-${SPAN_ID}-00`, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0, isRemote: true }],
    // Case and surrounding blanks are forgiven.
    [`  00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01 `, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true }],
    // A later version may append fields; they are ignored.
    [`01-${TRACE_ID}-${SPAN_ID}-01-what-comes-next`, { traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true }],
  ])('reads %s', (text, expected) => {
    expect(parseTraceparent(text)).toEqual(expected);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['not a trace', 'not-a-trace'],
    ['version ff (forbidden)', `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ['version 00 with extra fields', `${SAMPLED}-extra`],
    ['a later version glued to more text', `01-${TRACE_ID}-${SPAN_ID}-01x`],
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
    ['all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['short trace id', `00-${TRACE_ID.slice(1)}-${SPAN_ID}-01`],
    ['non-hex flags', `00-${TRACE_ID}-${SPAN_ID}-0x`],
    ['wrong separators', `00_${TRACE_ID}_${SPAN_ID}_01`],
    ['over 256 characters', `01-${TRACE_ID}-${SPAN_ID}-01-${'a'.repeat(250)}`],
  ])('refuses %s', (_what, text) => {
    expect(parseTraceparent(text)).toBeUndefined();
  });
});

describe('formatTraceparent', () => {
  it('writes version 00 with only the sampled flag', () => {
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1 })).toBe(SAMPLED);
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0 })).toBe(`00-${TRACE_ID}-${SPAN_ID}-00`);
    expect(formatTraceparent({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 0xff })).toBe(SAMPLED);
  });

  it('round-trips what it parses', () => {
    expect(formatTraceparent(parseTraceparent(SAMPLED)!)).toBe(SAMPLED);
  });
});

describe('traceparentHeader', () => {
  it('passes a valid header on trimmed and lower-cased, and drops an invalid one', () => {
    expect(traceparentHeader(` 00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`)).toBe(SAMPLED);
    expect(traceparentHeader([SAMPLED, 'second'])).toBe(SAMPLED);
    expect(traceparentHeader('00-zz')).toBeUndefined();
    expect(traceparentHeader(undefined)).toBeUndefined();
  });
});

describe('tracingRequest', () => {
  it.each([
    [{}, 'off'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'on'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, 'on'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, 'off'],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, 'on'],
    [{ OTEL_TRACES_EXPORTER: 'console, OTLP' }, 'on'],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'off'],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'unsupported'],
    [{ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' }, 'off'],
    [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'on'],
  ])('%j → %s', (env, mode) => {
    expect(tracingRequest(env).mode).toBe(mode);
  });

  it('says what to set when the exporter is not supported', () => {
    expect(tracingRequest({ OTEL_TRACES_EXPORTER: 'zipkin' }).why).toContain('OTEL_TRACES_EXPORTER=otlp');
  });
});

describe('hop spans', () => {
  let sdk: TracingSdk | undefined;

  afterEach(async () => {
    await sdk?.shutdown();
    sdk = undefined;
  });

  it('without an SDK: no span, and the incoming traceparent passes through unchanged', () => {
    expect(tracingActive()).toBe(false);
    const span = startHopSpan('route track', SpanKind.CONSUMER, SAMPLED, { 'switchyard.source': 'web' });
    expect(span).toBeUndefined();
    expect(outgoingTraceparent(span, SAMPLED)).toBe(SAMPLED);
    expect(outgoingTraceparent(span, undefined)).toBeUndefined();
  });

  it('with an SDK: a child of the incoming traceparent, whose own context is passed on', async () => {
    const exporter = new InMemorySpanExporter();
    sdk = installTracing({ exporter, batch: false, role: 'test' });
    expect(tracingActive()).toBe(true);

    const span = startHopSpan('route track', SpanKind.CONSUMER, SAMPLED, { 'switchyard.source': 'web' })!;
    const passedOn = outgoingTraceparent(span, SAMPLED)!;
    const own = span.spanContext();
    expect(passedOn).toBe(`00-${TRACE_ID}-${own.spanId}-01`);
    expect(own.spanId).not.toBe(SPAN_ID);
    endSpan(span);

    const root = startHopSpan('POST /v1/batch', SpanKind.SERVER, 'garbage', {})!;
    endSpan(root, new Error('kafka down'));

    const [child, failed] = exporter.getFinishedSpans();
    expect(child!.parentSpanContext).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    expect(child!.attributes).toEqual({ 'switchyard.source': 'web' });
    expect(child!.kind).toBe(SpanKind.CONSUMER);
    expect(child!.instrumentationScope.name).toBe('switchyard');
    expect(child!.resource.attributes['service.name']).toBe('switchyard');
    // A malformed parent starts a new trace.
    expect(failed!.parentSpanContext).toBeUndefined();
    expect(failed!.spanContext().traceId).not.toBe(TRACE_ID);
    expect(failed!.status).toEqual({ code: 2, message: 'kafka down' });
    expect(failed!.events.map((e) => e.name)).toEqual(['exception']);

    await sdk.shutdown();
    expect(tracingActive()).toBe(false);
    expect(startHopSpan('after', SpanKind.CONSUMER, SAMPLED, {})).toBeUndefined();
  });

  it('keeps an unsampled parent unsampled', () => {
    const exporter = new InMemorySpanExporter();
    sdk = installTracing({ exporter, batch: false, role: 'test' });
    const span = startHopSpan('deliver hooks', SpanKind.CLIENT, `00-${TRACE_ID}-${SPAN_ID}-00`, {})!;
    expect(outgoingTraceparent(span, undefined)).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));
    endSpan(span);
    expect(exporter.getFinishedSpans()).toEqual([]);
  });
});
