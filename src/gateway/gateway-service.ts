/**
 * `switchyard gateway`: Segment's tracking API over node:http (DESIGN §8).
 *
 * Each request: route → write key → body (gzip, 500 KB) → JSON → calls prepared
 * (ingest.ts) → ONE sendBatch with acks=all on the shared producer (acks=all, not idempotent: see src/kafka/client.ts), carrying the
 * valid calls to `calls` and the invalid ones to `calls.invalid` → the answer.
 * NOTE: `200 {"success":true}` is written only after Kafka acknowledged that send, so
 * a call the client saw accepted is on the brokers; a crash before the answer makes
 * the client send again (duplicates, never loss).
 */
import { createServer, STATUS_CODES } from 'node:http';
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import type { InvalidReason } from '../calls/index.js';
import { HEADER, createAdmin, createProducer, createTopology } from '../kafka/index.js';
import type { OutboundRecord, RecordHeaders, RecordProducer, TopicRecords } from '../kafka/index.js';
import { SpanKind, endSpan, outgoingTraceparent, startHopSpan, traceparentHeader, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { errorBody, successBody } from './answers.js';
import type { GatewayErrorCode, InvalidCallNote } from './answers.js';
import { ingest } from './ingest.js';
import type { RejectedCall } from './ingest.js';
import { parseJsonBody, readRequestBody } from './request-body.js';
import { sendCalls } from './send-coalescer.js';
import type { SendOutcome } from './send-coalescer.js';
import { OTHER_ROUTE_LABEL, ROUTE_PATHS, matchRoute } from './routes.js';
import type { Route } from './routes.js';
import { readAuthorization, sourceIdForWriteKey } from './write-key.js';

export interface GatewayOptions {
  /** The gateway's clock (epoch ms): `receivedAt` and the skew correction. Tests pin it. */
  now?: () => number;
  /** Id for calls without a messageId; a random UUID by default. */
  newMessageId?: () => string;
  /** Requests handled at once; over it, 503 with Retry-After. Default 256 (at most 128 MB of bodies). */
  maxInFlightRequests?: number;
  /** How long a send may wait for Kafka's acknowledgement before the answer is 503. Default 10 s. */
  sendTimeoutMs?: number;
  /**
   * Produce requests in flight at once; the writes of requests that arrive meanwhile
   * are merged into the next one (the port's producer, src/kafka/producer.ts). Default 4. `Infinity` sends
   * every request's write on its own.
   */
  maxConcurrentSends?: number;
  /** Time to receive the request headers (slowloris guard). Default 10 s. */
  headersTimeoutMs?: number;
  /** Time to receive the whole request. Default 30 s. */
  requestTimeoutMs?: number;
  /** On stop, how long in-flight requests may take to finish before their connections are cut. Default 10 s. */
  drainTimeoutMs?: number;
}

export type GatewayService = Service & { port(): number };

/** Request headers larger than this get node's 431. Node's own default, made explicit. */
const MAX_HEADER_BYTES = 16 * 1024;

/**
 * NOTE: longer than the 60 s idle timeout of common load balancers (AWS ALB, GKE),
 * so the balancer, not the gateway, closes an idle connection; the other way round
 * races a request sent on a connection the gateway is closing and yields a 502.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Retry-After (seconds) when Kafka does not acknowledge: long enough for a leader election. */
const KAFKA_RETRY_AFTER_SECONDS = 5;
/** Retry-After (seconds) when overloaded or stopping: another replica can take the request now. */
const BUSY_RETRY_AFTER_SECONDS = 1;

export function createGatewayService(deps: RoleDeps, options: GatewayOptions = {}): GatewayService {
  const { kafka, metrics } = deps;
  const logger = deps.logger.child({ component: 'gateway' });
  const now = options.now ?? Date.now;
  const newMessageId = options.newMessageId ?? randomUUID;
  const maxInFlight = options.maxInFlightRequests ?? 256;
  const sendTimeoutMs = options.sendTimeoutMs ?? 10_000;
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000;
  const initial = deps.config.current();
  const { host, port: configuredPort } = initial.gateway;
  // NOTE: Kafka settings (brokers, prefix) are read once: a reload cannot move the
  // topics under a running producer. Sources and write keys are read live per request.
  const topology = createTopology(initial.kafka.topicPrefix);
  const topics = topology.names;

  let server: Server | undefined;
  let producer: RecordProducer | undefined;
  let stopping = false;
  /** Requests being served (body, Kafka): bounded by maxInFlight. */
  let serving = 0;
  /** Responses not yet finished, quick refusals included: what a stop waits for. */
  let open = 0;
  let onDrained: (() => void) | undefined;
  let lastSendError: string | undefined;

  // -------------------------------------------------------------------------
  // Answers

  const answer = (
    res: ServerResponse,
    routeLabel: string,
    status: number,
    body: string,
    headers: OutgoingHttpHeaders = {},
  ): void => {
    metrics.gatewayRequests.inc({ route: routeLabel, status: String(status) });
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...headers,
    });
    res.end(body);
  };

  const fail = (
    res: ServerResponse,
    routeLabel: string,
    status: number,
    code: GatewayErrorCode,
    message: string,
    headers: OutgoingHttpHeaders = {},
  ): void => {
    // NOTE: a refused request is logged with the reason the client got, at info, so an
    // operator sees why a producer's calls do not arrive. The messages never quote a
    // write key or an Authorization header (configured keys are scrubbed anyway).
    if (status >= 500) logger.warn({ route: routeLabel, status, code }, message);
    else logger.info({ route: routeLabel, status, code }, `request refused: ${message}`);
    answer(res, routeLabel, status, errorBody(code, message), headers);
  };

  // -------------------------------------------------------------------------
  // Kafka

  const send = async (topicMessages: TopicRecords[]): Promise<SendOutcome> => {
    if (producer === undefined) return { ok: false, error: new Error('the producer is not started') };
    // NOTE: kafkajs retries a failing send internally for far longer than a client
    // waits; the timeout bounds the answer. A send that still succeeds after the 503
    // makes a duplicate when the client retries, which the contract allows.
    const outcome = await sendCalls(producer, topicMessages, sendTimeoutMs);
    lastSendError = outcome.ok ? undefined : errorText(outcome.error);
    return outcome;
  };

  const producerConnected = (): boolean => producer?.connected() ?? false;

  const kafkaUnavailable = (res: ServerResponse, routeLabel: string, error: unknown): void => {
    logger.warn({ err: error, route: routeLabel }, 'Kafka did not acknowledge the calls; answering 503');
    fail(
      res,
      routeLabel,
      503,
      'kafka_unavailable',
      `the calls could not be written to Kafka (${errorText(error)}); nothing of this request was accepted: send it again after the Retry-After delay`,
      { 'retry-after': String(KAFKA_RETRY_AFTER_SECONDS) },
    );
  };

  /**
   * Keeps a whole request body that was refused in `calls.invalid`. Only called when
   * its source is known: anonymous junk from the internet is answered, not stored.
   */
  const keepRefusedBody = async (
    sourceId: string,
    bytes: Buffer,
    reason: InvalidReason,
    message: string,
    key: string | null,
    traceparent: string | undefined,
    receivedAtMs: number,
  ): Promise<SendOutcome> => {
    const kept = await send(
      [
        {
          topic: topics.callsInvalid,
          messages: [
            {
              key,
              value: bytes,
              headers: invalidHeaders(sourceId, traceparent, `${reason}: ${message}`),
              timestamp: String(receivedAtMs),
            },
          ],
        },
      ],
    );
    // Counted once kept: a 503 makes the client send it again.
    if (kept.ok) metrics.callsInvalid.inc({ reason });
    return kept;
  };

  // -------------------------------------------------------------------------
  // One request

  /**
   * `traceparent`: what the records of this request carry: the request span's context
   * when tracing is on, else the request's own header (valid ones only).
   */
  const serve = async (req: IncomingMessage, res: ServerResponse, route: Route, span: Span | undefined, traceparent: string | undefined): Promise<void> => {
    const label = route.template;
    const receivedAtMs = now();

    const auth = readAuthorization(req.headers.authorization);
    if (auth.kind === 'unusable') {
      fail(res, label, 401, 'unauthorized', auth.message);
      return;
    }
    // The Basic user name, when given, decides the source; a body `writeKey` is then ignored.
    let sourceId: string | undefined;
    if (auth.kind === 'write-key') {
      sourceId = sourceIdForWriteKey(deps.config.current(), auth.writeKey);
      if (sourceId === undefined) {
        fail(res, label, 401, 'unauthorized', UNKNOWN_WRITE_KEY);
        return;
      }
    }

    const body = await readRequestBody(req, {
      contentEncoding: req.headers['content-encoding'],
      contentLength: req.headers['content-length'],
    });
    if (!body.ok) {
      if ('aborted' in body) {
        logger.debug({ route: label }, 'client went away before the body ended');
        // 499, as nginx logs it: the client closed the request.
        metrics.gatewayRequests.inc({ route: label, status: '499' });
        return;
      }
      fail(res, label, body.status, body.code, body.message, body.closeConnection ? { connection: 'close' } : {});
      return;
    }

    const parsed = parseJsonBody(body.bytes);
    if (!parsed.ok) {
      if (sourceId !== undefined) {
        const kept = await keepRefusedBody(sourceId, body.bytes, 'malformed_json', parsed.message, null, traceparent, receivedAtMs);
        if (!kept.ok) return kafkaUnavailable(res, label, kept.error);
      }
      fail(res, label, 400, 'invalid_json', parsed.message);
      return;
    }

    if (sourceId === undefined) {
      const writeKey = isObject(parsed.value) ? parsed.value.writeKey : undefined;
      if (typeof writeKey !== 'string' || writeKey === '') {
        fail(res, label, 401, 'unauthorized', NO_WRITE_KEY);
        return;
      }
      sourceId = sourceIdForWriteKey(deps.config.current(), writeKey);
      if (sourceId === undefined) {
        fail(res, label, 401, 'unauthorized', UNKNOWN_WRITE_KEY);
        return;
      }
    }
    span?.setAttribute('switchyard.source', sourceId);

    const prepared = ingest({ route, body: parsed.value, receivedAtMs, newMessageId });
    if (!prepared.ok) {
      const key = route.kind === 'batch' ? null : keyOf(parsed.value);
      const kept = await keepRefusedBody(sourceId, body.bytes, prepared.reason, prepared.message, key, traceparent, receivedAtMs);
      if (!kept.ok) return kafkaUnavailable(res, label, kept.error);
      fail(res, label, prepared.status, prepared.code, `${prepared.message} (the request is kept in calls.invalid)`);
      return;
    }

    const { accepted, rejected } = prepared;
    span?.setAttributes({ 'switchyard.calls.accepted': accepted.length, 'switchyard.calls.invalid': rejected.length });
    // One headers object for every call of the request, values as bytes: kafkajs
    // would otherwise convert the same strings once per record.
    const headers: RecordHeaders = { [HEADER.sourceId]: Buffer.from(sourceId) };
    if (traceparent !== undefined) headers[HEADER.traceparent] = Buffer.from(traceparent);
    // NOTE: the record timestamp is when the gateway received the call; the router
    // takes it as the call's received-at.
    const timestamp = String(receivedAtMs);
    const topicMessages: TopicRecords[] = [];
    if (accepted.length > 0) {
      topicMessages.push({
        topic: topics.calls,
        messages: accepted.map((call): OutboundRecord => ({ key: call.key, value: call.value, headers, timestamp })),
      });
    }
    if (rejected.length > 0) {
      topicMessages.push({
        topic: topics.callsInvalid,
        messages: invalidMessages(rejected, body.bytes, sourceId, traceparent, timestamp),
      });
    }
    if (topicMessages.length > 0) {
      const sent = await send(topicMessages);
      if (!sent.ok) return kafkaUnavailable(res, label, sent.error);
    }
    if (rejected.length > 0) {
      for (const call of rejected) metrics.callsInvalid.inc({ reason: call.reason });
      logger.debug({ route: label, source: sourceId, accepted: accepted.length, invalid: rejected.length }, 'calls kept as invalid');
    }
    const notes = rejected.map((call): InvalidCallNote => ({ index: call.index, code: call.reason, message: call.message }));
    answer(res, label, 200, successBody(notes));
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    open += 1;
    res.once('close', () => {
      open -= 1;
      if (open === 0 && onDrained !== undefined) onDrained();
    });
    const route = matchRoute(req.url);
    if (route === undefined) {
      const path = (req.url ?? '').split('?')[0]?.slice(0, 100) ?? '';
      fail(res, OTHER_ROUTE_LABEL, 404, 'not_found', `no route ${JSON.stringify(path)}: POST calls to one of ${ROUTE_PATHS.join(', ')}`);
      return;
    }
    if (req.method !== 'POST') {
      fail(res, route.template, 405, 'method_not_allowed', `${String(req.method)} is not allowed on ${route.template}: send the calls with POST`, {
        allow: 'POST',
      });
      return;
    }
    if (stopping) {
      fail(res, route.template, 503, 'shutting_down', 'this gateway is shutting down: send the request again (to another replica)', {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
        connection: 'close',
      });
      return;
    }
    if (serving >= maxInFlight) {
      fail(res, route.template, 503, 'overloaded', `this gateway already handles ${maxInFlight} requests: send the request again after the Retry-After delay`, {
        'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
      });
      return;
    }
    serving += 1;
    res.once('close', () => {
      serving -= 1;
    });
    const incoming = traceparentHeader(req.headers.traceparent);
    // The request's span (tracing on): a child of the caller's traceparent; its own
    // context is what the records carry, so the router's span is its child.
    const span = tracingActive()
      ? startHopSpan(`POST ${route.template}`, SpanKind.SERVER, incoming, {
          'http.request.method': 'POST',
          'http.route': route.template,
          'messaging.destination.name': topics.calls,
        })
      : undefined;
    serve(req, res, route, span, outgoingTraceparent(span, incoming)).then(
      // 499: the client went away before an answer (as in the request metric).
      () => endRequestSpan(span, res.headersSent ? res.statusCode : 499),
      (error: unknown) => {
        logger.error({ err: error, route: route.template }, 'gateway request failed');
        if (!res.headersSent) fail(res, route.template, 500, 'internal', 'internal error in the gateway: send the request again; if it persists, see the gateway logs');
        else res.destroy();
        endRequestSpan(span, 500, error);
      },
    );
  };

  /**
   * Errors before a request exists (header overflow, header or request timeout, bad
   * HTTP): node writes a bare status line by default; this writes the JSON error body.
   */
  const onClientError = (error: NodeJS.ErrnoException, socket: Duplex): void => {
    // NOTE: node's own handler checks the same private field: a response already under
    // way on this socket must not get a second status line in the middle of it.
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || pending?.headersSent === true) {
      socket.destroy();
      return;
    }
    let status = 400;
    let code: GatewayErrorCode = 'bad_request';
    let message = `the request is not valid HTTP/1.1 (${error.code ?? error.message}): check the client`;
    if (error.code === 'HPE_HEADER_OVERFLOW') {
      status = 431;
      code = 'headers_too_large';
      message = `the request headers are over ${MAX_HEADER_BYTES} bytes: send fewer or shorter headers`;
    } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408;
      code = 'request_timeout';
      message = 'the request did not arrive in time: send the headers and body without pauses';
    }
    metrics.gatewayRequests.inc({ route: OTHER_ROUTE_LABEL, status: String(status) });
    logger.info({ status, code, cause: error.code }, `request refused: ${message}`);
    const body = errorBody(code, message);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  };

  const waitForOpenResponses = async (): Promise<void> => {
    if (open === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      onDrained = resolve;
      timer = setTimeout(() => {
        logger.warn({ open, drainTimeoutMs }, 'requests still in flight at the drain deadline; closing their connections (clients will retry)');
        resolve();
      }, drainTimeoutMs);
    });
    clearTimeout(timer);
    onDrained = undefined;
  };

  return {
    name: 'gateway',
    port: () => (server?.address() as AddressInfo | null)?.port ?? configuredPort,

    async start() {
      const admin = createAdmin(kafka);
      await admin.connect();
      try {
        const created = await admin.ensureTopics(topology.gateway(), initial.kafka);
        if (created.length > 0) logger.info({ topics: created }, 'created topics');
      } finally {
        await admin.disconnect();
      }

      const out = createProducer(kafka, { maxConcurrentSends: options.maxConcurrentSends ?? 4, ackTimeoutMs: sendTimeoutMs });
      producer = out;
      await out.connect();

      const http = createServer(
        {
          maxHeaderSize: MAX_HEADER_BYTES,
          headersTimeout: options.headersTimeoutMs ?? 10_000,
          requestTimeout: options.requestTimeoutMs ?? 30_000,
          keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
          // NOTE: the header and request timeouts are enforced by a sweep at this
          // interval (node's default is 30 s, which would let a slowloris linger).
          connectionsCheckingInterval: 1_000,
        },
        onRequest,
      );
      http.on('clientError', onClientError);
      server = http;
      await new Promise<void>((resolve, reject) => {
        const onError = (error: NodeJS.ErrnoException) => {
          reject(
            new Error(
              `the gateway could not listen on ${host}:${configuredPort} (${error.code ?? error.message}): set gateway.port to a free port or stop what holds it`,
              { cause: error },
            ),
          );
        };
        http.once('error', onError);
        http.listen(configuredPort, host, () => {
          http.off('error', onError);
          resolve();
        });
      });
      http.on('error', (error) => logger.error({ err: error }, 'gateway server error'));
      logger.info({ host, port: (http.address() as AddressInfo).port, topic: topics.calls }, 'gateway listening');
    },

    // Order: stop intake (no new connections, idle ones closed, 503 to requests that
    // still arrive on open ones), let in-flight requests finish (their sends complete
    // and are answered), close what is left, then disconnect the producer.
    stop: onceStop(async () => {
      stopping = true;
      const http = server;
      await runAll([
        async () => {
          if (http === undefined || !http.listening) return;
          const closed = new Promise<void>((resolve) => http.close(() => resolve()));
          http.closeIdleConnections();
          await waitForOpenResponses();
          http.closeAllConnections();
          await closed;
        },
        async () => {
          if (producer !== undefined) await producer.disconnect();
        },
      ]);
      logger.info('gateway stopped');
    }),

    health(): ServiceHealth {
      const listening = server?.listening ?? false;
      // NOTE: a failing send does not make the gateway unready: every replica shares
      // the brokers, and taking them all out of the balancer would turn a 503 with
      // Retry-After (which clients honour) into connection errors.
      const detail = stopping
        ? 'stopping'
        : !listening
          ? 'not listening'
          : !producerConnected()
            ? 'Kafka producer not connected'
            : lastSendError !== undefined
              ? `last send to Kafka failed: ${lastSendError}`
              : undefined;
      return { live: true, ready: listening && producerConnected() && !stopping, ...(detail ? { detail } : {}) };
    },
  };
}

const NO_WRITE_KEY =
  'no write key: send it as the HTTP Basic user name with an empty password (Authorization: Basic base64("<write key>:")) or as "writeKey" in the body';
const UNKNOWN_WRITE_KEY =
  "unknown write key: no source in the Switchyard config has this writeKey; check the client's write key against sources[].writeKey";

/** Headers of a record in `calls.invalid`. */
function invalidHeaders(sourceId: string, traceparent: string | undefined, error: string): RecordHeaders {
  const headers: RecordHeaders = { [HEADER.sourceId]: sourceId, [HEADER.error]: error };
  if (traceparent !== undefined) headers[HEADER.traceparent] = traceparent;
  return headers;
}

/**
 * One `calls.invalid` record per rejected call. A call that cannot be re-serialized
 * (nested deeper than JSON.stringify goes) is kept through one record of the whole
 * request body instead, however many such calls it holds.
 */
function invalidMessages(
  rejected: readonly RejectedCall[],
  body: Buffer,
  sourceId: string,
  traceparent: string | undefined,
  timestamp: string,
): OutboundRecord[] {
  const messages: OutboundRecord[] = [];
  const unserializable: RejectedCall[] = [];
  for (const call of rejected) {
    if (call.value === undefined) {
      unserializable.push(call);
      continue;
    }
    messages.push({
      key: call.key,
      value: call.value,
      headers: invalidHeaders(sourceId, traceparent, `${call.reason}: ${call.message}`),
      timestamp,
    });
  }
  if (unserializable.length > 0) {
    const which = unserializable.map((call) => call.index).join(', ');
    const first = unserializable[0]!;
    messages.push({
      key: null,
      value: body,
      headers: invalidHeaders(
        sourceId,
        traceparent,
        `${first.reason}: the whole request is kept because calls at batch index ${which} cannot be re-serialized: ${first.message}`,
      ),
      timestamp,
    });
  }
  return messages;
}

function endRequestSpan(span: Span | undefined, status: number, error?: unknown): void {
  if (span === undefined) return;
  span.setAttribute('http.response.status_code', status);
  // A 4xx is the client's doing; only the gateway's own failures mark the span failed.
  endSpan(span, error ?? (status >= 500 ? `answered ${status}` : undefined));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** userId, else anonymousId, of a single-call body, for the key of its `calls.invalid` record. */
function keyOf(value: unknown): string | null {
  if (!isObject(value)) return null;
  for (const id of [value.userId, value.anonymousId]) {
    if (typeof id === 'string' && id !== '') return id;
    if (typeof id === 'number' && Number.isFinite(id)) return String(id);
  }
  return null;
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message.slice(0, 300);
  return String(error).slice(0, 300);
}
