// `npm run bench -- tracing [--n 200000]`
//
// What tracing costs one hop (a routed call, a delivery attempt), without Kafka or
// sockets: the work each hop adds around its own, measured against a same-run
// baseline that does only the hop's unavoidable header handling (pass the incoming
// traceparent on). Three sides:
//   baseline — the incoming traceparent passed on as is (what a hop did before tracing)
//   off      — tracing code present, no SDK installed (the default in production)
//   on       — SDK installed, batch span processor, an exporter that drops the spans
import { parseArgs } from 'node:util';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanKind, endSpan, outgoingTraceparent, startHopSpan, tracingActive } from '../src/observability/tracing.js';
import { installTracing } from '../src/observability/tracing-sdk.js';

const INCOMING = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

/** Accepts and forgets every span: the cost measured is the hop's, not an export's. */
class DroppingExporter implements SpanExporter {
  export(_spans: ReadableSpan[], done: (result: { code: 0 }) => void): void {
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

let sink = 0;

function baselineHop(i: number): void {
  const headers: Record<string, string> = {};
  headers.traceparent = INCOMING;
  sink += headers.traceparent.length + i;
}

function tracedHop(i: number): void {
  const span = tracingActive()
    ? startHopSpan('route track', SpanKind.CONSUMER, INCOMING, {
        'messaging.system': 'kafka',
        'messaging.message.id': `m-${i}`,
        'switchyard.source': 'web',
        'switchyard.destinations': ['d1', 'd2', 'd3'],
      })
    : undefined;
  const headers: Record<string, string> = {};
  headers.traceparent = outgoingTraceparent(span, INCOMING)!;
  sink += headers.traceparent.length;
  endSpan(span);
}

function measure(n: number, hop: (i: number) => void): number {
  for (let i = 0; i < Math.min(n, 20_000); i++) hop(i); // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) hop(i);
  return Number(process.hrtime.bigint() - started) / n;
}

export async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { n: { type: 'string', default: '200000' } } });
  const n = Number(values.n);
  const baseline = measure(n, baselineHop);
  const off = measure(n, tracedHop);
  // The batch processor's defaults (queue of 2048, export every 5 s) drop what overflows, as in production.
  const exporter = new DroppingExporter();
  const sdk = installTracing({ exporter, batch: true, role: 'bench' });
  const on = measure(n, tracedHop);
  await sdk.shutdown();

  const rows = [
    ['baseline (pass traceparent on)', baseline],
    ['tracing off (no SDK)', off],
    ['tracing on (SDK, spans dropped)', on],
  ] as const;
  process.stdout.write(`tracing: ${n} hops per side, ns per hop (checksum ${sink % 1000})\n`);
  process.stdout.write(`${'side'.padEnd(34)}${'ns/hop'.padStart(10)}${'vs baseline'.padStart(14)}\n`);
  for (const [name, ns] of rows) {
    const delta = ns - baseline;
    process.stdout.write(`${name.padEnd(34)}${ns.toFixed(0).padStart(10)}${`${delta >= 0 ? '+' : ''}${delta.toFixed(0)} ns`.padStart(14)}\n`);
  }
}
