// W3C trace context across the hops (docs/kafka.md, docs/webhooks.md): all the roles use of
// @opentelemetry/api (the SDK lives in tracing-sdk.ts). Each hop (gateway request,
// router call, delivery attempt) is a span whose parent is the `traceparent` it
// received (HTTP header or Kafka header) and whose own context is the `traceparent`
// it passes on, so a webhook receiver joins the caller's trace.
//
// NOTE: contexts are passed explicitly (ROOT_CONTEXT + the parsed parent), never
// through the active context: no context manager is needed, and a hop can never be
// parented by whatever async work happened to be running.
//
// With no SDK installed (the default) `tracingActive()` is false: the hops create no
// span and no per-message object, and the incoming `traceparent` travels unchanged.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace } from '@opentelemetry/api';
import type { Attributes, Span, SpanContext, Tracer, TracerProvider } from '@opentelemetry/api';
import { VERSION } from '../version.js';

export { SpanKind, SpanStatusCode };
export type { Attributes, Span, SpanContext };

/** Longest `traceparent` header accepted; a future version may append fields, not kilobytes. */
const MAX_TRACEPARENT_LENGTH = 256;
const VERSION_00_LENGTH = 55;
const HEX = /^[0-9a-f]+$/;
const LATER_VERSION_TAIL = /^(?:-[\x21-\x7e]*)?$/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_SPAN_ID = '0'.repeat(16);

let tracer: Tracer | undefined;

/** Whether an SDK is installed: only then do the hops create spans. */
export function tracingActive(): boolean {
  return tracer !== undefined;
}

/**
 * Makes `provider` the global tracer provider and switches the hops' spans on. Called
 * by tracing-sdk.ts, which the composition root and the tests use.
 */
export function activateTracing(provider: TracerProvider): void {
  trace.setGlobalTracerProvider(provider);
  tracer = trace.getTracer('switchyard', VERSION);
}

/** Switches the spans off again and unregisters the global provider. */
export function deactivateTracing(): void {
  tracer = undefined;
  trace.disable();
}

/**
 * A `traceparent` value (W3C Trace Context, level 1) as a span context, or undefined
 * when it is absent or malformed (then a hop starts a new trace). Case and surrounding
 * blanks are forgiven; a later version's extra fields are allowed and ignored.
 */
export function parseTraceparent(text: string | undefined): SpanContext | undefined {
  if (text === undefined || text.length > MAX_TRACEPARENT_LENGTH) return undefined;
  const value = text.trim().toLowerCase();
  if (value.length < VERSION_00_LENGTH) return undefined;
  const version = value.slice(0, 2);
  if (!HEX.test(version) || version === 'ff') return undefined;
  // Version 00 is exactly 55 characters; a later version may append "-" and more fields.
  if (version === '00' ? value.length !== VERSION_00_LENGTH : !LATER_VERSION_TAIL.test(value.slice(VERSION_00_LENGTH))) return undefined;
  if (value[2] !== '-' || value[35] !== '-' || value[52] !== '-') return undefined;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  const flags = value.slice(53, 55);
  if (!HEX.test(traceId) || !HEX.test(spanId) || !HEX.test(flags)) return undefined;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_SPAN_ID) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true };
}

/** The `traceparent` value (version 00) of a span context. */
export function formatTraceparent(context: SpanContext): string {
  // Only the sampled bit is defined by level 1; the others must be sent as zero.
  const flags = (context.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00';
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/**
 * A received `traceparent` header in the form it is passed on when no SDK is
 * installed: trimmed and lower-cased, or undefined when it is not valid.
 */
export function traceparentHeader(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || parseTraceparent(value) === undefined) return undefined;
  return value.trim().toLowerCase();
}

/**
 * Starts a hop's span as a child of `parent` (a `traceparent` value), or as the root
 * of a new trace when there is none. Undefined when tracing is off: callers then pass
 * `parent` on unchanged.
 */
export function startHopSpan(name: string, kind: SpanKind, parent: string | undefined, attributes: Attributes): Span | undefined {
  if (tracer === undefined) return undefined;
  const parentContext = parseTraceparent(parent);
  const context = parentContext === undefined ? ROOT_CONTEXT : trace.setSpanContext(ROOT_CONTEXT, parentContext);
  return tracer.startSpan(name, { kind, attributes }, context);
}

/** The `traceparent` to pass on after a hop: its span's own context, else what came in. */
export function outgoingTraceparent(span: Span | undefined, incoming: string | undefined): string | undefined {
  return span === undefined ? incoming : formatTraceparent(span.spanContext());
}

/** Ends a span, as failed when `error` is given (an Error or a reason for people). */
export function endSpan(span: Span | undefined, error?: unknown): void {
  if (span === undefined) return;
  if (error !== undefined) {
    if (error instanceof Error) span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

/**
 * What the standard OpenTelemetry environment variables ask for. Tracing is on when
 * `OTEL_TRACES_EXPORTER` lists `otlp`, or when it is unset and an OTLP endpoint is
 * set; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` switch it off; any
 * other exporter name is `unsupported` (worth a warning: someone expected spans).
 * Pure: the composition root hands in the environment.
 */
export function tracingRequest(env: Record<string, string | undefined>): { mode: 'on' | 'off' | 'unsupported'; why: string } {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { mode: 'off', why: 'OTEL_SDK_DISABLED is true' };
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
  if (exporters !== undefined && exporters.length > 0) {
    if (exporters.includes('otlp')) return { mode: 'on', why: 'OTEL_TRACES_EXPORTER lists otlp' };
    if (exporters.every((name) => name === 'none')) return { mode: 'off', why: 'OTEL_TRACES_EXPORTER is none' };
    return {
      mode: 'unsupported',
      why: `OTEL_TRACES_EXPORTER is "${exporters.join(',')}", but switchyard exports spans only with "otlp" (OTLP over HTTP): set OTEL_TRACES_EXPORTER=otlp and OTEL_EXPORTER_OTLP_ENDPOINT, or unset it`,
    };
  }
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT']) {
    if (env[name]?.trim()) return { mode: 'on', why: `${name} is set` };
  }
  return { mode: 'off', why: 'neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_TRACES_EXPORTER=otlp is set' };
}
