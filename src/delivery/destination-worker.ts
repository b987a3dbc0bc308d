// One destination's deliveries: a consumer of the Kafka port (its own group) on
// `deliveries.<id>` and its retry tiers, many requests in flight, commits only below
// the oldest unfinished message. One worker per destination makes isolation
// structural: a destination whose URLs all hang fills only its own permits, its own
// connection pool and its own consumer's fetch loop.
//
// The delivery flow, file by file: partition-batch.ts (a fetched batch: due time,
// circuits, rate limit, permits, offsets) → retry-tier-wait.ts (a retry partition
// paused until due) → deliver-event.ts (sign, send to the URLs, count) →
// retry-or-dead-letter.ts (a failure written to a retry tier or the dead letters).
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { KafkaClient, RecordProducer } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import { ConsumerMember } from '../runtime/consumer-member.js';
import { onceStop, runAll } from '../runtime/service.js';
import type { CircuitPolicy } from './circuit-breaker.js';
import { EventDelivery } from './deliver-event.js';
import { DeliveryCounters } from './delivery-counters.js';
import type { PreparedDestination } from './destination-settings.js';
import type { DestinationTopics } from './destination-topics.js';
import { consumedTopics } from './destination-topics.js';
import type { HttpSender } from './http-sender.js';
import { deliverPartitionBatch } from './partition-batch.js';
import type { PartitionBatchDeps } from './partition-batch.js';
import { RatePace } from './rate-pace.js';
import { RetryOrDeadLetter } from './retry-or-dead-letter.js';
import { RetryTierWait } from './retry-tier-wait.js';
import { Semaphore } from './semaphore.js';
import { UrlCircuits } from './url-circuits.js';

export interface DestinationWorkerOptions {
  destinationId: string;
  groupId: string;
  topics: DestinationTopics;
  delivery: Config['delivery'];
  /** How many partitions one topic usually has (`kafka.partitions`): how many batches run at once. */
  partitionsPerTopic: number;
  /** The destination's current settings; undefined once it left the config. */
  settings: () => PreparedDestination | undefined;
  kafka: KafkaClient;
  sender: HttpSender;
  /** The per-URL circuit breaker's thresholds (DESIGN §7 defaults; tests shorten the cool-down). */
  circuitPolicy: CircuitPolicy;
  /** Where retries and dead letters are written (the deliverer's one producer). */
  producer: RecordProducer;
  metrics: Metrics;
  logger: Logger;
}

export interface DestinationWorker {
  readonly destinationId: string;
  readonly groupId: string;
  readonly topics: DestinationTopics;
  start(): Promise<void>;
  /** Stops fetching, lets requests in flight finish (bounded by the timeout), commits, leaves. Idempotent. */
  stop(): Promise<void>;
  /** The consumer joined its group (and has not crashed since). */
  joined(): boolean;
  /** Set when the consumer crashed for good (kafkajs will not restart it). */
  failure(): Error | undefined;
  /** The destination's settings changed (a reload): a URL gone leaves the circuit gauge now, not at the next event. */
  settingsChanged(): void;
}

/** Fetch long-poll: also how late a resumed retry partition may be fetched again. */
const MAX_FETCH_WAIT_MS = 250;
/** While a batch runs, what is done is committed this often (and when it ends). */
const COMMIT_EVERY_MS = 1_000;

export function createDestinationWorker(options: DestinationWorkerOptions): DestinationWorker {
  return new KafkaDestinationWorker(options);
}

class KafkaDestinationWorker implements DestinationWorker {
  readonly destinationId: string;
  readonly groupId: string;
  readonly topics: DestinationTopics;
  private readonly circuits: UrlCircuits;
  private readonly counters: DeliveryCounters;
  private readonly consumer: ConsumerMember;
  private stopping = false;

  constructor(private readonly options: DestinationWorkerOptions) {
    const { destinationId, topics, delivery, metrics } = options;
    this.destinationId = destinationId;
    this.groupId = options.groupId;
    this.topics = topics;
    const logger = options.logger.child({ destination: destinationId });
    const circuits = (this.circuits = new UrlCircuits({ destinationId, policy: options.circuitPolicy, gauge: metrics.circuitState, logger }));
    const counters = (this.counters = new DeliveryCounters(metrics, destinationId));
    const pace = new RatePace(delivery.maxRetryWindowMs);
    const next = new RetryOrDeadLetter({ destinationId, topics, delivery, producer: options.producer, counters, logger });
    const batchDeps: PartitionBatchDeps = {
      settings: options.settings,
      stopping: () => this.stopping,
      slots: new Semaphore(delivery.concurrencyPerDestination),
      circuits,
      pace,
      tierWait: new RetryTierWait(topics, delivery.maxRetryWindowMs),
      events: new EventDelivery({ destinationId, sender: options.sender, circuits, pace, counters, next, logger }),
      logger,
    };
    const subscribed = consumedTopics(topics);
    this.consumer = new ConsumerMember({
      client: options.kafka,
      settings: {
        groupId: this.groupId,
        topics: subscribed,
        fromBeginning: true,
        commit: { kind: 'timer', commitEveryMs: COMMIT_EVERY_MS },
        maxWaitTimeInMs: MAX_FETCH_WAIT_MS,
        partitionsConsumedConcurrently: Math.max(1, subscribed.length * options.partitionsPerTopic),
      },
      handler: (batch) => deliverPartitionBatch(batchDeps, batch),
      label: 'delivery consumer',
      logger,
    });
  }

  async start(): Promise<void> {
    const initial = this.options.settings();
    if (initial !== undefined) this.circuits.follow(initial);
    await this.consumer.start();
  }

  readonly stop = onceStop(async () => {
    this.stopping = true;
    // The consumer's stop ends the partition holds and waits for the running batches,
    // which now start nothing new and wait only for requests in flight (each bounded by
    // delivery.timeout), then commits what finished and leaves the group.
    await runAll([() => this.consumer.stop(), () => this.options.sender.close(), async () => this.counters.flush(), async () => this.circuits.close()]);
  });

  joined(): boolean {
    return this.consumer.joined();
  }

  failure(): Error | undefined {
    return this.consumer.failure();
  }

  settingsChanged(): void {
    const current = this.options.settings();
    if (current !== undefined && !this.stopping) this.circuits.follow(current);
  }
}
