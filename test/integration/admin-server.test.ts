import { request } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import { ListenError } from '../../src/errors.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { ServiceHealth } from '../../src/runtime/service.js';

describe('admin server', () => {
  let server: AdminServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function start(options: { health?: ServiceHealth[]; token?: string; fail?: boolean; allowedHosts?: string[] } = {}) {
    const received: unknown[] = [];
    const metrics = createMetrics();
    metrics.callsReceived.inc({ source: 'web', type: 'track' }, 3);
    server = createAdminServer({
      host: '127.0.0.1',
      port: 0,
      token: () => options.token,
      allowedHosts: () => options.allowedHosts ?? [],
      ownHosts: ['switchyard-0', '10.1.2.3'],
      metrics,
      logger: silentLogger(),
      health: () => options.health ?? [{ live: true, ready: true }],
      deletions: async (request) => {
        if (options.fail) throw new Error('broker down');
        received.push(request);
      },
    });
    await server.start();
    const base = `http://127.0.0.1:${server.port()}`;
    return { base, received };
  }

  it('refuses to start on a port already taken, saying which setting to change', async () => {
    const { base } = await start();
    const taken = Number(new URL(base).port);
    const second = createAdminServer({
      host: '127.0.0.1',
      port: taken,
      token: () => undefined,
      metrics: createMetrics(),
      logger: silentLogger(),
      health: () => [],
    });
    const failure = await second.start().then(
      () => undefined,
      (error: unknown) => error,
    );
    await second.stop();
    expect(failure).toBeInstanceOf(ListenError);
    expect((failure as ListenError).code).toBe('LISTEN_FAILED');
    expect((failure as ListenError).message).toBe(
      `the admin server could not listen on 127.0.0.1:${taken} (EADDRINUSE): set admin.port to a free port or stop what holds it`,
    );
  });

  it('serves the metrics of docs/metrics.md and default process metrics', async () => {
    const { base } = await start();
    const res = await fetch(`${base}/metrics`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain('switchyard_calls_received_total{source="web",type="track"} 3');
    expect(text).toContain('# TYPE switchyard_delivery_duration_seconds histogram');
    expect(text).toContain('process_resident_memory_bytes');
  });

  it('answers /readyz 503 until every service is ready, /healthz on liveness', async () => {
    const { base } = await start({ health: [{ live: true, ready: true }, { live: true, ready: false, detail: 'joining' }] });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('accepts a deletion request only with the bearer token', async () => {
    const { base, received } = await start({ token: 'admin-secret' });
    const body = JSON.stringify({ userId: 'u-1', sourceIds: ['web'] });
    const noAuth = await fetch(`${base}/v1/deletions`, { method: 'POST', body });
    expect(noAuth.status).toBe(401);
    const wrong = await fetch(`${base}/v1/deletions`, { method: 'POST', body, headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const ok = await fetch(`${base}/v1/deletions`, { method: 'POST', body, headers: { authorization: 'Bearer admin-secret' } });
    expect(ok.status).toBe(202);
    expect(received).toEqual([{ userId: 'u-1', sourceIds: ['web'] }]);
  });

  it('refuses malformed deletion requests with a message saying what to send', async () => {
    const { base, received } = await start({ token: 't0k3n' });
    const headers = { authorization: 'Bearer t0k3n' };
    const notJson = await fetch(`${base}/v1/deletions`, { method: 'POST', body: '{', headers });
    expect(notJson.status).toBe(400);
    const noUser = await fetch(`${base}/v1/deletions`, { method: 'POST', body: '{"sourceIds":["web"]}', headers });
    expect(noUser.status).toBe(400);
    expect(((await noUser.json()) as { message: string }).message).toContain('userId');
    expect(received).toEqual([]);
  });

  it('answers 503 with Retry-After when the request cannot be written', async () => {
    const { base } = await start({ token: 't0k3n', fail: true });
    const res = await fetch(`${base}/v1/deletions`, {
      method: 'POST',
      body: '{"userId":"u-1"}',
      headers: { authorization: 'Bearer t0k3n' },
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
  });

  it('stop() is idempotent', async () => {
    await start();
    const first = server!.stop();
    const second = server!.stop();
    expect(second).toBe(first);
    await first;
  });

  /** One GET with the Host header given (fetch sets its own), answered with status and headers. */
  function getWithHost(base: string, path: string, host: string): Promise<{ status: number; connection: string | undefined; body: string }> {
    const url = new URL(base);
    return new Promise((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path, headers: { host, connection: 'keep-alive' }, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('answers only its own Host names: loopback, the pod’s own, admin.allowedHosts (DNS rebinding reads nothing)', async () => {
    const { base } = await start({ allowedHosts: ['switchyard-admin.monitoring.svc'] });
    const port = new URL(base).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `switchyard-0:${port}`, `10.1.2.3:${port}`, `Switchyard-Admin.Monitoring.svc:${port}`, 'switchyard-admin.monitoring.svc']) {
      expect((await getWithHost(base, '/metrics', host)).status, host).toBe(200);
    }
    for (const host of [`rebind.attacker.example:${port}`, 'rebind.attacker.example', `127.0.0.1.attacker.example:${port}`, `10.1.2.4:${port}`]) {
      const refused = await getWithHost(base, '/metrics', host);
      expect(refused.status, host).toBe(421);
      expect(refused.connection).toBe('close');
      expect(refused.body).not.toContain('switchyard_');
      expect(JSON.parse(refused.body)).toMatchObject({ success: false, code: 'host_not_allowed' });
    }
  });

  it('closes the connection of every refusal; a connection without a request goes after about 2 s', async () => {
    const { base } = await start({ token: 'admin-secret-token-0001' });
    const notFound = await getWithHost(base, '/nope', '127.0.0.1');
    expect(notFound.status).toBe(404);
    expect(notFound.connection).toBe('close');
    const unauthorized = await fetch(`${base}/v1/deletions`, { method: 'POST', body: '{}' });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('connection')).toBe('close');
    const ok = await getWithHost(base, '/healthz', '127.0.0.1');
    expect(ok.connection).not.toBe('close');

    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    const opened = Date.now();
    const closedAfterMs = await new Promise<number>((resolve) => {
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(Date.now() - opened));
    });
    expect(closedAfterMs).toBeGreaterThanOrEqual(1_500);
    expect(closedAfterMs).toBeLessThan(4_000);
  });
});
