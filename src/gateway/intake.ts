// The gateway's HTTP intake (node:http): which requests are taken at all (route,
// method, stopping, the write key of the Authorization header, in-flight limits), the
// connection cap, the request's trace span, errors before a request exists, and the
// drain on stop.
import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { ListenError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { SpanKind, endSpan, outgoingTraceparent, startHopSpan, traceparentHeader, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import { errorBody } from './answers.js';
import type { GatewayErrorCode } from './answers.js';
import { FIRST_REQUEST_TIMEOUT_MS, guardConnections } from '../runtime/connection-guard.js';
import type { Responder } from './responder.js';
import { OTHER_ROUTE_LABEL, ROUTE_PATHS, matchRoute } from './routes.js';
import type { Route } from './routes.js';
import type { HeaderAuthorization } from './write-key.js';

/** Request headers larger than this get node's 431. Node's own default, made explicit. */
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * NOTE: longer than the 60 s idle timeout of common load balancers (AWS ALB, GKE),
 * so the balancer, not the gateway, closes an idle connection; the other way round
 * races a request sent on a connection the gateway is closing and yields a 502.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Retry-After (seconds) when overloaded or stopping: another replica can take the request now. */
const BUSY_RETRY_AFTER_SECONDS = 1;

/** How often at most a refused connection (over the connection cap) is logged. */
const DROPPED_LOG_INTERVAL_MS = 60_000;

/**
 * Serves a request the intake took; `sourceId` is the source its Authorization header
 * named (undefined: the write key is to be read from the body); `traceparent` is what
 * its records carry.
 */
export type ServeRequest = (
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  sourceId: string | undefined,
  span: Span | undefined,
  traceparent: string | undefined,
) => Promise<void>;

export interface IntakeOptions {
  host: string;
  port: number;
  /** Requests with a known write key in the Authorization header handled at once; over it, 503 with Retry-After. */
  maxInFlight: number;
  /**
   * Requests without an Authorization header (the key may be in the body) handled at
   * once: a pool of their own, so that callers without a key cannot take the slots of
   * those with one. Over it, 503 with Retry-After and the connection closed.
   */
  maxInFlightKeyInBody: number;
  /** Connections open at once; more are closed as they arrive. */
  maxConnections: number;
  /**
   * Connections open at once from one client address, below maxConnections: the
   * difference is kept for every other address (docs/operations.md#threat-model).
   */
  maxConnectionsPerAddress: number;
  /** How long a new connection may go without a whole request (src/runtime/connection-guard.ts). */
  firstRequestTimeoutMs: number;
  /** The write key of a request's Authorization header, checked before anything shared is taken. */
  authorize: (req: IncomingMessage) => HeaderAuthorization;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** On close, how long in-flight requests may take to finish before their connections are cut. */
  drainTimeoutMs: number;
  /** For the request span's `messaging.destination.name`. */
  callsTopic: string;
  serve: ServeRequest;
  reply: Responder;
  metrics: Metrics;
  logger: Logger;
}

export class GatewayIntake {
  private server: Server | undefined;
  private closing = false;
  /** Requests being served (body, Kafka) with a key in the header: bounded by maxInFlight. */
  private serving = 0;
  /** Requests being served whose key is to be read from the body: bounded by maxInFlightKeyInBody. */
  private servingKeyInBody = 0;
  private dropped = 0;
  private lastDropLogMs = -Infinity;
  /** Responses not yet finished, quick refusals included: what a close waits for. */
  private open = 0;
  private onDrained: (() => void) | undefined;

  constructor(private readonly options: IntakeOptions) {}

  port(): number {
    return (this.server?.address() as AddressInfo | null)?.port ?? this.options.port;
  }

  listening(): boolean {
    return this.server?.listening ?? false;
  }

  stopping(): boolean {
    return this.closing;
  }

  async listen(): Promise<void> {
    const { host, port, logger } = this.options;
    const http = createServer(
      {
        maxHeaderSize: MAX_HEADER_BYTES,
        headersTimeout: this.options.headersTimeoutMs,
        requestTimeout: this.options.requestTimeoutMs,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
        // NOTE: the header and request timeouts are enforced by a sweep at this
        // interval (node's default is 30 s, which would let a slowloris linger).
        connectionsCheckingInterval: 1_000,
      },
      (req, res) => this.onRequest(req, res),
    );
    // NOTE: over the cap node closes a new connection at once; every connection costs a
    // file descriptor and buffers whether or not it ever sends a request.
    http.maxConnections = this.options.maxConnections;
    http.on('drop', () => this.onDropped('the gateway\'s cap', this.options.maxConnections));
    guardConnections(http, {
      maxPerAddress: this.options.maxConnectionsPerAddress,
      firstRequestTimeoutMs: this.options.firstRequestTimeoutMs,
      onRefused: () => this.onDropped('the cap per client address', this.options.maxConnectionsPerAddress),
      onFirstRequestTimeout: (socket) => this.answerBeforeRequest(socket, FIRST_REQUEST_TIMEOUT),
    });
    http.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => this.onClientError(error, socket));
    this.server = http;
    await new Promise<void>((resolve, reject) => {
      const onError = (error: NodeJS.ErrnoException) => {
        reject(new ListenError('the gateway', `${host}:${port}`, error, 'set gateway.port to a free port or stop what holds it'));
      };
      http.once('error', onError);
      http.listen(port, host, () => {
        http.off('error', onError);
        resolve();
      });
    });
    http.on('error', (error) => logger.error({ err: error }, 'gateway server error'));
    logger.info({ host, port: (http.address() as AddressInfo).port, topic: this.options.callsTopic }, 'gateway listening');
  }

  /**
   * Stops intake (no new connections, idle ones closed, 503 to requests that still
   * arrive on open ones), lets in-flight requests finish (their sends complete and are
   * answered), then closes what is left.
   */
  async close(): Promise<void> {
    this.closing = true;
    const http = this.server;
    if (http === undefined || !http.listening) return;
    const closed = new Promise<void>((resolve) => http.close(() => resolve()));
    http.closeIdleConnections();
    await this.waitForOpenResponses();
    http.closeAllConnections();
    await closed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.open += 1;
    res.once('close', () => {
      this.open -= 1;
      if (this.open === 0 && this.onDrained !== undefined) this.onDrained();
    });
    const admitted = this.admit(req, res);
    if (admitted === undefined) return;
    const { route, sourceId } = admitted;
    if (sourceId === undefined) {
      this.servingKeyInBody += 1;
      res.once('close', () => {
        this.servingKeyInBody -= 1;
      });
    } else {
      this.serving += 1;
      res.once('close', () => {
        this.serving -= 1;
      });
    }
    this.dispatch(req, res, route, sourceId);
  }

  /**
   * The request's route and the source its Authorization header names (undefined: the
   * key is in the body) when the gateway takes it; else undefined, answered (401, 404,
   * 405, 503). NOTE: the header's write key is checked before a slot is taken.
   */
  private admit(req: IncomingMessage, res: ServerResponse): { route: Route; sourceId: string | undefined } | undefined {
    const { reply, maxInFlight, maxInFlightKeyInBody } = this.options;
    const route = matchRoute(req.url);
    if (route === undefined) {
      const path = (req.url ?? '').split('?')[0]?.slice(0, 100) ?? '';
      reply.fail(res, OTHER_ROUTE_LABEL, 404, 'not_found', `no route ${JSON.stringify(path)}: POST calls to one of ${ROUTE_PATHS.join(', ')}`);
      return undefined;
    }
    if (req.method !== 'POST') {
      reply.fail(res, route.template, 405, 'method_not_allowed', `${String(req.method)} is not allowed on ${route.template}: send the calls with POST`, {
        allow: 'POST',
      });
      return undefined;
    }
    if (this.closing) {
      reply.fail(res, route.template, 503, 'shutting_down', 'this gateway is shutting down: send the request again (to another replica)', {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
      return undefined;
    }
    const auth = this.options.authorize(req);
    if (auth.kind === 'refused') {
      // The body is not read: the connection goes with the answer (as with every refusal).
      reply.fail(res, route.template, 401, 'unauthorized', auth.message);
      return undefined;
    }
    if (auth.kind === 'source') {
      if (this.serving < maxInFlight) return { route, sourceId: auth.sourceId };
      reply.fail(res, route.template, 503, 'overloaded', `this gateway already handles ${maxInFlight} requests: send the request again after the Retry-After delay`, {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
      return undefined;
    }
    if (this.servingKeyInBody < maxInFlightKeyInBody) return { route, sourceId: undefined };
    reply.fail(
      res,
      route.template,
      503,
      'overloaded',
      `this gateway already reads ${maxInFlightKeyInBody} requests that carry the write key in the body: send the request again after the Retry-After delay, or send the key as the HTTP Basic user name (Authorization: Basic base64("<write key>:"))`,
      { 'retry-after': String(BUSY_RETRY_AFTER_SECONDS) },
    );
    return undefined;
  }

  /** A connection over a cap, closed as it arrived: logged at most once a minute, with the count since. */
  private onDropped(cap: string, limit: number): void {
    this.dropped += 1;
    const now = Date.now();
    if (now - this.lastDropLogMs < DROPPED_LOG_INTERVAL_MS) return;
    this.options.logger.warn(
      { dropped: this.dropped, maxConnections: this.options.maxConnections, maxConnectionsPerAddress: this.options.maxConnectionsPerAddress },
      `connections refused: ${limit} connections are open (${cap}); add replicas if these are real clients`,
    );
    this.dropped = 0;
    this.lastDropLogMs = now;
  }

  /** Serves a taken request inside its span; a request that throws is answered 500. */
  private dispatch(req: IncomingMessage, res: ServerResponse, route: Route, sourceId: string | undefined): void {
    const { logger, reply } = this.options;
    const incoming = traceparentHeader(req.headers.traceparent);
    // The request's span (tracing on): a child of the caller's traceparent; its own
    // context is what the records carry, so the router's span is its child.
    const span = tracingActive()
      ? startHopSpan(`POST ${route.template}`, SpanKind.SERVER, incoming, {
          'http.request.method': 'POST',
          'http.route': route.template,
          'messaging.destination.name': this.options.callsTopic,
        })
      : undefined;
    this.options.serve(req, res, route, sourceId, span, outgoingTraceparent(span, incoming)).then(
      // 499: the client went away before an answer (as in the request metric).
      () => endRequestSpan(span, res.headersSent ? res.statusCode : 499),
      (error: unknown) => {
        logger.error({ err: error, route: route.template }, 'gateway request failed');
        if (!res.headersSent) reply.fail(res, route.template, 500, 'internal', 'internal error in the gateway: send the request again; if it persists, see the gateway logs');
        else res.destroy();
        endRequestSpan(span, 500, error);
      },
    );
  }

  /**
   * Errors before a request exists (header overflow, header or request timeout, bad
   * HTTP): node writes a bare status line by default; this writes the JSON error body.
   */
  private onClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
    // NOTE: node's own handler checks the same private field: a response already under
    // way on this socket must not get a second status line in the middle of it.
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || pending?.headersSent === true) {
      socket.destroy();
      return;
    }
    this.answerBeforeRequest(socket, clientErrorAnswer(error), error.code);
  }

  /** Writes a JSON error answer on a socket that has no request (yet), and closes it. */
  private answerBeforeRequest(socket: Duplex, answer: { status: number; code: GatewayErrorCode; message: string }, cause?: string): void {
    const { status, code, message } = answer;
    this.options.metrics.gatewayRequests.inc({ route: OTHER_ROUTE_LABEL, status: String(status) });
    this.options.logger.info({ status, code, ...(cause === undefined ? {} : { cause }) }, `request refused: ${message}`);
    const body = errorBody(code, message);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  }

  private async waitForOpenResponses(): Promise<void> {
    if (this.open === 0) return;
    const { drainTimeoutMs, logger } = this.options;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.onDrained = resolve;
      timer = setTimeout(() => {
        logger.warn({ open: this.open, drainTimeoutMs }, 'requests still in flight at the drain deadline; closing their connections (clients will retry)');
        resolve();
      }, drainTimeoutMs);
    });
    clearTimeout(timer);
    this.onDrained = undefined;
  }
}

/** The answer to a connection that sent no whole request within FIRST_REQUEST_TIMEOUT_MS. */
const FIRST_REQUEST_TIMEOUT = {
  status: 408,
  code: 'request_timeout',
  message: `no whole request arrived within ${FIRST_REQUEST_TIMEOUT_MS / 1000} s of connecting: send the request right after connecting`,
} as const;

/** The answer to an error node reports before a request exists. */
function clientErrorAnswer(error: NodeJS.ErrnoException): { status: number; code: GatewayErrorCode; message: string } {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return { status: 431, code: 'headers_too_large', message: `the request headers are over ${MAX_HEADER_BYTES} bytes: send fewer or shorter headers` };
  }
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { status: 408, code: 'request_timeout', message: 'the request did not arrive in time: send the headers and body without pauses' };
  }
  return { status: 400, code: 'bad_request', message: `the request is not valid HTTP/1.1 (${error.code ?? error.message}): check the client` };
}

function endRequestSpan(span: Span | undefined, status: number, error?: unknown): void {
  if (span === undefined) return;
  span.setAttribute('http.response.status_code', status);
  // A 4xx is the client's doing; only the gateway's own failures mark the span failed.
  endSpan(span, error ?? (status >= 500 ? `answered ${status}` : undefined));
}
