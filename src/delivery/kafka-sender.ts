// A `type: kafka` destination's deliveries (docs/kafka.md#a-topic-as-a-destination): what
// the HTTP requests are for a webhook destination, here a produce to its topic. It plugs
// into the lane where EventDelivery (deliver-event.ts) does, so queueing, permits,
// batching, per-user order, retry tiers, dead letters, commits and metrics are the
// webhooks' own: an event is finished once its record is acknowledged (acks=all), or
// its retry or dead letter is written.
//
// The record: key, value and headers as `settings.key`, `settings.value` and
// `settings.headers` say (kafkaRecord, pure). A batch is one send: its records leave in
// one produce request (with other events' sent at the same moment: the port merges
// sends; a request the broker refuses is tried again one event alone per request).
//
// NOTE: into another cluster, at least once: a produce that failed or timed out may have
// been stored; its retry writes the record again (the idempotent producer drops the
// copies of its own retries within one session, not those of a retry tier). Into the
// same cluster, exactly once: kafka-transactions.ts.
import type { Logger } from 'pino';
import type { InboundRecord, OutboundRecord, RecordHeaders, RecordProducer } from '../kafka/index.js';
import { SendTimeoutError } from '../errors.js';
import type { AttemptResult } from './classify.js';
import { timedOut } from './classify.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from './deliver-event.js';
import type { DeliveryCounters } from './delivery-counters.js';
import type { KafkaTarget, PreparedDestination } from './destination-settings.js';
import type { Envelope } from './envelope.js';
import { summarize } from './fan-out.js';
import type { UrlResult } from './fan-out.js';
import type { KafkaTransactions } from './kafka-transactions.js';
import { refusedByRebalance } from './kafka-transactions.js';
import type { RetryOrDeadLetter } from './retry-or-dead-letter.js';
import { HEADER, headerText, headerValue } from '../runtime/headers.js';
import { describeProduceError, isRecordRefused } from './produce-errors.js';

/** The producers of the destinations' clusters (deliverer-service.ts owns them). */
export interface TargetProducers {
  /**
   * The producer for `target`'s cluster, or the error that refuses it (the address guard,
   * `delivery.blockPrivateNetworks`, for another cluster's brokers): no record is sent then.
   */
  of(target: KafkaTarget): Promise<RecordProducer | Error>;
}

export interface KafkaDeliveryOptions {
  destinationId: string;
  producers: TargetProducers;
  /** `delivery.timeout`: how long an acknowledgement may take before the attempt failed (retried). */
  timeoutMs: number;
  counters: DeliveryCounters;
  next: RetryOrDeadLetter;
  logger: Logger;
  /**
   * Exactly once into the same cluster (kafka-transactions.ts): `shared`, the
   * transactions concurrent deliveries share; `alone`, one event's own, for an event
   * whose shared transaction failed. Absent: at least once there too.
   */
  transactions?: { shared: KafkaTransactions; alone: KafkaTransactions };
}

/** A failed attempt: what it came to and how long it took. */
type Failure = AttemptResult & { durationMs: number };

/** One event as the lane hands it over. */
interface Event {
  record: InboundRecord;
  envelope: Envelope;
}

export class KafkaDelivery {
  constructor(private readonly options: KafkaDeliveryOptions) {}

  /** Writes one event to the topic, or its retry or dead letter; resolves once that is safe in Kafka. */
  async deliver(job: DeliveryJob): Promise<DeliveryResult> {
    const { record, envelope, settings } = job;
    const startedAt = Date.now();
    if (record.value === null || record.value.length === 0) return this.options.next.nothingToSend(record, envelope, startedAt);
    const [failure] = await this.writeEach(settings, [job]);
    if (failure === undefined) {
      this.written(envelope);
      return 'delivered';
    }
    return this.failed(job, settings, failure, startedAt, job.hold === true);
  }

  /** Writes a batch's events in one produce request; each event's outcome, in the batch's order. */
  async deliverBatch(job: BatchJob): Promise<PromiseSettledResult<DeliveryResult>[]> {
    const { events, settings } = job;
    const startedAt = Date.now();
    const { next, counters } = this.options;
    const sendable = events.filter(({ record }) => record.value !== null && record.value.length > 0);
    let failures: (Failure | undefined)[] = [];
    if (sendable.length > 0) {
      failures = await this.writeEach(settings, sendable);
      counters.batchSent(sendable.length);
    }
    let at = 0;
    const outcomes = events.map(({ record, envelope }): Promise<DeliveryResult> => {
      if (record.value === null || record.value.length === 0) return next.nothingToSend(record, envelope, startedAt);
      const failure = failures[at++];
      if (failure !== undefined) return this.failed({ record, envelope }, settings, failure, startedAt, job.hold === true);
      this.written(envelope);
      return Promise.resolve('delivered');
    });
    return Promise.allSettled(outcomes);
  }

  /**
   * Writes the events (one request, or one transaction), and what each came to: undefined
   * once written. NOTE: a request the broker refused, or a transaction that failed, may
   * have failed for another event's record (one too large for the topic; sends are
   * merged, transactions shared): each event is then tried again alone at once, as a 413
   * splits a webhook batch, and what fails alone is its own failure.
   */
  private async writeEach(settings: PreparedDestination, events: readonly Event[]): Promise<(Failure | undefined)[]> {
    const target = settings.kafka;
    const { transactions } = this.options;
    if (target !== undefined && target.cluster === undefined && transactions !== undefined) {
      const started = performance.now();
      const took = () => performance.now() - started;
      const failure = await this.writeInTransaction(transactions.shared, target, events, took);
      if (failure === undefined) return events.map(() => undefined);
      return Promise.all(events.map((event) => this.writeInTransaction(transactions.alone, target, [event], took)));
    }
    const failure = await this.write(settings, events);
    if (!refused(failure)) return events.map(() => failure);
    return Promise.all(events.map((event) => this.write(settings, [event], true)));
  }

  /** Sends the events' records; undefined once acknowledged, else what the attempt came to. */
  private async write(settings: PreparedDestination, events: readonly Event[], alone = false): Promise<Failure | undefined> {
    const target = settings.kafka;
    const started = performance.now();
    const took = () => performance.now() - started;
    // Settings of another type mean a reload changed the destination's type under a running lane: the lane is replaced.
    if (target === undefined) return { outcome: 'network', verdict: 'retryable', reason: `destination ${settings.id} is not of type kafka any more`, durationMs: 0 };
    const producer = await this.options.producers.of(target);
    if (producer instanceof Error) return { outcome: 'blocked', verdict: 'permanent', reason: producer.message, durationMs: took() };
    const messages = events.map(({ record, envelope }) => kafkaRecord(record, envelope, target, this.options.destinationId));
    try {
      await producer.send([{ topic: target.topic, messages }], alone ? { timeoutMs: this.options.timeoutMs, alone } : { timeoutMs: this.options.timeoutMs });
      this.options.counters.requestTook(took());
      return undefined;
    } catch (error) {
      const durationMs = took();
      this.options.counters.requestTook(durationMs);
      return { ...produceFailure(error, this.options.timeoutMs, target.topic), durationMs };
    }
  }

  /**
   * The same cluster, exactly once: the records and the offsets of their delivery records
   * in one transaction. NOTE: a transaction that failed wrote nothing; its events go
   * through the retry tiers as any failed produce. A fenced member, or one between
   * generations, throws instead: the lane leaves the events unfinished, for the
   * partition's owner to write.
   */
  private async writeInTransaction(
    transactions: KafkaTransactions,
    target: KafkaTarget,
    events: readonly Event[],
    took: () => number,
  ): Promise<Failure | undefined> {
    const messages = events.map(({ record, envelope }) => kafkaRecord(record, envelope, target, this.options.destinationId));
    try {
      await transactions.write([{ topic: target.topic, messages }], events.map(({ record }) => record));
      this.options.counters.requestTook(took());
      return undefined;
    } catch (error) {
      if (refusedByRebalance(error)) throw error;
      const durationMs = took();
      this.options.counters.requestTook(durationMs);
      return { ...produceFailure(error, this.options.timeoutMs, target.topic), durationMs };
    }
  }

  /**
   * An event written: delivered. NOTE: counted as a `2xx` attempt too, as the
   * acknowledged write it is: automatic disabling reads a destination's successes
   * there (src/lifecycle/lifecycle-service.ts), and a Kafka destination has no other.
   */
  private written(envelope: Envelope): void {
    this.options.counters.attempt('2xx');
    this.options.counters.eventDelivered(envelope.receivedAtMs);
  }

  private failed(event: Event, settings: PreparedDestination, result: Failure, startedAt: number, hold: boolean): Promise<DeliveryResult> {
    const { record, envelope } = event;
    this.options.counters.attempt(result.outcome);
    const results: UrlResult[] = [{ index: 0, result }];
    const summary = summarize(results, settings.stopOn);
    return this.options.next.afterFailure({ record, envelope, settings, firstAttemptAtMs: envelope.firstAttemptAtMs ?? startedAt, attemptedAtMs: startedAt, results, summary }, hold);
  }
}

/** Whether the broker refused the records of a request (not the address guard). */
function refused(failure: AttemptResult | undefined): boolean {
  return failure !== undefined && failure.verdict === 'permanent' && failure.outcome !== 'blocked';
}

/**
 * What a failed produce came to: records the broker refuses (too large, invalid) are
 * permanent (a dead letter at once); everything else (no leader, the topic missing, a
 * broker away, no acknowledgement in time, not authorized yet) goes through the retry
 * tiers, then to the dead letters when the window ends.
 */
export function produceFailure(error: unknown, timeoutMs: number, topic: string): AttemptResult {
  if (error instanceof SendTimeoutError) return { ...timedOut(timeoutMs), reason: `no acknowledgement from Kafka within ${timeoutMs} ms (topic ${topic})` };
  const reason = `produce to topic ${topic} failed: ${describeProduceError(error)}`;
  return { outcome: 'network', verdict: isRecordRefused(error) ? 'permanent' : 'retryable', reason };
}

/**
 * The record a delivery becomes in the target topic. Pure.
 * - key: `userId`: the delivery record's own key (the userId, else the anonymousId);
 *   `messageId`: the `message-id` header; `none`: no key (the producer spreads them).
 * - value: `body`: the delivery record's value, the bytes a webhook would get;
 *   `call`: `{"type","messageId","source","destination","receivedAt"?,"call":<the body>}`.
 * - headers: the destination's static ones, then `message-id`, `source-id`, `type` and
 *   `traceparent` (each when known).
 */
export function kafkaRecord(record: InboundRecord, envelope: Envelope, target: KafkaTarget, destinationId: string): OutboundRecord {
  const body = record.value ?? Buffer.alloc(0);
  const messageId = headerValue(record.headers, HEADER.messageId);
  const sourceId = headerValue(record.headers, HEADER.sourceId);
  const type = headerValue(record.headers, HEADER.type) ?? typeOfBody(body);
  const headers: RecordHeaders = { ...target.headers };
  if (messageId !== undefined) headers[HEADER.messageId] = messageId;
  if (sourceId !== undefined) headers[HEADER.sourceId] = sourceId;
  if (type !== undefined) headers[HEADER.type] = type;
  if (envelope.traceparent !== undefined) headers[HEADER.traceparent] = envelope.traceparent;
  const key = target.key === 'userId' ? record.key : target.key === 'messageId' ? (messageId ?? null) : null;
  const value = target.value === 'body' ? body : callValue(body, record, envelope, destinationId, type);
  return { key, value, headers };
}

/**
 * `value: call`: the call as routed: which source it came from, which destination it
 * was routed to, when it was received, and the call itself (the body as the
 * destination's shaping left it), spliced in as it is.
 */
function callValue(body: Buffer, record: InboundRecord, envelope: Envelope, destinationId: string, type: string | Buffer | undefined): Buffer {
  const text = (value: string | Buffer | undefined) => (value === undefined ? undefined : typeof value === 'string' ? value : value.toString('utf8'));
  const head: Record<string, string | undefined> = {
    type: text(type),
    messageId: headerText(record.headers, HEADER.messageId),
    source: headerText(record.headers, HEADER.sourceId),
    destination: destinationId,
    receivedAt: envelope.receivedAtMs === undefined ? undefined : new Date(envelope.receivedAtMs).toISOString(),
  };
  const opening = JSON.stringify(head);
  // NOTE: the body is JSON as the router wrote it; bytes that are not (a producer writing deliveries by hand) go as a string.
  const call = isJsonContainer(body) ? body : Buffer.from(JSON.stringify(body.toString('utf8')), 'utf8');
  return Buffer.concat([Buffer.from(opening.length > 2 ? `${opening.slice(0, -1)},"call":` : '{"call":', 'utf8'), call, CLOSE]);
}

const CLOSE = Buffer.from('}', 'utf8');

/** Whether `body` reads as a JSON object or array. */
function isJsonContainer(body: Buffer): boolean {
  const first = body[0];
  if (first !== 0x7b && first !== 0x5b) return false;
  try {
    JSON.parse(body.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

/** The `type` of a body (a call the router routed without a `type` header: a deletion, an audience's identify). */
function typeOfBody(body: Buffer): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    const type = typeof parsed === 'object' && parsed !== null ? (parsed as { type?: unknown }).type : undefined;
    return typeof type === 'string' ? type : undefined;
  } catch {
    return undefined;
  }
}
