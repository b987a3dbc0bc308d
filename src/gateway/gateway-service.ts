/**
 * `switchyard gateway`: Segment's tracking API over node:http (docs/http-api.md).
 *
 * Each request: intake.ts (route, method, limits) → request-handler.ts: write key →
 * body (gzip, 500 KB) → JSON → calls prepared (ingest.ts) → the request's records
 * (gateway-records.ts) → ONE send with acks=all on the port's producer (call-writer.ts;
 * acks=all, not idempotent: see src/kafka/producer.ts), carrying the valid calls to
 * `calls` and the invalid ones to `calls.invalid` → the answer (responder.ts).
 * NOTE: `200 {"success":true}` is written only after Kafka acknowledged that send, so
 * a call the client saw accepted is on the brokers; a crash before the answer makes
 * the client send again (duplicates, never loss).
 */
import { randomUUID } from 'node:crypto';
import { SourceLimiter } from '../limits/source-limits.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { createCallWriter } from './call-writer.js';
import type { CallWriter } from './call-writer.js';
import { GatewayIntake } from './intake.js';
import { DEFAULT_BODY_PACE } from './request-body.js';
import type { BodyPace } from './request-body.js';
import { serveRequest } from './request-handler.js';
import type { RequestContext } from './request-handler.js';
import { createResponder } from './responder.js';
import { FIRST_REQUEST_TIMEOUT_MS } from '../runtime/connection-guard.js';
import { authorizeHeader } from './write-key.js';
import { createTopology } from '../runtime/topology.js';

export interface GatewayOptions {
  /** The gateway's clock (epoch ms): `receivedAt` and the skew correction. Tests pin it. */
  now?: () => number;
  /** Id for calls without a messageId; a random UUID by default. */
  newMessageId?: () => string;
  /**
   * Requests with a known write key in the Authorization header handled at once; over it,
   * 503 with Retry-After. Default 256 (at most 128 MB of bodies).
   */
  maxInFlightRequests?: number;
  /**
   * Requests without an Authorization header (the write key in the body) handled at once,
   * in a pool of their own: callers without a key cannot take the slots of those with
   * one. Default 32.
   */
  maxInFlightKeyInBody?: number;
  /** Connections open at once; more are closed as they arrive. Default 4,096. */
  maxConnections?: number;
  /**
   * Connections open at once from one client address; more are closed as they arrive.
   * Default maxConnections less an eighth of it, at most 512 (3,584 of 4,096): one address
   * cannot take the slots of the others.
   */
  maxConnectionsPerAddress?: number;
  /** How long a new connection may go without a whole request. Default 2 s. */
  firstRequestTimeoutMs?: number;
  /** How fast a body must arrive (request-body.ts). Default: first byte within 5 s, then 8 KB/s. */
  bodyPace?: BodyPace;
  /** How long a send may wait for Kafka's acknowledgement before the answer is 503. Default 10 s. */
  sendTimeoutMs?: number;
  /**
   * Produce requests in flight at once; the writes of requests that arrive meanwhile
   * are merged into the next one (the port's producer, src/kafka/producer.ts). Default 1. `Infinity` sends
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

/**
 * At most this many connection slots no single client address can take
 * (docs/operations.md#threat-model). NOTE: behind a load balancer every connection comes
 * from the balancer's few addresses; its pool reuses connections and stays far below the
 * rest of the cap.
 */
const MAX_CONNECTIONS_KEPT_FOR_OTHERS = 512;

export function createGatewayService(deps: RoleDeps, options: GatewayOptions = {}): GatewayService {
  const { kafka, metrics } = deps;
  const logger = deps.logger.child({ component: 'gateway' });
  const initial = deps.config.current();
  // NOTE: Kafka settings (brokers, prefix) are read once: a reload cannot move the
  // topics under a running producer. Sources and write keys are read live per request.
  const topology = createTopology(initial.kafka.topicPrefix);
  const topics = topology.names;
  const writer = createCallWriter({
    kafka,
    config: initial.kafka,
    topology,
    logger,
    sendTimeoutMs: options.sendTimeoutMs ?? 10_000,
    maxConcurrentSends: options.maxConcurrentSends ?? 1,
  });
  const reply = createResponder(metrics, logger);
  const limiter = new SourceLimiter();
  // A source removed by a reload leaves no buckets behind.
  const stopForgetting = deps.config.onChange((next) => limiter.keepOnly(new Set(next.sources.map((source) => source.id))));
  const context: RequestContext = {
    config: deps.config,
    topics,
    writer,
    reply,
    metrics,
    logger,
    now: options.now ?? Date.now,
    newMessageId: options.newMessageId ?? randomUUID,
    bodyPace: options.bodyPace ?? DEFAULT_BODY_PACE,
    limiter,
  };
  const maxConnections = options.maxConnections ?? 4_096;
  const intake = new GatewayIntake({
    host: initial.gateway.host,
    port: initial.gateway.port,
    maxInFlight: options.maxInFlightRequests ?? 256,
    maxInFlightKeyInBody: options.maxInFlightKeyInBody ?? 32,
    maxConnections,
    maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? Math.max(1, maxConnections - Math.min(MAX_CONNECTIONS_KEPT_FOR_OTHERS, Math.floor(maxConnections / 8))),
    firstRequestTimeoutMs: options.firstRequestTimeoutMs ?? FIRST_REQUEST_TIMEOUT_MS,
    authorize: (req) => authorizeHeader(deps.config.current(), req.headers.authorization),
    headersTimeoutMs: options.headersTimeoutMs ?? 10_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    drainTimeoutMs: options.drainTimeoutMs ?? 10_000,
    callsTopic: topics.calls,
    serve: (req, res, route, sourceId, span, traceparent) => serveRequest(context, req, res, route, sourceId, span, traceparent),
    reply,
    metrics,
    logger,
  });

  return {
    name: 'gateway',
    port: () => intake.port(),
    async start() {
      await writer.start();
      await intake.listen();
    },
    // Order: stop intake and let in-flight requests finish (their sends complete and
    // are answered), close what is left, then disconnect the producer.
    stop: onceStop(async () => {
      stopForgetting();
      await runAll([() => intake.close(), () => writer.stop()]);
      logger.info('gateway stopped');
    }),
    health: () => gatewayHealth(intake, writer),
  };
}

function gatewayHealth(intake: GatewayIntake, writer: CallWriter): ServiceHealth {
  const listening = intake.listening();
  const stopping = intake.stopping();
  const connected = writer.connected();
  const sendFailed = writer.lastSendError() !== undefined;
  // NOTE: a failing send does not make the gateway unready: every replica shares
  // the brokers, and taking them all out of the balancer would turn a 503 with
  // Retry-After (which clients honour) into connection errors.
  // NOTE: /readyz is not authenticated: it names the dependency that is down, never its
  // error text (the log has that).
  const detail = stopping
    ? 'stopping'
    : !listening
      ? 'not listening'
      : !connected
        ? 'Kafka producer not connected'
        : sendFailed
          ? 'Kafka: the last send failed'
          : undefined;
  return { live: true, ready: listening && connected && !stopping, ...(detail ? { detail } : {}) };
}
