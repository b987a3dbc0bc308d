// The OpenTelemetry SDK side of tracing: a tracer provider with an exporter, installed
// as the global one. Loaded by the composition root with a dynamic import, and only
// when the OTEL_* environment asks for it (tracingRequest in tracing.ts), so a
// daemon without tracing never loads the SDK. Tests install it with an in-memory
// exporter.
import { DiagLogLevel, diag } from '@opentelemetry/api';
import type { DiagLogFunction } from '@opentelemetry/api';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import { VERSION } from '../version.js';
import { activateTracing, deactivateTracing } from './tracing.js';

export interface TracingSdk {
  /** Exports the spans still buffered, then switches tracing off. Safe to call twice. */
  shutdown(): Promise<void>;
}

/**
 * NOTE: bounds the final export on shutdown: a collector that does not answer must
 * not eat the whole shutdownTimeout and turn a clean exit into a forced one.
 */
const SHUTDOWN_FLUSH_MS = 3_000;

export function installTracing(options: {
  exporter: SpanExporter;
  /** Batches spans in the background (production); false exports each span as it ends (tests). */
  batch: boolean;
  role: string;
  logger?: Logger;
}): TracingSdk {
  const { logger } = options;
  if (logger !== undefined) {
    // The SDK's own troubles (an unreachable collector, dropped spans) as pino lines.
    const log = (level: 'warn' | 'error'): DiagLogFunction => (message, ...args) => logger[level]({ component: 'opentelemetry', detail: args }, message);
    diag.setLogger({ error: log('error'), warn: log('warn'), info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  }
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (read by the env detector) win over these.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'switchyard', 'service.version': VERSION, 'switchyard.role': options.role }))
    .merge(detectResources({ detectors: [envDetector] }));
  const processor = options.batch ? new BatchSpanProcessor(options.exporter) : new SimpleSpanProcessor(options.exporter);
  const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
  activateTracing(provider);

  let stopping: Promise<void> | undefined;
  return {
    shutdown() {
      stopping ??= (async () => {
        deactivateTracing();
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), SHUTDOWN_FLUSH_MS);
        });
        try {
          const outcome = await Promise.race([provider.shutdown().then(() => 'done' as const), deadline]);
          if (outcome === 'timeout') logger?.warn({ timeoutMs: SHUTDOWN_FLUSH_MS }, 'spans not exported before shutdown: the OTLP collector did not answer in time');
        } catch (error) {
          logger?.warn({ err: error }, 'spans not exported before shutdown');
        } finally {
          clearTimeout(timer);
          diag.disable();
        }
      })();
      return stopping;
    },
  };
}

/**
 * The OTLP/HTTP exporter, configured by the standard variables it reads itself
 * (OTEL_EXPORTER_OTLP_ENDPOINT, …_TRACES_ENDPOINT, …_HEADERS, …_TIMEOUT), batched as
 * OTEL_BSP_* say.
 */
export async function startOtlpTracing(options: { role: string; logger: Logger }): Promise<TracingSdk> {
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  return installTracing({ exporter: new OTLPTraceExporter(), batch: true, role: options.role, logger: options.logger });
}
