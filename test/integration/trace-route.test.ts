// GET /v1/trace on the admin server, with the trace handed in as main.ts hands it
// (the reads against Kafka are test/integration/trace.test.ts's): one trace at a time,
// Kafka not answering, notes as headers, the query's user id kept out of the logs.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import type { TraceHandler } from '../../src/admin/trace-route.js';
import { KafkaUnavailableError } from '../../src/errors.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { TraceResult } from '../../src/trace/trace.js';
import type { TraceQuery } from '../../src/trace/trace-query.js';

const TOKEN = 'route-test-admin-token-0001';
const NOW = Date.UTC(2026, 4, 1, 12);

function result(query: TraceQuery, notes: string[] = []): TraceResult {
  return {
    document: { userId: query.who.id, since: new Date(query.sinceMs).toISOString(), until: new Date(NOW).toISOString(), reasonsFrom: 'current config', messages: [] },
    notes,
    scanned: 42,
  };
}

describe('GET /v1/trace', () => {
  let server: AdminServer | undefined;
  const logLines: string[] = [];
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    logLines.length = 0;
  });

  async function start(trace: TraceHandler): Promise<(query: string) => Promise<Response>> {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString('utf8'));
        done();
      },
    });
    server = createAdminServer({ host: '127.0.0.1', port: 0, token: () => TOKEN, metrics: createMetrics({ defaultMetrics: false }), logger: pino({ level: 'info' }, sink), health: () => [], trace });
    await server.start();
    const base = `http://127.0.0.1:${server.port()}`;
    return (query) => fetch(`${base}/v1/trace?${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  }

  it('hands the query to the trace and answers its document, notes as headers, logging counts only', async () => {
    const asked: TraceQuery[] = [];
    const get = await start(async (query) => {
      asked.push(query);
      return result(query, ['partition 4 of sy.calls keeps records from 2026-05-01T11:59:00.000Z on', 'topic sy.calls.invalid does not exist']);
    });
    const response = await get('userId=u%2B1%40example.com&messageId=m-1&since=2026-05-01T10:00:00Z');
    expect(response.status).toBe(200);
    expect(response.headers.get('switchyard-trace-note')).toBe('partition 4 of sy.calls keeps records from 2026-05-01T11:59:00.000Z on, topic sy.calls.invalid does not exist');
    expect(await response.json()).toEqual({ userId: 'u+1@example.com', since: '2026-05-01T10:00:00.000Z', until: '2026-05-01T12:00:00.000Z', reasonsFrom: 'current config', messages: [] });
    expect(asked).toEqual([{ who: { kind: 'userId', id: 'u+1@example.com' }, messageId: 'm-1', sinceMs: Date.UTC(2026, 4, 1, 10), untilMs: undefined }]);
    const logged = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg !== 'admin server listening');
    expect(logged).toEqual([expect.objectContaining({ msg: 'trace answered', messages: 0, scanned: 42 })]);
    expect(logLines.join('')).not.toContain('u+1');
  });

  it('runs one trace at a time: another meanwhile gets 429 with Retry-After', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (entered = resolve));
    const get = await start(async (query) => {
      entered();
      await held;
      return result(query);
    });
    const first = get('userId=u-1');
    await running;
    const second = await get('userId=u-2');
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('2');
    expect(await second.json()).toMatchObject({ success: false, code: 'busy' });
    release();
    expect((await first).status).toBe(200);
    expect((await get('userId=u-3')).status).toBe(200);
  });

  it('answers 503 kafka_unavailable with Retry-After when Kafka does not answer, and 500 for anything else', async () => {
    let failure: Error = new KafkaUnavailableError('Kafka did not answer within 15 s (Kafka at 127.0.0.1:9: check kafka.brokers …)');
    const get = await start(async () => {
      throw failure;
    });
    const unavailable = await get('anonymousId=a-7');
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('5');
    // The Kafka client's text (broker addresses) stays in the log.
    expect(await unavailable.json()).toEqual({ success: false, code: 'kafka_unavailable', message: "Kafka did not answer (the admin server's log says why); try again once the brokers are up" });
    failure = new TypeError('a bug');
    const broken = await get('anonymousId=a-7');
    expect(broken.status).toBe(500);
    expect(await broken.json()).toMatchObject({ code: 'internal' });
    expect(logLines.join('')).not.toContain('a-7');
  });

  it('answers a time before 1970 with 400, before Kafka is asked, quoting no broker', async () => {
    let asked = 0;
    const get = await start(async (query) => {
      asked += 1;
      return result(query);
    });
    const response = await get('userId=u-1&since=1969-12-31T23:59:59.999Z');
    expect(response.status).toBe(400);
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toEqual({
      success: false,
      code: 'invalid_request',
      message: 'since "1969-12-31T23:59:59.999Z" is not a time: give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d), not before 1970-01-01',
    });
    expect(asked).toBe(0);
  });
});
