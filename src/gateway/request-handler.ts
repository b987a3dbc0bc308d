// One request to a tracking route, in the order the steps happen (the write key of the
// Authorization header was checked by the intake before it took a slot):
// the source's limits, when the header named it (nothing read while it owes) → body
// (gzip, 500 KB, paced, inflating at most 100×) → JSON → write key from the body →
// calls prepared (ingest.ts) → the source's limits (calls and bytes of this write) →
// ONE send of the request's records → the answer.
// Every refusal is answered here with a stable code and a message saying what to do.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { InvalidReason } from '../calls/index.js';
import type { Config, SourceLimitsConfig } from '../config/schema.js';
import type { ConfigStore } from '../config/store.js';
import { retryAfterSeconds } from '../limits/source-limits.js';
import type { LimitVerdict, SourceLimiter } from '../limits/source-limits.js';
import type { Metrics } from '../observability/metrics.js';
import type { Span } from '../observability/tracing.js';
import { successBody } from './answers.js';
import type { InvalidCallNote } from './answers.js';
import type { CallWriter } from './call-writer.js';
import { recordHeaders, refusedBodyWrite, requestWrite } from './gateway-records.js';
import { ingest } from './ingest.js';
import type { AcceptedCall, RejectedCall } from './ingest.js';
import { parseJsonBody, readRequestBody } from './request-body.js';
import type { BodyPace } from './request-body.js';
import type { Responder } from './responder.js';
import type { Route } from './routes.js';
import { UNKNOWN_WRITE_KEY, sourceIdForWriteKey } from './write-key.js';
import type { TopicNames } from '../runtime/topics.js';

/** What serving a request needs from the gateway. */
export interface RequestContext {
  config: ConfigStore;
  topics: TopicNames;
  writer: CallWriter;
  reply: Responder;
  metrics: Metrics;
  logger: Logger;
  /** The gateway's clock (epoch ms). */
  now: () => number;
  newMessageId: () => string;
  /** How fast a body must arrive (request-body.ts). */
  bodyPace: BodyPace;
  /** Each source's calls and bytes per second (src/limits/source-limits.ts). */
  limiter: SourceLimiter;
}

/** Retry-After (seconds) when Kafka does not acknowledge: long enough for a leader election. */
const KAFKA_RETRY_AFTER_SECONDS = 5;

const NO_WRITE_KEY =
  'no write key: send it as the HTTP Basic user name with an empty password (Authorization: Basic base64("<write key>:")) or as "writeKey" in the body';

/** A request whose body was read: what a refusal of the whole body needs to keep it. */
interface ReadRequest {
  res: ServerResponse;
  label: string;
  body: Buffer;
  receivedAtMs: number;
  traceparent: string | undefined;
}

/**
 * `headerSourceId`: the source the Authorization header named (the intake checked it),
 * undefined when the key is to be read from the body. `traceparent`: what the records
 * of this request carry: the request span's context when tracing is on, else the
 * request's own header (valid ones only).
 */
export async function serveRequest(
  ctx: RequestContext,
  req: IncomingMessage,
  res: ServerResponse,
  route: Route,
  headerSourceId: string | undefined,
  span: Span | undefined,
  traceparent: string | undefined,
): Promise<void> {
  const label = route.template;
  const receivedAtMs = ctx.now();

  if (headerSourceId !== undefined && !withinLimits(ctx, res, label, headerSourceId, ctx.limiter.check(headerSourceId, limitsOf(ctx, headerSourceId), receivedAtMs))) return;
  const body = await readBody(ctx, req, res, label);
  if (body === undefined) return;
  const request: ReadRequest = { res, label, body, receivedAtMs, traceparent };

  const parsed = parseJsonBody(body);
  if (!parsed.ok) {
    if (headerSourceId !== undefined) {
      if (!withinLimits(ctx, res, label, headerSourceId, ctx.limiter.take(headerSourceId, limitsOf(ctx, headerSourceId), 1, body.length, ctx.now()))) return;
      const kept = await keepRefusedBody(ctx, request, headerSourceId, null, 'malformed_json', parsed.message);
      if (!kept) return;
    }
    ctx.reply.fail(res, label, 400, 'invalid_json', parsed.message);
    return;
  }

  // The Basic user name, when given, decides the source; a body `writeKey` is then ignored.
  const sourceId = headerSourceId ?? sourceFromBody(ctx, parsed.value, res, label);
  if (sourceId === undefined) return;
  span?.setAttribute('switchyard.source', sourceId);

  const prepared = ingest({ route, body: parsed.value, receivedAtMs, newMessageId: ctx.newMessageId });
  if (!prepared.ok && prepared.code === 'write_too_large') {
    // NOTE: nothing written, not even the body (docs/http-api.md#limits): keeping it would
    // be the write the limit refuses.
    ctx.reply.fail(res, label, prepared.status, prepared.code, prepared.message);
    return;
  }
  if (!prepared.ok) {
    if (!withinLimits(ctx, res, label, sourceId, ctx.limiter.take(sourceId, limitsOf(ctx, sourceId), 1, body.length, ctx.now()))) return;
    const key = route.kind === 'batch' ? null : keyOf(parsed.value);
    const kept = await keepRefusedBody(ctx, request, sourceId, key, prepared.reason, prepared.message);
    if (kept) ctx.reply.fail(res, label, prepared.status, prepared.code, `${prepared.message} (the request is kept in calls.invalid)`);
    return;
  }
  span?.setAttributes({ 'switchyard.calls.accepted': prepared.accepted.length, 'switchyard.calls.invalid': prepared.rejected.length });
  const calls = prepared.accepted.length + prepared.rejected.length;
  const taken = ctx.limiter.take(sourceId, limitsOf(ctx, sourceId), calls, writtenUnits(prepared), ctx.now());
  if (!withinLimits(ctx, res, label, sourceId, taken)) return;
  await writeCalls(ctx, request, sourceId, prepared);
}

/** True when `verdict` admits the request; else answers 429 with Retry-After and counts it. */
function withinLimits(ctx: RequestContext, res: ServerResponse, label: string, sourceId: string, verdict: LimitVerdict): boolean {
  if (verdict.ok) return true;
  const retryAfter = retryAfterSeconds(verdict.retryAfterMs);
  ctx.metrics.gatewayThrottled.inc({ source: sourceId });
  const limit = verdict.limit === 'calls' ? 'callsPerSecond' : 'bytesPerSecond';
  ctx.reply.fail(
    res,
    label,
    429,
    'rate_limited',
    `source ${JSON.stringify(sourceId)} is over its ${limit} (sources[].limits); nothing of this request was written: send it again after the Retry-After delay (${retryAfter} s)`,
    { 'retry-after': String(retryAfter) },
  );
  return false;
}

/** The source's configured limits (undefined: the defaults), looked up once per config. */
function limitsOf(ctx: RequestContext, sourceId: string): SourceLimitsConfig | undefined {
  const config = ctx.config.current();
  let bySource = LIMITS_BY_CONFIG.get(config);
  if (bySource === undefined) {
    bySource = new Map(config.sources.map((source) => [source.id, source.limits]));
    LIMITS_BY_CONFIG.set(config, bySource);
  }
  return bySource.get(sourceId);
}

const LIMITS_BY_CONFIG = new WeakMap<Config, Map<string, SourceLimitsConfig>>();

/**
 * What the request's records take, in characters of their keys and values (as many bytes
 * for ASCII; each record's written bytes are at most 3 times that).
 */
function writtenUnits(calls: { accepted: readonly AcceptedCall[]; rejected: readonly RejectedCall[] }): number {
  let units = 0;
  for (const call of calls.accepted) units += (call.key?.length ?? 0) + call.value.length;
  for (const call of calls.rejected) units += (call.key?.length ?? 0) + (call.value?.length ?? 0);
  return units;
}

/** The source the body's `writeKey` names, or undefined when refused (answered). */
function sourceFromBody(ctx: RequestContext, value: unknown, res: ServerResponse, label: string): string | undefined {
  const writeKey = isObject(value) ? value.writeKey : undefined;
  if (typeof writeKey !== 'string' || writeKey === '') {
    ctx.reply.fail(res, label, 401, 'unauthorized', NO_WRITE_KEY);
    return undefined;
  }
  const sourceId = sourceIdForWriteKey(ctx.config.current(), writeKey);
  if (sourceId === undefined) ctx.reply.fail(res, label, 401, 'unauthorized', UNKNOWN_WRITE_KEY);
  return sourceId;
}

/** The decoded body, or undefined when it was refused (answered) or the client went away. */
async function readBody(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, label: string): Promise<Buffer | undefined> {
  const body = await readRequestBody(
    req,
    {
      contentEncoding: req.headers['content-encoding'],
      contentLength: req.headers['content-length'],
    },
    ctx.bodyPace,
  );
  if (body.ok) return body.bytes;
  if ('aborted' in body) {
    ctx.logger.debug({ route: label }, 'client went away before the body ended');
    // 499, as nginx logs it: the client closed the request.
    ctx.metrics.gatewayRequests.inc({ route: label, status: '499' });
    return undefined;
  }
  ctx.reply.fail(res, label, body.status, body.code, body.message);
  return undefined;
}

/**
 * Keeps a whole request body that was refused in `calls.invalid`. Only called when
 * its source is known: anonymous junk from the internet is answered, not stored.
 * False when Kafka did not take it (then answered 503).
 */
async function keepRefusedBody(
  ctx: RequestContext,
  request: ReadRequest,
  sourceId: string,
  key: string | null,
  reason: InvalidReason,
  message: string,
): Promise<boolean> {
  const headers = recordHeaders(sourceId, request.traceparent);
  const write = refusedBodyWrite(ctx.topics, { body: request.body, key, headers, receivedAtMs: request.receivedAtMs, reason, message });
  const kept = await ctx.writer.send(write);
  if (!kept.ok) {
    kafkaUnavailable(ctx, request.res, request.label, kept.error);
    return false;
  }
  // Counted once kept: a 503 makes the client send it again.
  ctx.metrics.callsInvalid.inc({ reason });
  return true;
}

/** Writes the request's calls (valid and invalid) in one send and answers 200 once acknowledged, else 503. */
async function writeCalls(
  ctx: RequestContext,
  request: ReadRequest,
  sourceId: string,
  calls: { accepted: readonly AcceptedCall[]; rejected: readonly RejectedCall[] },
): Promise<void> {
  const { res, label } = request;
  const { accepted, rejected } = calls;
  // NOTE: the record timestamp is when the gateway received the call; the router
  // takes it as the call's received-at.
  const timestamp = String(request.receivedAtMs);
  const headers = recordHeaders(sourceId, request.traceparent);
  const write = requestWrite(ctx.topics, { accepted, rejected, body: request.body, headers, timestamp });
  if (write.length > 0) {
    const sent = await ctx.writer.send(write);
    if (!sent.ok) return kafkaUnavailable(ctx, res, label, sent.error);
  }
  if (rejected.length > 0) {
    for (const call of rejected) ctx.metrics.callsInvalid.inc({ reason: call.reason });
    ctx.logger.debug({ route: label, source: sourceId, accepted: accepted.length, invalid: rejected.length }, 'calls kept as invalid');
  }
  const notes = rejected.map((call): InvalidCallNote => ({ index: call.index, code: call.reason, message: call.message }));
  ctx.reply.answer(res, label, 200, successBody(notes));
}

function kafkaUnavailable(ctx: RequestContext, res: ServerResponse, label: string, error: unknown): void {
  // NOTE: the client gets no error text of Kafka's (broker addresses, topic names): the
  // log has it (docs/operations.md#security).
  ctx.logger.warn({ err: error, route: label }, 'Kafka did not acknowledge the calls; answering 503');
  ctx.reply.fail(
    res,
    label,
    503,
    'kafka_unavailable',
    'the calls could not be written to Kafka; nothing of this request was accepted: send it again after the Retry-After delay',
    { 'retry-after': String(KAFKA_RETRY_AFTER_SECONDS) },
  );
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
