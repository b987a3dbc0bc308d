// GET /v1/violations on the admin server, with the read handed in as main.ts hands it (the
// read against Kafka is test/integration/tracking-plans.test.ts's): the query as parsed,
// the default window of one hour, refusals, the token, Kafka not answering.
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import type { ViolationsHandler } from '../../src/admin/violations-route.js';
import { KafkaUnavailableError } from '../../src/errors.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { silentLogger } from '../../src/observability/logger.js';
import type { ViolationsQuery } from '../../src/trace/recent-violations.js';

const TOKEN = 'route-test-admin-token-0001';

describe('GET /v1/violations', () => {
  let server: AdminServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start(violations: ViolationsHandler): Promise<(query: string, token?: string) => Promise<Response>> {
    server = createAdminServer({ host: '127.0.0.1', port: 0, token: () => TOKEN, metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger(), health: () => [], violations });
    await server.start();
    const base = `http://127.0.0.1:${server.port()}`;
    return (query, token = TOKEN) => fetch(`${base}/v1/violations${query}`, { headers: { authorization: `Bearer ${token}` } });
  }

  it('reads the last hour by default, or the window and source asked, and answers the document', async () => {
    const asked: ViolationsQuery[] = [];
    const get = await start(async (query) => {
      asked.push(query);
      return { since: 's', until: 'u', complete: true, read: 0, unreadable: 0, groups: [], recent: [] };
    });
    const before = Date.now();
    const res = await get('');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ since: 's', until: 'u', complete: true, read: 0, unreadable: 0, groups: [], recent: [] });
    expect(asked[0]!.sinceMs).toBeGreaterThanOrEqual(before - 3_600_000 - 1_000);
    expect(asked[0]!.sinceMs).toBeLessThanOrEqual(Date.now() - 3_600_000);
    expect(asked[0]).not.toHaveProperty('untilMs');
    expect((await get('?since=2026-05-01T10:00:00Z&until=2026-05-01T11:00:00Z&source=web')).status).toBe(200);
    expect(asked[1]).toEqual({ sinceMs: Date.UTC(2026, 4, 1, 10), untilMs: Date.UTC(2026, 4, 1, 11), source: 'web' });
  });

  it('refuses a bad query, a wrong token, another method; says when Kafka does not answer', async () => {
    let fail = false;
    const get = await start(async () => {
      if (fail) throw new KafkaUnavailableError('Kafka did not answer within 15 s');
      return { since: 's', until: 'u', complete: true, read: 0, unreadable: 0, groups: [], recent: [] };
    });
    const bad = async (query: string) => {
      const res = await get(query);
      return { status: res.status, body: (await res.json()) as { code: string; message: string } };
    };
    expect(await bad('?since=yesterday')).toMatchObject({ status: 400, body: { code: 'invalid_request', message: expect.stringContaining('since "yesterday" is not a time') } });
    expect(await bad('?userId=u')).toMatchObject({ status: 400, body: { message: 'unknown parameter "userId": the parameters are since, until, source' } });
    expect(await bad('?source=a&source=b')).toMatchObject({ status: 400, body: { message: 'parameter source is given 2 times: give it once' } });
    expect((await get('', 'wrong-token')).status).toBe(401);
    const post = await fetch(`http://127.0.0.1:${server!.port()}/v1/violations`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(post.status).toBe(405);
    fail = true;
    const down = await get('');
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');
    expect(await down.json()).toMatchObject({ code: 'kafka_unavailable' });
  });
});
