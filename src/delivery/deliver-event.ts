// One delivery message, start to end: sign it, send it to the URLs its circuits let
// through (fan-out.ts), count the answers, and hand a failure to retry-or-dead-letter.ts.
// With tracing on, the attempt is a span whose context goes out as `traceparent`.
// A batch (`settings.batch`, docs/webhooks.md#batches) goes the same way as one request
// whose body is the array of its events (batch.ts); its outcome is each event's.
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { Logger } from 'pino';
import type { InboundRecord } from '../kafka/index.js';
import { SpanKind, endSpan, outgoingTraceparent, startHopSpan, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import type { DeliveryCounters } from './delivery-counters.js';
import type { PreparedDestination } from './destination-settings.js';
import type { Envelope } from './envelope.js';
import { fanOut, summarize } from './fan-out.js';
import type { UrlResult } from './fan-out.js';
import { authFailed } from './classify.js';
import type { HttpSender } from './http-sender.js';
import type { RatePace } from './rate-pace.js';
import { batchBody, batchId, halves, wantsSplit } from './batch.js';
import type { HeldRetry, NotDelivered, RetryOrDeadLetter } from './retry-or-dead-letter.js';
import type { Admitted, UrlCircuits } from './url-circuits.js';
import { HEADER, headerText } from '../runtime/headers.js';

/** What became of one event: the `result` label of `switchyard_deliveries_total`; or, for an ordered destination, its retry waiting in the lane. */
export type DeliveryResult = 'delivered' | NotDelivered | HeldRetry;

/** One message to deliver, with what was decided for it before it started. */
export interface DeliveryJob {
  record: InboundRecord;
  envelope: Envelope;
  settings: PreparedDestination;
  /** The URLs its circuits let through (url-circuits.ts). */
  admitted: Admitted;
  /** `ordering: user`: a next attempt waits in the lane, not in a retry tier (retry-or-dead-letter.ts `HeldRetry`). */
  hold?: boolean;
}

/** The events of one batch request, in the order of the array. */
export interface BatchJob {
  events: readonly { record: InboundRecord; envelope: Envelope }[];
  settings: PreparedDestination;
  admitted: Admitted;
  hold?: boolean;
}

export interface EventDeliveryOptions {
  destinationId: string;
  sender: HttpSender;
  circuits: UrlCircuits;
  pace: RatePace;
  counters: DeliveryCounters;
  next: RetryOrDeadLetter;
  logger: Logger;
}

export class EventDelivery {
  constructor(private readonly options: EventDeliveryOptions) {}

  /**
   * Delivers one event and writes what comes next (retry tier or dead letter).
   * Resolves once the outcome is safe in Kafka; rejects when that write failed.
   */
  deliver(job: DeliveryJob): Promise<DeliveryResult> {
    return tracingActive() ? this.deliverInSpan(job) : this.attempt(job);
  }

  /**
   * The attempt inside its span: a child of the delivery record's `traceparent` (the
   * router's span), so the receiver's request joins the caller's trace.
   */
  private async deliverInSpan(job: DeliveryJob): Promise<DeliveryResult> {
    const { destinationId } = this.options;
    const span = startHopSpan(`deliver ${destinationId}`, SpanKind.CLIENT, job.envelope.traceparent, {
      'switchyard.destination': destinationId,
      'messaging.message.id': headerText(job.record.headers, HEADER.messageId),
      'messaging.destination.name': job.record.topic,
      'messaging.kafka.offset': Number(job.record.offset),
      'switchyard.delivery.attempt': job.envelope.attemptsMade + 1,
    });
    try {
      const result = await this.attempt(job, span);
      const label = typeof result === 'string' ? result : 'retry_scheduled';
      span?.setAttribute('switchyard.delivery.result', label);
      endSpan(span, label === 'delivered' ? undefined : `not delivered: ${label.replace('_', ' ')}`);
      return result;
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
  }

  /**
   * Delivers a batch in one request and writes what comes next for each event. Resolves
   * with each event's outcome, in the batch's order: a rejected one is an event whose
   * retry or dead letter could not be written. A batch gets no span of its own.
   */
  async deliverBatch(job: BatchJob): Promise<PromiseSettledResult<DeliveryResult>[]> {
    const { events, settings, admitted } = job;
    const startedAt = Date.now();
    const outcomes: Promise<DeliveryResult>[] = new Array<Promise<DeliveryResult>>(events.length);
    const sendable: number[] = [];
    events.forEach(({ record, envelope }, i) => {
      if (record.value === null || record.value.length === 0) outcomes[i] = this.options.next.nothingToSend(record, envelope, startedAt);
      else sendable.push(i);
    });
    if (sendable.length === 0) this.options.circuits.abandon(admitted, startedAt);
    else {
      const results = this.sendBatch(sendable.map((i) => events[i]!), settings, admitted, job.hold === true, startedAt);
      for (const [i, at] of sendable.entries()) outcomes[at] = results.then((all) => all[i]!);
    }
    return Promise.allSettled(outcomes);
  }

  /**
   * One batch request, and what each of its events came to. NOTE: a 413 splits the batch
   * in halves sent at once (on the batch's permit), down to single events; a single
   * event answered 413 is a permanent failure as any other 4xx (docs/webhooks.md#batches).
   */
  private async sendBatch(
    events: readonly { record: InboundRecord; envelope: Envelope }[],
    settings: PreparedDestination,
    admitted: Admitted,
    hold: boolean,
    startedAt: number,
  ): Promise<Promise<DeliveryResult>[]> {
    const { circuits, counters, next } = this.options;
    const body = batchBody(
      events.map(({ record }) => record.value!),
      settings.batch?.format,
    );
    const id = batchId(events.map(({ record }) => headerText(record.headers, HEADER.messageId) ?? `${record.topic}/${record.partition}@${record.offset}`));
    const results = await this.sendBody(settings, admitted, body, id, undefined, startedAt);
    counters.batchSent(events.length);
    const summary = summarize(results, settings.stopOn);
    if (summary.delivered) {
      for (const { envelope } of events) counters.eventDelivered(envelope.receivedAtMs);
      return events.map(() => Promise.resolve('delivered' as const));
    }
    if (wantsSplit(events.length, results)) {
      const now = Date.now();
      const parts = await Promise.all(halves(events).map((half) => this.sendBatch(half, settings, circuits.admit(settings, now), hold, now)));
      return parts.flat();
    }
    return events.map(({ record, envelope }) =>
      next.afterFailure({ record, envelope, settings, firstAttemptAtMs: envelope.firstAttemptAtMs ?? startedAt, attemptedAtMs: startedAt, results, summary }, hold),
    );
  }

  /** `span`: the attempt's span when tracing is on; its context goes out as `traceparent`. */
  private async attempt(job: DeliveryJob, span?: Span): Promise<DeliveryResult> {
    const { record, envelope, admitted } = job;
    const { circuits, next, logger } = this.options;
    const startedAt = Date.now();
    if (envelope.problems.length > 0) {
      logger.warn({ topic: record.topic, offset: record.offset, problems: envelope.problems }, 'delivery message has unreadable headers; delivering it anyway');
    }
    const body = record.value;
    if (body === null || body.length === 0) {
      circuits.abandon(admitted, startedAt);
      return next.nothingToSend(record, envelope, startedAt);
    }
    const results = await this.send(job, body, startedAt, span);
    const summary = summarize(results, job.settings.stopOn);
    if (summary.delivered) {
      this.options.counters.eventDelivered(envelope.receivedAtMs);
      return 'delivered';
    }
    return next.afterFailure(
      { record, envelope, settings: job.settings, firstAttemptAtMs: envelope.firstAttemptAtMs ?? startedAt, attemptedAtMs: startedAt, results, summary },
      job.hold === true,
    );
  }

  /** Sends one event's body to the admitted URLs. */
  private send(job: DeliveryJob, body: Buffer, startedAt: number, span: Span | undefined): Promise<UrlResult[]> {
    const { settings, admitted, record } = job;
    return this.sendBody(settings, admitted, body, headerText(record.headers, HEADER.messageId), outgoingTraceparent(span, job.envelope.traceparent), startedAt, span);
  }

  /**
   * Signs `body` as `id` (the messageId, or a batch's id) and sends it to the admitted
   * URLs; the results include a `circuit_open` one per skipped URL.
   */
  private async sendBody(
    settings: PreparedDestination,
    admitted: Admitted,
    body: Buffer,
    id: string | undefined,
    traceparent: string | undefined,
    startedAt = Date.now(),
    span?: Span,
  ): Promise<UrlResult[]> {
    const { circuits } = this.options;
    const perEvent: Record<string, string> = {};
    // NOTE: compressed first, then signed: the signature is over the bytes sent (docs/webhooks.md#compression).
    if (settings.gzip === true) body = await gzipped(body);
    settings.sign?.(body, id, startedAt, perEvent);
    if (traceparent !== undefined) perEvent.traceparent = traceparent;
    const results: UrlResult[] = admitted.send === 0 ? [] : await this.authorizedFanOut(settings, admitted, body, perEvent);
    const answeredAt = Date.now();
    circuits.settle(admitted, settings.oauth2 === undefined ? results : withoutAuthFailures(results), answeredAt);
    if (admitted.skipped !== 0) results.push(...circuits.skippedResults(admitted));
    if (span !== undefined) recordAttempt(span, results);
    this.count(results, answeredAt);
    return results;
  }

  /**
   * fanOut with the destination's OAuth2 token, when it has one (docs/webhooks.md#authentication).
   * No token: every admitted URL's result is `auth` (retryable), and no request is sent.
   * NOTE: URLs that answer 401 get the request once more at once with a renewed token;
   * their first answer is replaced by the second, so it is neither an attempt nor
   * counted as one (a token that expired early, or was revoked, is not the event's fault).
   */
  private async authorizedFanOut(settings: PreparedDestination, admitted: Admitted, body: Buffer, perEvent: Record<string, string>): Promise<UrlResult[]> {
    const { sender } = this.options;
    const { oauth2, targets } = settings;
    if (oauth2 === undefined) return fanOut(sender, targets, body, perEvent, admitted);
    let token = oauth2.fresh();
    if (token === undefined) {
      const outcome = await oauth2.token();
      if (!outcome.ok) return unauthorized(admitted.send, outcome.reason);
      token = outcome.token;
    }
    perEvent.authorization = `Bearer ${token}`;
    const results = await fanOut(sender, targets, body, perEvent, admitted);
    let rejected = 0;
    for (const { index, result } of results) {
      if (result.outcome === '2xx') return results;
      if (result.outcome !== 'cancelled' && result.status === 401) rejected |= 1 << index;
    }
    if (rejected === 0) return results;
    const kept = results.filter(({ index }) => (rejected & (1 << index)) === 0);
    const renewed = await oauth2.afterRejection(token);
    if (!renewed.ok) return [...kept, ...unauthorized(rejected, renewed.reason)];
    perEvent.authorization = `Bearer ${renewed.token}`;
    return [...kept, ...(await fanOut(sender, targets, body, perEvent, { send: rejected, keep: admitted.keep & rejected }))];
  }

  private count(results: readonly UrlResult[], answeredAt: number): void {
    const { counters, pace } = this.options;
    for (const { result } of results) {
      if (result.outcome === 'cancelled') continue;
      counters.attempt(result.outcome);
      if (result.outcome === 'circuit_open' || result.outcome === 'auth') continue; // no request, no duration
      counters.requestTook(result.durationMs);
      // NOTE: a 429 with Retry-After slows the destination's pace until it has passed.
      if (result.status === 429 && result.retryAfterMs !== undefined) pace.slowDown(answeredAt + result.retryAfterMs, answeredAt);
    }
  }
}

/** The answers of one attempt on its span: each URL's outcome, and the deciding status code. */
function recordAttempt(span: Span, results: readonly UrlResult[]): void {
  const outcomes: string[] = [];
  let status: number | undefined;
  for (const { result } of [...results].sort((a, b) => a.index - b.index)) {
    outcomes.push(result.outcome);
    if (result.outcome === 'cancelled') continue;
    if (result.verdict === 'delivered' || status === undefined) status = result.status ?? status;
  }
  span.setAttribute('switchyard.delivery.outcomes', outcomes);
  if (status !== undefined) span.setAttribute('http.response.status_code', status);
}

/**
 * The results as a URL's circuit sees them: a URL that got no request for want of a
 * token did not fail (the identity provider did), so its result is unknown, as a
 * cancelled request's is.
 */
function withoutAuthFailures(results: readonly UrlResult[]): UrlResult[] {
  return results.map((r) => (r.result.outcome === 'auth' ? { index: r.index, result: { outcome: 'cancelled', durationMs: 0 } } : r));
}

/** gzip on libuv's thread pool: a large batch does not hold up the event loop. */
const gzipped: (body: Buffer) => Promise<Buffer> = promisify(gzip);

/** An `auth` result for each URL in `mask`: the token endpoint gave no token, so no request went out. */
function unauthorized(mask: number, reason: string): UrlResult[] {
  const results: UrlResult[] = [];
  for (let index = 0; mask >> index !== 0; index++) {
    if ((mask & (1 << index)) !== 0) results.push({ index, result: { ...authFailed(reason), durationMs: 0 } });
  }
  return results;
}
