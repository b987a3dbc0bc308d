import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { ListenError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop } from '../runtime/service.js';
import { FIRST_REQUEST_TIMEOUT_MS, guardConnections } from '../runtime/connection-guard.js';
import { hostAllowed, ownHostNames } from './allowed-hosts.js';
import { createConsoleRoute } from './console-route.js';
import { createDeadLettersRoute, DEAD_LETTERS_PATH, REPLAY_PATH } from './dead-letters-route.js';
import type { LetterHandlers } from './dead-letters-route.js';
import { DELETIONS_PATH, serveDeletion } from './deletions.js';
import { DESTINATIONS_PATH, serveDestinations } from './destinations-route.js';
import { destinationActionOf, serveDestinationAction } from './destination-actions-route.js';
import type { DestinationActions } from '../lifecycle/destination-commands.js';
import type { DestinationsDocument } from './answers.js';
import type { DeletionHandler } from './deletions.js';
import { send } from './respond.js';
import { createTraceRoute, TRACE_PATH } from './trace-route.js';
import { createViolationsRoute, VIOLATIONS_PATH } from './violations-route.js';
import type { ViolationsHandler } from './violations-route.js';
import type { TraceHandler } from './trace-route.js';

/** How long a kept-alive admin connection may idle between requests. */
const ADMIN_KEEP_ALIVE_MS = 2_000;
/** Connections open at once on the admin port, and from one client address (docs/operations.md#threat-model). */
const ADMIN_MAX_CONNECTIONS = 256;
const ADMIN_MAX_CONNECTIONS_PER_ADDRESS = 64;

export interface AdminServer extends Service {
  port(): number;
}

export interface AdminServerOptions {
  host: string;
  port: number;
  token: () => string | undefined;
  /** `admin.allowedHosts`: `Host` names answered besides loopback and this pod's own (allowed-hosts.ts). Default none. */
  allowedHosts?: () => readonly string[];
  /** This pod's own names and addresses; ownHostNames() by default. */
  ownHosts?: readonly string[];
  metrics: Metrics;
  logger: Logger;
  health: () => ServiceHealth[];
  deletions?: DeletionHandler;
  trace?: TraceHandler;
  /** `GET /v1/destinations`: the document of this process and Kafka (src/admin/destinations-status.ts). */
  destinations?: () => Promise<DestinationsDocument>;
  /** `POST /v1/destinations/<id>/enable|disable` (src/lifecycle/destination-commands.ts). */
  destinationActions?: DestinationActions;
  /** `GET /v1/dead-letters`, `POST /v1/replay`. */
  letters?: LetterHandlers;
  /** `GET /v1/violations`: the tracking-plan violations of a window. */
  violations?: ViolationsHandler;
}

/** Each request by its path: the unauthenticated probes, the admin API, the console. */
function createHandler(options: AdminServerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { logger } = options;
  const serveTrace = createTraceRoute({ token: options.token, trace: options.trace, logger });
  const serveLetters = createDeadLettersRoute({ token: options.token, letters: options.letters, logger });
  const serveViolations = createViolationsRoute({ token: options.token, violations: options.violations, logger });
  const serveConsole = createConsoleRoute();
  const own = new Set(options.ownHosts ?? ownHostNames());
  const allowedHosts = options.allowedHosts ?? (() => []);

  return async (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (!hostAllowed(req.headers.host, own, allowedHosts())) {
      // NOTE: before any route, /metrics included: a page of another site that rebinds its
      // name to this address must read nothing. The Host value is not logged (it is the caller's).
      send(res, 421, { success: false, code: 'host_not_allowed', message: 'this admin port does not answer that Host name: use its address or a name listed in admin.allowedHosts' });
      return;
    }
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
    if (path === DELETIONS_PATH) {
      await serveDeletion(req, res, { token: options.token, deletions: options.deletions, logger });
      return;
    }
    if (path === TRACE_PATH) {
      await serveTrace(req, res);
      return;
    }
    if (path === VIOLATIONS_PATH) {
      await serveViolations(req, res);
      return;
    }
    if (path === DESTINATIONS_PATH) {
      await serveDestinations(req, res, { token: options.token, destinations: options.destinations });
      return;
    }
    const action = destinationActionOf(path);
    if (action !== undefined) {
      await serveDestinationAction(req, res, action, { token: options.token, actions: options.destinationActions, logger });
      return;
    }
    if (path === DEAD_LETTERS_PATH || path === REPLAY_PATH) {
      await serveLetters(req, res, path);
      return;
    }
    if (serveConsole(req, res, path)) return;
    send(res, 404, { success: false, code: 'not_found', message: `no route ${req.method} ${path}; try /console, /metrics, /healthz, /readyz` });
  };
}

/**
 * The admin port: `/metrics`, `/healthz`, `/readyz` (unauthenticated), the operator
 * console's page, and the admin API (`Authorization: Bearer <admin.token>`).
 */
export function createAdminServer(options: AdminServerOptions): AdminServer {
  const { logger } = options;
  let server: Server | undefined;
  const handle = createHandler(options);

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
      // NOTE: the admin port's clients (probes, Prometheus, an operator) come every few
      // seconds at most: an idle connection is not worth a slot for longer.
      server.keepAliveTimeout = ADMIN_KEEP_ALIVE_MS;
      server.maxConnections = ADMIN_MAX_CONNECTIONS;
      guardConnections(server, {
        maxPerAddress: ADMIN_MAX_CONNECTIONS_PER_ADDRESS,
        firstRequestTimeoutMs: FIRST_REQUEST_TIMEOUT_MS,
      });
      const http = server;
      await new Promise<void>((resolve, reject) => {
        const onError = (error: NodeJS.ErrnoException) => {
          reject(new ListenError('the admin server', `${options.host}:${options.port}`, error, 'set admin.port to a free port or stop what holds it'));
        };
        http.once('error', onError);
        http.listen(options.port, options.host, () => {
          http.off('error', onError);
          resolve();
        });
      });
      http.on('error', (error) => logger.error({ err: error }, 'admin server error'));
      logger.info({ host: options.host, port: (server.address() as AddressInfo).port, adminApi: options.token() === undefined ? 'off (no admin.token)' : 'on' }, 'admin server listening');
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
