// The docs/metrics.md series one destination's lane writes, bound to its labels once (so
// every series exists from 0): the hot path only increments.
import type { Metrics } from '../observability/metrics.js';
import { OUTCOME_LABELS } from './classify.js';
import type { OutcomeLabel } from './classify.js';
import type { CounterBatch, Incrementable } from '../observability/counter-batch.js';

interface Observable {
  observe(value: number): void;
}

export class DeliveryCounters {
  private readonly attempts: ReadonlyMap<OutcomeLabel, Incrementable>;
  private readonly delivered: Incrementable;
  private readonly retries: Incrementable;
  private readonly deadLetters: Incrementable;
  private readonly requestDuration: Observable;
  private readonly endToEnd: Observable;
  /** Made at the first batch: a destination that does not batch has no series. */
  private batchSizes: Observable | undefined;
  // The two counts every event makes, added when the counters are read (counter-batch.ts).
  private readonly batch: CounterBatch;

  constructor(
    private readonly metrics: Metrics,
    private readonly destinationId: string,
  ) {
    this.batch = metrics.deliveryTally;
    this.attempts = new Map(OUTCOME_LABELS.map((outcome) => [outcome, metrics.deliveryAttempts.labels(destinationId, outcome)]));
    this.delivered = metrics.deliveries.labels(destinationId, 'delivered');
    this.retries = metrics.deliveries.labels(destinationId, 'retry_scheduled');
    this.deadLetters = metrics.deliveries.labels(destinationId, 'dead_lettered');
    this.requestDuration = metrics.deliveryDuration.labels(destinationId);
    this.endToEnd = metrics.endToEnd.labels(destinationId);
  }

  /** One URL's attempt (`switchyard_delivery_attempts_total`). */
  attempt(outcome: OutcomeLabel): void {
    this.batch.add(this.attempts.get(outcome)!);
  }

  /** One request's duration (`switchyard_delivery_duration_seconds`). */
  requestTook(durationMs: number): void {
    this.requestDuration.observe(durationMs / 1000);
  }

  /** An event delivered; `receivedAtMs` feeds the end-to-end histogram. */
  eventDelivered(receivedAtMs: number | undefined): void {
    this.batch.add(this.delivered);
    if (receivedAtMs !== undefined) this.endToEnd.observe(Math.max(0, Date.now() - receivedAtMs) / 1000);
  }

  /** One batch request of `events` events (`switchyard_batch_size`). */
  batchSent(events: number): void {
    this.batchSizes ??= this.metrics.batchSize.labels(this.destinationId);
    this.batchSizes.observe(events);
  }

  retryScheduled(): void {
    this.retries.inc();
  }

  /** One event dead-lettered; its message id goes to the sample of the `message.dead_lettered` event (observability/dead-letter-tap.ts). */
  deadLettered(messageId?: string): void {
    this.deadLetters.inc();
    this.metrics.deadLetterTap.record(this.destinationId, messageId);
  }
}
