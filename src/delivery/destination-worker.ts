// One destination's deliveries: a kafkajs consumer (its own group) on
// `deliveries.<id>` and its retry tiers, many requests in flight, commits only below
// the oldest unfinished message. One worker per destination makes isolation
// structural: a destination whose URLs all hang fills only its own permits, its own
// connection pool and its own consumer's fetch loop.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { HEADER, commitUntilDone, headerText } from '../kafka/index.js';
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import { SpanKind, endSpan, outgoingTraceparent, startHopSpan, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import { onceStop, runAll } from '../runtime/service.js';
import type { CircuitPolicy } from './circuit-breaker.js';
import { OUTCOME_LABELS } from './classify.js';
import type { PreparedDestination } from './destination-settings.js';
import type { DestinationTopics } from './destination-topics.js';
import { consumedTopics } from './destination-topics.js';
import type { Envelope } from './envelope.js';
import { deadLetterHeaders, describeFailures, readEnvelope, retryHeaders } from './envelope.js';
import { fanOut, summarize } from './fan-out.js';
import type { UrlResult } from './fan-out.js';
import type { HttpSender } from './http-sender.js';
import { CounterBatch } from './counter-batch.js';
import { OffsetTracker } from './offset-tracker.js';
import type { ProduceBatcher } from './produce-batcher.js';
import { planNextStep } from './retry-schedule.js';
import { Semaphore } from './semaphore.js';
import { TokenBucket } from './token-bucket.js';
import { UrlCircuits, countBits } from './url-circuits.js';
import type { Admitted } from './url-circuits.js';

export interface DestinationWorkerOptions {
  destinationId: string;
  groupId: string;
  topics: DestinationTopics;
  delivery: Config['delivery'];
  /** How many partitions one topic usually has (`kafka.partitions`): how many batches run at once. */
  partitionsPerTopic: number;
  /** The destination's current settings; undefined once it left the config. */
  settings: () => PreparedDestination | undefined;
  kafka: Kafka;
  sender: HttpSender;
  /** The per-URL circuit breaker's thresholds (DESIGN §7 defaults; tests shorten the cool-down). */
  circuitPolicy: CircuitPolicy;
  producer: ProduceBatcher;
  metrics: Metrics;
  logger: Logger;
}

/** What became of one event: the `result` label of `switchyard_deliveries_total`. */
type DeliveryResult = 'delivered' | 'retry_scheduled' | 'dead_lettered';

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

/** kafkajs only sends a heartbeat when its interval passed, so calling often is cheap. */
const HEARTBEAT_EVERY_MS = 1_000;
/** Fetch long-poll: also how late a resumed retry partition may be fetched again. */
const MAX_FETCH_WAIT_MS = 250;
/** While waiting for a rate-limit token, how often to look whether to stop. */
const PACE_CHECK_MS = 200;

export function createDestinationWorker(options: DestinationWorkerOptions): DestinationWorker {
  const { destinationId, topics, delivery, sender, producer, metrics } = options;
  const logger = options.logger.child({ destination: destinationId });
  const slots = new Semaphore(delivery.concurrencyPerDestination);
  const tierByTopic = new Map(topics.retries.map((r) => [r.topic, r.tier]));
  const topicOfTier = new Map(topics.retries.filter((r) => !r.leftover).map((r) => [r.tier.name, r.topic]));
  const policy = { tiers: delivery.retryTiers, maxRetryWindowMs: delivery.maxRetryWindowMs };
  const holds = new Set<NodeJS.Timeout>();

  // Metric children bound once (so every series exists from 0): the hot path only increments.
  const attempts = new Map(OUTCOME_LABELS.map((outcome) => [outcome, metrics.deliveryAttempts.labels(destinationId, outcome)]));
  const delivered = metrics.deliveries.labels(destinationId, 'delivered');
  const retryScheduled = metrics.deliveries.labels(destinationId, 'retry_scheduled');
  const deadLettered = metrics.deliveries.labels(destinationId, 'dead_lettered');
  const requestDuration = metrics.deliveryDuration.labels(destinationId);
  const endToEnd = metrics.endToEnd.labels(destinationId);
  // The two counts every event makes, added once per turn of the event loop (counter-batch.ts).
  const counts = new CounterBatch();
  const circuits = new UrlCircuits({ destinationId, policy: options.circuitPolicy, gauge: metrics.circuitState, logger });
  // `settings.rateLimit`, if any: one bucket per worker, new when the limit changes.
  let pacing: TokenBucket | undefined;
  const bucketFor = (settings: PreparedDestination): TokenBucket | undefined => {
    const limit = settings.rateLimit;
    if (limit === undefined) return (pacing = undefined);
    if (pacing?.limit.requestsPerSecond !== limit.requestsPerSecond || pacing.limit.burst !== limit.burst) pacing = new TokenBucket(limit, Date.now(), delivery.maxRetryWindowMs);
    return pacing;
  };

  let consumer: Consumer | undefined;
  let stopping = false;
  let hasJoined = false;
  let crashed: Error | undefined;

  /**
   * Delivers one event and writes what comes next (retry tier or dead letter).
   * Resolves once the outcome is safe in Kafka; rejects when that write failed.
   * `span`: the attempt's span when tracing is on; its context goes out as `traceparent`.
   */
  const processMessage = async (
    topic: string,
    partition: number,
    message: KafkaMessage,
    envelope: Envelope,
    settings: PreparedDestination,
    admitted: Admitted,
    span?: Span,
  ): Promise<DeliveryResult> => {
    const startedAt = Date.now();
    const firstAttemptAtMs = envelope.firstAttemptAtMs ?? startedAt;
    if (envelope.problems.length > 0) {
      logger.warn({ topic, offset: message.offset, problems: envelope.problems }, 'delivery message has unreadable headers; delivering it anyway');
    }
    const body = message.value;
    if (body === null || body.length === 0) {
      circuits.abandon(admitted, startedAt);
      // Nothing to send: keep it where operators look, with the reason.
      await writeDeadLetter(message, {
        attemptsMade: envelope.attemptsMade,
        firstAttemptAtMs,
        lastAttemptAtMs: startedAt,
        receivedAtMs: envelope.receivedAtMs,
        error: `message at ${topic} offset ${message.offset} has no value (a tombstone?): a delivery message must carry the webhook body; nothing was sent`,
      });
      logger.warn({ messageId: headerText(message.headers, HEADER.messageId), topic, partition, offset: message.offset }, 'event dead-lettered: the delivery message has no value (a tombstone?), so nothing was sent');
      return 'dead_lettered';
    }

    const perEvent: Record<string, string> = {};
    settings.sign?.(body, headerText(message.headers, HEADER.messageId), startedAt, perEvent);
    const traceparent = outgoingTraceparent(span, envelope.traceparent);
    if (traceparent !== undefined) perEvent.traceparent = traceparent;
    const results: UrlResult[] = admitted.send === 0 ? [] : await fanOut(sender, settings.targets, body, perEvent, admitted);
    const answeredAt = Date.now();
    circuits.settle(admitted, results, answeredAt);
    if (admitted.skipped !== 0) results.push(...circuits.skippedResults(admitted, answeredAt));
    if (span !== undefined) recordAttempt(span, results);
    for (const { result } of results) {
      if (result.outcome === 'cancelled') continue;
      counts.add(attempts.get(result.outcome)!);
      if (result.outcome === 'circuit_open') continue; // no request, no duration
      requestDuration.observe(result.durationMs / 1000);
      // NOTE: a 429 with Retry-After slows the destination's pace until it has passed.
      if (result.status === 429 && result.retryAfterMs !== undefined) pacing?.slowDown(answeredAt + result.retryAfterMs, answeredAt);
    }
    const summary = summarize(results);
    if (summary.delivered) {
      counts.add(delivered);
      if (envelope.receivedAtMs !== undefined) endToEnd.observe(Math.max(0, Date.now() - envelope.receivedAtMs) / 1000);
      return 'delivered';
    }

    const attemptsMade = envelope.attemptsMade + 1;
    const lastAttemptAtMs = Date.now();
    const error = describeFailures(summary.failures.map((f) => ({ url: settings.printableUrls[f.index] ?? '?', reason: f.reason })));
    const step = planNextStep(
      { attemptsMade, firstAttemptAtMs, nowMs: lastAttemptAtMs, retryable: summary.retryable, ...(summary.retryAfterMs === undefined ? {} : { retryAfterMs: summary.retryAfterMs }) },
      policy,
    );
    if (step.kind === 'retry') {
      const retryTopic = topicOfTier.get(step.tier.name)!;
      await producer.send(retryTopic, {
        key: message.key,
        value: body,
        headers: retryHeaders(message.headers, { attemptsMade, firstAttemptAtMs, dueAtMs: step.dueAtMs, receivedAtMs: envelope.receivedAtMs }),
      });
      retryScheduled.inc();
      logger.debug({ attempt: attemptsMade, tier: step.tier.name, dueInMs: step.dueAtMs - lastAttemptAtMs, error }, 'not delivered; retry scheduled');
      return 'retry_scheduled';
    }
    await writeDeadLetter(message, { attemptsMade, firstAttemptAtMs, lastAttemptAtMs, error, receivedAtMs: envelope.receivedAtMs });
    logger.warn(
      { messageId: headerText(message.headers, HEADER.messageId), topic, partition, offset: message.offset, attempt: attemptsMade, why: step.why, error },
      step.why === 'window'
        ? `event dead-lettered: not delivered within the retry window (${attemptsMade} attempts); replay it with \`switchyard replay --destination ${destinationId}\` once the receiver works`
        : `event dead-lettered: no URL can accept it as sent (${error}); fix the receiver or the config, then replay it`,
    );
    return 'dead_lettered';
  };

  /**
   * processMessage inside the attempt's span when tracing is on: a child of the
   * delivery record's `traceparent` (the router's span), so the receiver's request
   * joins the caller's trace.
   */
  const deliverEvent = async (
    topic: string,
    partition: number,
    message: KafkaMessage,
    envelope: Envelope,
    settings: PreparedDestination,
    admitted: Admitted,
  ): Promise<DeliveryResult> => {
    if (!tracingActive()) return processMessage(topic, partition, message, envelope, settings, admitted);
    const span = startHopSpan(`deliver ${destinationId}`, SpanKind.CLIENT, envelope.traceparent, {
      'switchyard.destination': destinationId,
      'messaging.message.id': headerText(message.headers, HEADER.messageId),
      'messaging.destination.name': topic,
      'messaging.kafka.offset': Number(message.offset),
      'switchyard.delivery.attempt': envelope.attemptsMade + 1,
    });
    try {
      const result = await processMessage(topic, partition, message, envelope, settings, admitted, span);
      span?.setAttribute('switchyard.delivery.result', result);
      endSpan(span, result === 'delivered' ? undefined : `not delivered: ${result.replace('_', ' ')}`);
      return result;
    } catch (error) {
      endSpan(span, error);
      throw error;
    }
  };

  const writeDeadLetter = async (
    message: KafkaMessage,
    stage: { attemptsMade: number; firstAttemptAtMs: number; lastAttemptAtMs: number; error: string; receivedAtMs: number | undefined },
  ): Promise<void> => {
    await producer.send(topics.dlq, { key: message.key, value: message.value, headers: deadLetterHeaders(message.headers, stage) });
    deadLettered.inc();
  };

  /** Holds a retry partition until its head message is due; other partitions go on. */
  const holdPartition = (pause: () => () => void, waitMs: number) => {
    const resume = pause();
    const timer = setTimeout(() => {
      holds.delete(timer);
      resume();
    }, waitMs);
    holds.add(timer);
  };

  const eachBatch = async ({ batch, resolveOffset, heartbeat, pause, isRunning, isStale, commitOffsetsIfNecessary, uncommittedOffsets }: EachBatchPayload): Promise<void> => {
    const tier = tierByTopic.get(batch.topic);
    const tracker = new OffsetTracker();
    const inFlight = new Set<Promise<void>>();
    let interrupted = false;
    let writeFailure: unknown;
    let resolved: string | undefined;
    const settle = () => {
      const offset = tracker.resolvable();
      if (offset !== undefined && offset !== resolved) {
        resolveOffset(offset);
        resolved = offset;
      }
    };
    // NOTE: progress is resolved and committed once a second while a long batch runs
    // (a slow receiver can hold one for minutes), and once more when it ends (below).
    // Not per message: nothing commits in between.
    const beat = setInterval(() => {
      settle();
      commitOffsetsIfNecessary()
        .then(() => heartbeat())
        .catch((error: unknown) => {
          // A rebalance: finish what runs, start nothing new, let kafkajs rejoin.
          interrupted = true;
          logger.debug({ err: error }, 'heartbeat or commit refused; finishing the batch early');
        });
    }, HEARTBEAT_EVERY_MS);
    const keepGoing = () => !stopping && !interrupted && writeFailure === undefined && isRunning() && !isStale();
    /** Waits `ms` for rate-limit tokens; false when the batch should end instead. */
    const paced = async (ms: number): Promise<boolean> => {
      const until = Date.now() + ms;
      for (let left = ms; left > 0; left = until - Date.now()) {
        await sleep(Math.min(left, PACE_CHECK_MS));
        if (!keepGoing()) return false;
      }
      return true;
    };
    try {
      // NOTE: whether to go on is checked before the first message and after each wait
      // for permits, not per message: stop, a rebalance, a failed write or a seek can
      // only come in while the loop waits (nothing else runs in between), and kafkajs's
      // isStale() costs a JSON.stringify per call.
      const messages = keepGoing() ? batch.messages : [];
      for (const message of messages) {
        const envelope = readEnvelope(message.headers, message.timestamp);
        if (tier !== undefined) {
          // NOTE: a due time is capped so that a wrong header cannot park a partition for longer than a window.
          const waitMs = Math.min((envelope.dueAtMs ?? 0) - Date.now(), delivery.maxRetryWindowMs);
          if (waitMs > 0) {
            holdPartition(pause, waitMs);
            break;
          }
        }
        const settings = options.settings();
        if (settings === undefined) break; // left the config: this worker is being stopped
        const now = Date.now();
        // NOTE: a URL whose circuit is open gets no request, so it takes no permit and no token.
        const admitted = circuits.admit(settings, now);
        const requests = countBits(admitted.send);
        const weight = Math.max(1, requests);
        // NOTE: waiting for a token holds up only this partition of this destination
        // (each destination has its own consumer); the message is not started, so its
        // offset stays uncommitted and nothing is lost if the batch ends here.
        const waitMs = requests === 0 ? 0 : (bucketFor(settings)?.reserve(requests, now) ?? 0);
        if (waitMs > 0 && !(await paced(waitMs))) {
          circuits.abandon(admitted, Date.now());
          break;
        }
        // No await while permits are free (it would cost a turn of the event loop per message).
        if (!slots.tryAcquire(weight)) {
          await slots.acquire(weight);
          if (!keepGoing()) {
            slots.release(weight);
            circuits.abandon(admitted, Date.now());
            break;
          }
        }
        const ticket = tracker.start(message.offset);
        const task: Promise<void> = (tracingActive() ? deliverEvent : processMessage)(batch.topic, batch.partition, message, envelope, settings, admitted).then(
          () => {
            slots.release(weight);
            inFlight.delete(task);
            tracker.finish(ticket);
          },
          (error: unknown) => {
            writeFailure ??= error;
            slots.release(weight);
            inFlight.delete(task);
          },
        );
        inFlight.add(task);
      }
      await Promise.all(inFlight);
      settle();
    } finally {
      clearInterval(beat);
    }
    // NOTE: the batch is over once what it finished is committed: a commit lost to a
    // broker restart would stay lost while the partition is quiet (src/kafka/commit.ts).
    await commitUntilDone(() => commitOffsetsIfNecessary(uncommittedOffsets()), {
      stillOwned: () => !stopping && isRunning() && !isStale(),
      logger,
      what: `${batch.topic} partition ${batch.partition}`,
    });
    if (writeFailure !== undefined) {
      // NOTE: the failed message and everything after it stay unresolved; kafkajs commits
      // what was resolved and fetches again from there (duplicates, never a loss).
      logger.error({ err: writeFailure, topic: batch.topic, partition: batch.partition }, 'could not write a retry or dead letter to Kafka; the unfinished events will be attempted again');
      throw writeFailure;
    }
  };

  const subscribed = consumedTopics(topics);

  return {
    destinationId,
    groupId: options.groupId,
    topics,
    async start() {
      const initial = options.settings();
      if (initial !== undefined) circuits.follow(initial);
      const c = options.kafka.consumer({
        groupId: options.groupId,
        allowAutoTopicCreation: false,
        maxWaitTimeInMs: MAX_FETCH_WAIT_MS,
      });
      consumer = c;
      c.on(c.events.GROUP_JOIN, () => {
        hasJoined = true;
      });
      c.on(c.events.CRASH, (event) => {
        hasJoined = false;
        const { error, restart } = event.payload;
        if (!restart) crashed = error;
        // A crash kafkajs restarts from (a coordinator still loading at start-up) is a warning, as in the router.
        if (restart) logger.warn({ err: error, restart }, 'delivery consumer crashed; kafkajs restarts it');
        else logger.error({ err: error, restart }, 'delivery consumer crashed and will not restart');
      });
      await c.connect();
      await c.subscribe({ topics: subscribed, fromBeginning: true });
      await c.run({
        eachBatchAutoResolve: false,
        autoCommit: true,
        autoCommitInterval: 1_000,
        partitionsConsumedConcurrently: Math.max(1, subscribed.length * options.partitionsPerTopic),
        eachBatch,
      });
    },
    stop: onceStop(async () => {
      stopping = true;
      for (const timer of holds) clearTimeout(timer);
      holds.clear();
      // disconnect() waits for the running batches, which now start nothing new and
      // wait only for requests in flight (each bounded by delivery.timeout), then
      // commits what finished and leaves the group.
      await runAll([async () => consumer?.disconnect(), () => sender.close(), async () => counts.flush(), async () => circuits.close()]);
    }),
    joined: () => hasJoined && crashed === undefined,
    failure: () => crashed,
    settingsChanged() {
      const current = options.settings();
      if (current !== undefined && !stopping) circuits.follow(current);
    },
  };
}
