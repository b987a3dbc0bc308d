// `switchyard router`: consumes `<prefix>calls` and `<prefix>deletions`, writes one
// webhook body per routed destination to `<prefix>deliveries.<id>` (and what it
// cannot use to `<prefix>calls.invalid`), and commits a batch's offsets only after
// every record it wrote for that batch is acknowledged.
import type { AudienceHook, AudienceEventOut } from '../audiences/router-hook.js';
import type { PendingPair } from '../audiences/seen-cache.js';
import type { Config } from '../config/schema.js';
import { HEADER, commitUntilDone, createProducer, ensureTopics, headerText, topicNames } from '../kafka/index.js';
import type { Admin, Consumer, EachBatchPayload, Producer, TopicMessages } from '../kafka/index.js';
import { startLagSampler } from '../kafka/lag.js';
import type { LagSampler } from '../kafka/lag.js';
import { SpanKind, endSpan, formatTraceparent, startHopSpan, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop, runAll } from '../runtime/service.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { invalidRecord } from './invalid-records.js';
import type { InboundRecord, InvalidOutcome } from './invalid-records.js';
import { OutgoingBatch, commitOffset, recordBytes, MAX_TOPIC_BYTES_PER_SEND } from './outgoing-batch.js';
import { planCall } from './plan-call.js';
import type { RoutedCall } from './plan-call.js';
import { planDeletion } from './plan-deletion.js';
import type { PlannedDeletion } from './plan-deletion.js';
import { RouterTally } from './router-tally.js';
import { compileRoutingTable, routerTopicSpecs } from './routing-table.js';
import type { RoutingTable } from './routing-table.js';

/**
 * Called for every deletion request once its delete bodies are acknowledged and
 * before its offset is committed, so a crash in between calls it again: it must be
 * idempotent. (Audience state erasure plugs in here.) A rejection fails the batch,
 * which is then retried.
 */
export type DeletionHook = (userId: string, sourceIds: readonly string[]) => Promise<void> | void;

/** Consumer and send settings; the defaults suit production, the benchmark shares them with its baseline. */
export interface RouterTuning {
  /** kafkajs `maxBytesPerPartition`: how much one fetch takes from one partition. */
  maxBytesPerPartition: number;
  /** kafkajs `maxBytes`: how much one fetch takes in all. */
  maxBytes: number;
  /** kafkajs `maxWaitTimeInMs`: how long an idle fetch waits on the broker; also bounds how long stop() waits for it. */
  maxWaitTimeInMs: number;
  /** kafkajs `partitionsConsumedConcurrently`. */
  partitionsConsumedConcurrently: number;
  /** Cap on the bytes one send writes to one topic (see MAX_TOPIC_BYTES_PER_SEND). */
  maxTopicBytesPerSend: number;
  lagIntervalMs: number;
}

export const ROUTER_TUNING: RouterTuning = {
  // NOTE: a fetch of 512 KiB per partition gives sends of a few hundred calls: enough
  // to amortise the round trip, small enough that one batch's output (three or more
  // copies of it) fits one send under the per-topic cap.
  maxBytesPerPartition: 512 * 1024,
  maxBytes: 10 * 1024 * 1024,
  maxWaitTimeInMs: 1_000,
  // NOTE: three partitions' batches at once, so one batch is routed while another waits
  // for its acks and commit (each partition's batches still run one after the other, in
  // order). Measured with `npm run bench -- route`: 1 → 3 cut the router's time for
  // 100,000 calls from 9.3 s to 8.0 s; the gain comes from overlapping, so more adds
  // little on two cores, and each batch in hand holds its input and its output in memory.
  // The price: a router killed mid-way routes up to three uncommitted batches again
  // instead of one, so more duplicates after a SIGKILL (chaos full profile, same seed:
  // 1.13 % of deliveries duplicated at 1, 1.82 % at 3; nothing lost either way).
  partitionsConsumedConcurrently: 3,
  maxTopicBytesPerSend: MAX_TOPIC_BYTES_PER_SEND,
  lagIntervalMs: 15_000,
};

export interface RouterDeps extends RoleDeps {
  onDeletion?: DeletionHook;
  /**
   * AUDIENCES HOOK (src/audiences/router-hook.ts): a record to write for each valid
   * call (its audience record, or a `seen` record for a new user-source pair), sent
   * with the call's deliveries, so it is acknowledged before the offset is committed;
   * and the hand-over of deletion requests without `sourceIds` to the audience
   * processor, which knows the sources that have seen the user. Without it, such a
   * request goes to every source's destinations.
   */
  audiences?: AudienceHook;
  tuning?: Partial<RouterTuning>;
}

/**
 * The span of one call (tracing on): a child of the call's `traceparent` header, and
 * the parent of its deliveries: its context replaces the `traceparent` of the
 * delivery headers (one object per call, shared by its destinations' records).
 */
function startCallSpan(routed: RoutedCall, topic: string): Span | undefined {
  if (!tracingActive()) return undefined;
  const span = startHopSpan(`route ${routed.type}`, SpanKind.CONSUMER, headerText(routed.headers, HEADER.traceparent), {
    'messaging.system': 'kafka',
    'messaging.operation.type': 'process',
    'messaging.destination.name': topic,
    'messaging.destination.partition.id': String(routed.origin.partition),
    'messaging.kafka.offset': Number(routed.origin.offset),
    'messaging.message.id': routed.messageId,
    'switchyard.source': routed.source.id,
    'switchyard.destinations': routed.decisions.flatMap((d) => (d.routed ? [d.target.id] : [])),
  });
  if (span !== undefined) routed.headers[HEADER.traceparent] = Buffer.from(formatTraceparent(span.spanContext()), 'latin1');
  return span;
}

/** The router's consumer group: `<clientId>-router`. */
export function routerGroupId(config: Config): string {
  return `${config.kafka.clientId}-router`;
}

export function createRouterService(deps: RouterDeps): Service {
  const { kafka, metrics } = deps;
  const logger = deps.logger.child({ component: 'router' });
  const tuning: RouterTuning = { ...ROUTER_TUNING, ...deps.tuning };
  // NOTE: topic names and the group come from the config at construction. A reload
  // that changes `kafka` is refused below (logged): moving a running consumer to
  // other topics is a restart's job.
  const initial = deps.config.current();
  const names = topicNames(initial.kafka.topicPrefix);
  const groupId = routerGroupId(initial);

  let admin: Admin | undefined;
  let producer: Producer | undefined;
  let consumer: Consumer | undefined;
  let lag: LagSampler | undefined;
  let unsubscribe: (() => void) | undefined;
  let started = false;
  let joined = false;
  let stopping = false;
  let dead: string | undefined;

  // --- topics ----------------------------------------------------------------
  const ensured = new Set<string>();
  let ensuring: Promise<void> = Promise.resolve();
  /** Creates the topics `config` needs that this process has not seen yet; serialized. */
  const ensureTopicsFor = (config: Config): Promise<void> => {
    const run = ensuring.then(async () => {
      const missing = routerTopicSpecs(config, names).filter((spec) => !ensured.has(spec.topic));
      if (missing.length === 0 || !admin) return;
      const created = await ensureTopics(admin, missing, {
        partitions: config.kafka.partitions,
        replicationFactor: config.kafka.replicationFactor,
      });
      for (const spec of missing) ensured.add(spec.topic);
      if (created.length > 0) logger.info({ topics: created }, `created ${created.length} topic(s)`);
    });
    ensuring = run.catch(() => undefined);
    return run;
  };

  let table: RoutingTable | undefined;
  /**
   * The routing table for the config in force now. Read per batch, so a reload
   * applies from the next batch; its topics exist before anything is routed to them.
   */
  const routingTable = async (): Promise<RoutingTable> => {
    const config = deps.config.current();
    if (table?.config !== config) {
      await ensureTopicsFor(config);
      table = compileRoutingTable(config, names);
    }
    return table;
  };

  // --- sending ---------------------------------------------------------------
  /**
   * sendBatch with acks=all on the role's producer (not idempotent: src/kafka/client.ts).
   * A failed send fails the batch, which kafkajs then consumes again: records already
   * written may be written twice, none is lost.
   */
  const send = async (topicMessages: TopicMessages[]): Promise<void> => {
    await producer!.sendBatch({ topicMessages, acks: -1 });
  };

  // --- batches ---------------------------------------------------------------
  const handleBatch = async (payload: EachBatchPayload): Promise<void> => {
    const { batch } = payload;
    const last = batch.messages[batch.messages.length - 1];
    if (last === undefined || payload.isStale()) return;
    const routing = await routingTable();
    const isDeletions = batch.topic === names.deletions;
    const out = new OutgoingBatch(tuning.maxTopicBytesPerSend);
    const tally = new RouterTally();
    const invalidSeen = new Map<string, { count: number; offset: string; error: string }>();
    const afterSend: PlannedDeletion[] = [];
    /** The `seen` pairs in `out`: reported to the audience hook once acknowledged (or abandoned). */
    const pairs: PendingPair[] = [];
    let pendingThrough: string | undefined;
    let doneThrough: string | undefined;
    /** Spans of the calls waiting in `out` (tracing on): they end when their send is acknowledged. */
    const spans: Span[] = [];

    // NOTE: the order here is the no-loss guarantee: send, wait for the acks, and
    // only then mark the offsets done. The commit follows at the end of the batch.
    const flush = async (): Promise<void> => {
      if (pendingThrough === undefined) return;
      if (out.size > 0) await send(out.topicMessages());
      for (const span of spans) span.end();
      spans.length = 0;
      deps.audiences?.acknowledged(pairs);
      pairs.length = 0;
      tally.applyTo(metrics);
      for (const deletion of afterSend) {
        metrics.deletions.inc({ result: deletion.targets.length > 0 ? 'sent' : 'no_affected_source' });
        await deps.onDeletion?.(deletion.userId, deletion.sourceIds);
      }
      afterSend.length = 0;
      out.clear();
      logInvalid(batch.topic, batch.partition, invalidSeen);
      payload.resolveOffset(pendingThrough);
      doneThrough = pendingThrough;
      pendingThrough = undefined;
      // kafkajs has no background heartbeat: a long batch must send its own.
      await payload.heartbeat();
    };

    const addInvalid = async (record: InboundRecord, outcome: InvalidOutcome): Promise<void> => {
      const message = invalidRecord(record, outcome.error);
      const bytes = recordBytes(record.key, record.value, message.headers);
      if (!out.fits(names.callsInvalid, bytes)) await flush();
      out.add(names.callsInvalid, message, bytes);
      tally.recordInvalid(outcome.reason);
      const seen = invalidSeen.get(outcome.reason);
      if (seen) seen.count += 1;
      else invalidSeen.set(outcome.reason, { count: 1, offset: record.offset, error: outcome.error });
      if (isDeletions) {
        logger.error(
          { topic: record.topic, partition: record.partition, offset: record.offset, reason: outcome.reason, error: outcome.error },
          `deletion request not handled, kept in ${names.callsInvalid}: ${outcome.error}`,
        );
      }
    };

    const addCall = async (routed: RoutedCall): Promise<void> => {
      const { body } = routed;
      // AUDIENCES HOOK: the call's audience record goes into the same send as its deliveries.
      const audience = deps.audiences?.event(routed);
      const audienceBytes = audience ? recordBytes(audience.message.key, audience.message.value, undefined) : 0;
      const bytes = body !== null ? recordBytes(routed.key, body, routed.headers) : 0;
      let fits = audience === undefined || out.fits(audience.topic, audienceBytes);
      if (body !== null) for (const d of routed.decisions) if (d.routed && !out.fits(d.target.topic, bytes)) fits = false;
      if (!fits) {
        // NOTE: the pair this call claimed is in no batch yet: a failed flush must hand
        // it back too, or it stays pending and is never written.
        await flush().catch((error: unknown) => {
          if (audience?.pair !== undefined) deps.audiences?.abandoned([audience.pair]);
          throw error;
        });
      }
      const span = startCallSpan(routed, batch.topic);
      if (span !== undefined) spans.push(span);
      if (body !== null) {
        // Every destination gets the same record (key, body, headers, timestamp): one render.
        const delivery = { key: routed.key, value: body, headers: routed.headers, timestamp: routed.timestamp };
        for (const d of routed.decisions) {
          if (d.routed) out.add(d.target.topic, delivery, bytes);
        }
      }
      if (audience) {
        out.add(audience.topic, audience.message, audienceBytes);
        if (audience.pair !== undefined) pairs.push(audience.pair);
      }
      tally.callReceived(routed.source.id, routed.type);
      for (const d of routed.decisions) {
        if (d.routed) tally.eventRouted(routed.source.id, d.target.id);
        else tally.eventFiltered(routed.source.id, d.target.id, d.reason);
      }
    };

    /** A request without `sourceIds`: the audience processor sends it to the sources that have seen the user. */
    const handOverDeletion = async (record: InboundRecord, deletion: PlannedDeletion, hook: AudienceHook): Promise<void> => {
      const handed: AudienceEventOut = hook.deletion(deletion.userId, deletion.timestampMs);
      const bytes = recordBytes(handed.message.key, handed.message.value, undefined);
      if (!out.fits(handed.topic, bytes)) await flush();
      out.add(handed.topic, handed.message, bytes);
      logger.info(
        { partition: record.partition, offset: record.offset },
        'deletion request without sourceIds: handed to the audience processor, which sends it to the sources that have seen the user',
      );
    };

    const addDeletion = async (record: InboundRecord, deletion: PlannedDeletion): Promise<void> => {
      if (!deletion.named && deps.audiences !== undefined) return handOverDeletion(record, deletion, deps.audiences);
      let fits = true;
      const sizes = deletion.targets.map((t) => recordBytes(deletion.key, deletion.body, t.headers));
      deletion.targets.forEach((t, i) => {
        if (!out.fits(t.target.topic, sizes[i]!)) fits = false;
      });
      if (!fits) await flush();
      deletion.targets.forEach((t, i) => {
        out.add(t.target.topic, { key: deletion.key, value: deletion.body, headers: t.headers }, sizes[i]!);
        tally.eventRouted(t.sourceId, t.target.id);
      });
      afterSend.push(deletion);
      logger.info(
        { partition: record.partition, offset: record.offset, sourceIds: deletion.sourceIds, destinations: deletion.targets.map((t) => t.target.id) },
        `deletion request: delete sent to ${deletion.targets.length} destination(s)`,
      );
    };

    try {
      for (const message of batch.messages) {
        const record: InboundRecord = {
          topic: batch.topic,
          partition: batch.partition,
          offset: message.offset,
          timestamp: message.timestamp,
          key: message.key,
          value: message.value,
          headers: message.headers,
        };
        const outcome = isDeletions ? planDeletion(record, routing) : planCall(record, routing);
        if (outcome.kind === 'invalid') await addInvalid(record, outcome);
        else if (outcome.kind === 'routed') await addCall(outcome);
        else await addDeletion(record, outcome);
        pendingThrough = message.offset;
      }
      await flush();
      if (doneThrough !== undefined) {
        const offsets = {
          topics: [
            {
              topic: batch.topic,
              partitions: [{ partition: batch.partition, offset: commitOffset(doneThrough, last.offset, batch.lastOffset()) }],
            },
          ],
        };
        // NOTE: retried while the partition is ours: the records are resolved, so a commit
        // lost here would not come back while the partition is quiet (src/kafka/commit.ts).
        await commitUntilDone(() => payload.commitOffsetsIfNecessary(offsets), {
          stillOwned: () => !stopping && payload.isRunning() && !payload.isStale(),
          logger,
          what: `${batch.topic} partition ${batch.partition}`,
        });
      }
    } catch (error) {
      for (const span of spans) endSpan(span, error);
      deps.audiences?.abandoned(pairs);
      // Nothing of this batch past `doneThrough` is resolved: kafkajs fetches it again.
      logger.warn(
        { err: error, topic: batch.topic, partition: batch.partition, firstOffset: batch.firstOffset(), doneThrough },
        'batch not finished; it will be consumed again (records already written may be written twice)',
      );
      throw error;
    }
  };

  const logInvalid = (topic: string, partition: number, seen: Map<string, { count: number; offset: string; error: string }>) => {
    if (topic === names.deletions) {
      seen.clear();
      return;
    }
    for (const [reason, { count, offset, error }] of seen) {
      logger.warn(
        { reason, count, topic, partition, offset, error },
        `${count} call(s) kept in ${names.callsInvalid} (reason ${reason}); the first, at offset ${offset}: ${error}`,
      );
    }
    seen.clear();
  };

  // --- lifecycle ---------------------------------------------------------------
  const onConfigChange = (next: Config, previous: Config) => {
    if (JSON.stringify(next.kafka) !== JSON.stringify(previous.kafka)) {
      logger.warn('kafka settings changed in the config; the router keeps its current ones until it is restarted');
    }
    logger.info(
      { sources: next.sources.length, destinations: next.destinations.length },
      'routing config reloaded; it applies from the next batch',
    );
    // Eagerly, so a new destination's topics exist before its first call arrives;
    // the batch path ensures them again (and waits) if this failed.
    ensureTopicsFor(next).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not create the topics of the new config yet; will retry with the next batch');
    });
  };

  return {
    name: 'router',

    async start() {
      admin = kafka.admin();
      await admin.connect();
      await ensureTopicsFor(initial);
      producer = createProducer(kafka);
      await producer.connect();

      const c = kafka.consumer({
        groupId,
        allowAutoTopicCreation: false,
        maxBytesPerPartition: tuning.maxBytesPerPartition,
        maxBytes: tuning.maxBytes,
        maxWaitTimeInMs: tuning.maxWaitTimeInMs,
      });
      consumer = c;
      c.on(c.events.GROUP_JOIN, (event) => {
        joined = true;
        const assigned = event.payload.memberAssignment;
        logger.info({ groupId, assignment: assigned }, 'router joined its consumer group');
      });
      c.on(c.events.CRASH, (event) => {
        joined = false;
        const { error, restart } = event.payload;
        if (restart) {
          logger.warn({ err: error }, 'router consumer failed; kafkajs restarts it');
        } else {
          dead = error.message;
          logger.fatal({ err: error }, 'router consumer stopped for good; restart the process');
        }
      });
      c.on(c.events.STOP, () => {
        joined = false;
      });
      await c.connect();
      await c.subscribe({ topics: [names.calls, names.deletions], fromBeginning: true });
      await c.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: tuning.partitionsConsumedConcurrently,
        eachBatch: handleBatch,
      });

      lag = startLagSampler({
        admin,
        metrics,
        logger,
        intervalMs: tuning.lagIntervalMs,
        groups: () => [{ groupId, topics: [names.calls, names.deletions] }],
      });
      unsubscribe = deps.config.onChange(onConfigChange);
      started = true;
      logger.info({ groupId, topics: [names.calls, names.deletions] }, 'router started');
    },

    stop: onceStop(async () => {
      stopping = true;
      // NOTE: consumer.stop() returns once the batch in hand is finished: sent,
      // acknowledged and committed. Only then do the producer and admin go.
      await runAll([
        async () => unsubscribe?.(),
        async () => lag?.stop(),
        async () => consumer?.stop(),
        async () => consumer?.disconnect(),
        async () => producer?.disconnect(),
        async () => admin?.disconnect(),
      ]);
      logger.info('router stopped');
    }),

    health(): ServiceHealth {
      if (dead !== undefined) return { live: false, ready: false, detail: `consumer stopped: ${dead}` };
      const ready = started && joined && !stopping;
      const detail = stopping ? 'stopping' : !started ? 'starting' : !joined ? 'waiting to join the consumer group' : undefined;
      return detail === undefined ? { live: true, ready } : { live: true, ready, detail };
    },
  };
}
