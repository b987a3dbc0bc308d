// Where a failed delivery becomes a retry or a dead letter. The attempt's summary
// (fan-out.ts: a 5xx, 408, 429… is worth another try, other failures are not) goes
// through the retry schedule (retry-schedule.ts), and the message is written where it
// goes next: its tier's retry topic with new attempt headers and a due time, or the
// destination's dead-letter topic with the reason per URL (envelope.ts); either carries
// the failed answers so far (attempt-history.ts). The promise resolves once the broker
// acknowledged that write; only then is the message finished.
//
// With `kafka.transactions: true` the write and the deliverer group's offset of the
// message it moves go in one Kafka transaction (kafka-transactions.ts, as a Kafka
// destination's records do): a deliverer killed between the write and its commit
// leaves neither, so the next owner of the partition moves the message once
// (docs/kafka.md#transactions). Without, the write is acknowledged, then committed by
// the lane: a crash in between moves the message twice.
import type { Logger } from 'pino';
import type { InboundRecord, RecordHeaders, RecordProducer } from '../kafka/index.js';
import type { DeliveryCounters } from './delivery-counters.js';
import type { PreparedDestination } from './destination-settings.js';
import type { DestinationTopics } from './destination-topics.js';
import { answersOf, appendAnswers, keptAnswerText, lastAnswerOf, readAnswers } from './attempt-history.js';
import type { AttemptAnswer } from './attempt-history.js';
import type { Envelope } from './envelope.js';
import { deadLetterHeaders, describeFailures, retryHeaders } from './envelope.js';
import type { EventSummary, UrlResult } from './fan-out.js';
import type { KafkaTransactions } from './kafka-transactions.js';
import { refusedByRebalance } from './kafka-transactions.js';
import { planNextStep } from './retry-schedule.js';
import type { RetryPolicy } from './retry-schedule.js';
import { HEADER, headerText } from '../runtime/headers.js';

export interface RetryOrDeadLetterOptions {
  destinationId: string;
  topics: DestinationTopics;
  /** The destination's tiers and window (src/config/retry-policy.ts `retryPolicyOf`). */
  policy: RetryPolicy;
  /** The port's producer (acks=all), shared by the deliverer's lanes. */
  producer: RecordProducer;
  /**
   * `kafka.transactions: true`: each write goes with the offset of the message it moves
   * in one transaction (the deliverer's, shared with its Kafka destinations): `shared`
   * first, `alone` (one write per transaction) for each write whose shared transaction
   * failed. Absent: the producer's write, then the lane's commit.
   */
  transactions?: { shared: KafkaTransactions; alone: KafkaTransactions };
  counters: DeliveryCounters;
  logger: Logger;
}

/** A delivery message, and what its attempt came to. */
export interface FailedDelivery {
  record: InboundRecord;
  envelope: Envelope;
  settings: PreparedDestination;
  /** The event's first attempt: from the `first-attempt-at` header, else this one's start. */
  firstAttemptAtMs: number;
  /** When this attempt started. */
  attemptedAtMs: number;
  /** Each URL's result of this attempt (its `circuit_open` ones included). */
  results: readonly UrlResult[];
  summary: EventSummary;
}

/** What a write here stands for: a `result` label of `switchyard_deliveries_total`. */
export type NotDelivered = 'retry_scheduled' | 'dead_lettered';

/**
 * A failed event of an ordered destination (`ordering: user`) whose next attempt waits
 * in the lane rather than in a retry tier (docs/webhooks.md#per-user-order): its
 * envelope as the next attempt reads it (attempts made, first attempt, due time).
 * Counted as `retry_scheduled`; nothing is written.
 */
export interface HeldRetry {
  held: Envelope;
}

export function isHeldRetry(result: unknown): result is HeldRetry {
  return typeof result === 'object' && result !== null && 'held' in result;
}

interface DeadLetterStage {
  attemptsMade: number;
  firstAttemptAtMs: number;
  lastAttemptAtMs: number;
  error: string;
  receivedAtMs: number | undefined;
  answers?: readonly AttemptAnswer[];
}

export class RetryOrDeadLetter {
  private readonly policy: RetryPolicy;
  /** The retry topic of each configured tier (leftover tiers are read, never written). */
  private readonly topicOfTier: ReadonlyMap<string, string>;

  constructor(private readonly options: RetryOrDeadLetterOptions) {
    const { policy, topics } = options;
    this.policy = { tiers: policy.tiers, maxRetryWindowMs: policy.maxRetryWindowMs };
    this.topicOfTier = new Map(topics.retries.filter((r) => !r.leftover).map((r) => [r.tier.name, r.topic]));
  }

  /**
   * Schedules the next attempt or dead-letters the event; resolves once that is in
   * Kafka. With `hold` (an ordered destination), a next attempt is not written to a
   * retry tier but returned, to wait in the lane.
   */
  async afterFailure(failed: FailedDelivery, hold = false): Promise<NotDelivered | HeldRetry> {
    const { envelope, summary, settings, firstAttemptAtMs } = failed;
    const attemptsMade = envelope.attemptsMade + 1;
    const lastAttemptAtMs = Date.now();
    const answers = appendAnswers(
      envelope.answers ?? readAnswers(failed.record.headers),
      answersOf(
        failed.results,
        failed.attemptedAtMs,
        settings.kafka !== undefined ? [settings.kafka.origin] : settings.targets.map((t) => t.target.origin),
      ),
    );
    const error = describeFailures(summary.failures.map((f) => ({ url: settings.printableUrls[f.index] ?? '?', reason: reasonOf(f, failed.results, answers) })));
    const step = planNextStep(
      { attemptsMade, firstAttemptAtMs, nowMs: lastAttemptAtMs, worthRetrying: summary.worthRetrying, ...(summary.retryAfterMs === undefined ? {} : { retryAfterMs: summary.retryAfterMs }) },
      this.policy,
    );
    if (step.kind === 'retry' && hold) {
      this.options.counters.retryScheduled();
      this.options.logger.debug({ attempt: attemptsMade, dueInMs: step.dueAtMs - lastAttemptAtMs, error }, 'not delivered; the next attempt waits in the lane, holding back the user\'s later events');
      return { held: { ...envelope, attemptsMade, firstAttemptAtMs, dueAtMs: step.dueAtMs, answers } };
    }
    if (step.kind === 'retry') {
      const headers = retryHeaders(failed.record.headers, { attemptsMade, firstAttemptAtMs, dueAtMs: step.dueAtMs, error, receivedAtMs: envelope.receivedAtMs, answers });
      await this.write(this.topicOfTier.get(step.tier.name)!, failed.record, headers);
      this.options.counters.retryScheduled();
      this.options.logger.debug({ attempt: attemptsMade, tier: step.tier.name, dueInMs: step.dueAtMs - lastAttemptAtMs, error }, 'not delivered; retry scheduled');
      return 'retry_scheduled';
    }
    await this.writeDeadLetter(failed.record, { attemptsMade, firstAttemptAtMs, lastAttemptAtMs, error, receivedAtMs: envelope.receivedAtMs, answers });
    const { destinationId } = this.options;
    this.options.logger.warn(
      { messageId: headerText(failed.record.headers, HEADER.messageId), topic: failed.record.topic, partition: failed.record.partition, offset: failed.record.offset, attempt: attemptsMade, why: step.why, error },
      step.why === 'window'
        ? `event dead-lettered: not delivered within the retry window (${attemptsMade} attempts); replay it with \`switchyard replay --destination ${destinationId}\` once the receiver works`
        : `event dead-lettered: no URL can accept it as sent (${error}); fix the receiver or the config, then replay it`,
    );
    return 'dead_lettered';
  }

  /** A message without a body (a tombstone?): nothing to send, so it goes where operators look, with the reason. */
  async nothingToSend(record: InboundRecord, envelope: Envelope, startedAtMs: number): Promise<NotDelivered> {
    const { topic, partition, offset } = record;
    await this.writeDeadLetter(record, {
      attemptsMade: envelope.attemptsMade,
      firstAttemptAtMs: envelope.firstAttemptAtMs ?? startedAtMs,
      lastAttemptAtMs: startedAtMs,
      receivedAtMs: envelope.receivedAtMs,
      answers: envelope.answers ?? readAnswers(record.headers),
      error: `message at ${topic} offset ${offset} has no value (a tombstone?): a delivery message must carry the webhook body; nothing was sent`,
    });
    this.options.logger.warn(
      { messageId: headerText(record.headers, HEADER.messageId), topic, partition, offset },
      'event dead-lettered: the delivery message has no value (a tombstone?), so nothing was sent',
    );
    return 'dead_lettered';
  }

  private async writeDeadLetter(record: InboundRecord, stage: DeadLetterStage): Promise<void> {
    await this.write(this.options.topics.dlq, record, deadLetterHeaders(record.headers, stage));
    this.options.counters.deadLettered(headerText(record.headers, HEADER.messageId));
  }

  /**
   * The record's key and body, unchanged, with new headers; resolves once acknowledged.
   * NOTE: one send per record is fine: a destination that fails for everything writes
   * one retry per event, and the port's producer merges the sends that wait behind
   * those in flight into one request (producer.ts), so the retry path does not become
   * a request per event.
   */
  private async write(topic: string, record: InboundRecord, headers: RecordHeaders): Promise<void> {
    const records = [{ topic, messages: [{ key: record.key, value: record.value, headers }] }];
    const { transactions } = this.options;
    if (transactions === undefined) {
      await this.options.producer.send(records);
      return;
    }
    // NOTE: a shared transaction fails for every write in it (one record too large for
    // its topic, a broker hiccup): each is tried again alone at once, so only a write at
    // fault fails, as a Kafka destination's events are (kafka-sender.ts). A fenced
    // member, or one between generations, fails at once: its partitions are another
    // member's now, which moves the message (the lane leaves it unfinished).
    try {
      await transactions.shared.write(records, [record]);
    } catch (error) {
      if (refusedByRebalance(error)) throw error;
      this.options.logger.debug({ err: error, topic: record.topic, partition: record.partition, offset: record.offset }, 'a shared transaction of retries and dead letters failed; writing this one in a transaction of its own');
      await transactions.alone.write(records, [record]);
    }
  }
}

/**
 * A failed URL's reason in the `error` header. One its circuit skipped this time got no
 * request: its reason is what it answered last, from the history, and when; no breaker
 * wording, no timer ("next probe in 5s" is stale once stored).
 */
function reasonOf(failure: { index: number; reason: string }, results: readonly UrlResult[], answers: readonly AttemptAnswer[]): string {
  const skipped = results.some((r) => r.index === failure.index && r.result.outcome === 'circuit_open');
  if (!skipped) return failure.reason;
  const last = lastAnswerOf(answers, failure.index);
  return last === undefined ? failure.reason : `${keptAnswerText(last)} (its last answer, at ${last.at}; no request this attempt)`;
}
