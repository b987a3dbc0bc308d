import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Metrics } from '../observability/metrics.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop } from '../runtime/service.js';

/** Handles `POST /v1/deletions` once the body is authenticated and parsed. */
export type DeletionHandler = (request: { userId: string; sourceIds?: string[] }) => Promise<void>;

export interface AdminServer extends Service {
  port(): number;
}

const MAX_ADMIN_BODY_BYTES = 64 * 1024;

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, {
    'content-type': typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json',
    ...headers,
  });
  res.end(text);
}

function tokenMatches(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice('Bearer '.length));
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_ADMIN_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The admin port: `/metrics`, `/healthz`, `/readyz` (unauthenticated) and the
 * admin API (`Authorization: Bearer <admin.token>`).
 */
export function createAdminServer(options: {
  host: string;
  port: number;
  token: () => string | undefined;
  metrics: Metrics;
  logger: Logger;
  health: () => ServiceHealth[];
  deletions?: DeletionHandler;
}): AdminServer {
  const { logger } = options;
  let server: Server | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      send(res, 200, await options.metrics.registry.metrics(), { 'content-type': options.metrics.registry.contentType });
      return;
    }
    if (req.method === 'GET' && (path === '/healthz' || path === '/readyz')) {
      const states = options.health();
      const ok = path === '/healthz' ? states.every((s) => s.live) : states.every((s) => s.ready);
      send(res, ok ? 200 : 503, { ok, services: states });
      return;
    }
    if (path === '/v1/deletions') {
      if (req.method !== 'POST') {
        send(res, 405, { success: false, code: 'method_not_allowed', message: 'use POST /v1/deletions' });
        return;
      }
      const token = options.token();
      if (!token) {
        send(res, 503, { success: false, code: 'admin_disabled', message: 'admin.token is not set in the config; set it to use the admin API' });
        return;
      }
      if (!tokenMatches(req.headers.authorization, token)) {
        send(res, 401, { success: false, code: 'unauthorized', message: 'send Authorization: Bearer <admin.token>' });
        return;
      }
      if (!options.deletions) {
        send(res, 503, { success: false, code: 'unavailable', message: 'deletions are not handled by this role; call the router or gateway admin port' });
        return;
      }
      const body = await readBody(req);
      if (!body) {
        send(res, 413, { success: false, code: 'too_large', message: `deletion request over ${MAX_ADMIN_BODY_BYTES} bytes` });
        return;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        send(res, 400, { success: false, code: 'invalid_json', message: 'body is not JSON; send {"userId":"…","sourceIds":["…"]}' });
        return;
      }
      const request = parsed as { userId?: unknown; sourceIds?: unknown };
      const sourceIdsOk =
        request.sourceIds === undefined ||
        (Array.isArray(request.sourceIds) && request.sourceIds.every((id) => typeof id === 'string' && id.length > 0));
      if (typeof parsed !== 'object' || parsed === null || typeof request.userId !== 'string' || request.userId === '' || !sourceIdsOk) {
        send(res, 400, {
          success: false,
          code: 'invalid_request',
          message: 'expected {"userId": non-empty string, "sourceIds"?: [string, …]}',
        });
        return;
      }
      try {
        await options.deletions({
          userId: request.userId,
          ...(request.sourceIds ? { sourceIds: request.sourceIds as string[] } : {}),
        });
      } catch (error) {
        logger.error({ err: error }, 'deletion request could not be written to Kafka');
        send(res, 503, { success: false, code: 'kafka_unavailable', message: 'could not write the deletion request to Kafka; retry later' }, { 'retry-after': '5' });
        return;
      }
      send(res, 202, { success: true });
      return;
    }
    send(res, 404, { success: false, code: 'not_found', message: `no route ${req.method} ${path}; try /metrics, /healthz, /readyz` });
  };

  return {
    name: 'admin',
    port: () => (server?.address() as AddressInfo | null)?.port ?? options.port,
    async start() {
      server = createServer((req, res) => {
        handle(req, res).catch((error: unknown) => {
          logger.error({ err: error }, 'admin request failed');
          if (!res.headersSent) send(res, 500, { success: false, code: 'internal', message: 'internal error; see the logs' });
          else res.destroy();
        });
      });
      server.headersTimeout = 10_000;
      server.requestTimeout = 30_000;
      await new Promise<void>((resolve, reject) => {
        server!.once('error', reject);
        server!.listen(options.port, options.host, () => resolve());
      });
      logger.info({ port: (server.address() as AddressInfo).port }, 'admin server listening');
    },
    stop: onceStop(async () => {
      if (!server) return;
      const closing = new Promise<void>((resolve) => server!.close(() => resolve()));
      server.closeIdleConnections();
      await closing;
    }),
    health: () => ({ live: true, ready: server?.listening ?? false }),
  };
}
