// One batch of `calls` or `deletions` as the router handles it: each record planned
// (plan-call.ts, plan-deletion.ts), its output gathered in a SendBuffer, sent when the
// next record would not fit and at the end, and marked done once acknowledged.
import { SendBuffer, recordBytes } from '../kafka/index.js';
import type { InboundRecord, RecordProducer } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import { SpanKind, endSpan, formatTraceparent, startHopSpan, tracingActive } from '../observability/tracing.js';
import type { Span } from '../observability/tracing.js';
import type { Logger } from 'pino';
import type { AudienceEventOut, AudienceHook } from './audience-hook.js';
import { invalidRecord } from './invalid-records.js';
import type { InvalidOutcome } from './invalid-records.js';
import type { CallMemory } from './dedupe/call-memory.js';
import { IdSet, hashId } from './dedupe/id-window.js';
import type { IdHash } from './dedupe/id-window.js';
import { planShapedCall } from './plan-call.js';
import type { RoutedCall } from './plan-call.js';
import { planDeletion } from './plan-deletion.js';
import type { PlannedDeletion } from './plan-deletion.js';
import { blockedRecord, violationEventLabel, violationRecord } from './plan-records.js';
import { RouterTally } from './router-tally.js';
import type { RoutingTable } from './routing-table.js';
import type { ShapingErrorLog } from './shaping-errors.js';
import type { RecordBatch } from '../runtime/consumer.js';
import type { TopicNames } from '../runtime/topics.js';
import { HEADER, headerText } from '../runtime/headers.js';

/**
 * Called for every deletion request once its delete bodies are acknowledged and
 * before its offset is committed, so a crash in between calls it again: it must be
 * idempotent. (Audience state erasure plugs in here.) A rejection fails the batch,
 * which is then retried.
 */
export type DeletionHook = (userId: string, sourceIds: readonly string[]) => Promise<void> | void;

/** What every batch of one router shares. */
export interface RouterBatchContext {
  names: TopicNames;
  producer: RecordProducer;
  metrics: Metrics;
  logger: Logger;
  maxTopicBytesPerSend: number;
  /** Where destinations' failing filters and transforms are logged, once a minute each (shared by every batch). */
  shapingErrors: ShapingErrorLog;
  onDeletion?: DeletionHook;
  audiences?: AudienceHook;
  /** The calls routed within `router.dedupeWindow` (absent when it is 0): copies are dropped. */
  dedupe?: CallMemory;
}

/** How long a batch works through asynchronous shaping before it lets timers and I/O run (see letOthersRun). */
const YIELD_EVERY_MS = 20;

interface InvalidSeen {
  count: number;
  offset: string;
  error: string;
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

/** Routes one batch; `run()` resolves once every record is written, acknowledged and marked done. */
export class RouterBatch {
  private readonly out: SendBuffer;
  private readonly tally = new RouterTally();
  private readonly isDeletions: boolean;
  private readonly invalidSeen = new Map<string, InvalidSeen>();
  /** Deletions whose delete bodies are in `out`: their hook runs once those are acknowledged. */
  private readonly afterSend: PlannedDeletion[] = [];
  /** The `seen` pairs in `out`: reported to the audience hook once acknowledged (or abandoned). */
  private readonly pairs: unknown[] = [];
  /** Spans of the calls waiting in `out` (tracing on): they end when their send is acknowledged. */
  private readonly spans: Span[] = [];
  /** The ids of the calls in `out`: remembered once their send is acknowledged. */
  private readonly ids: IdHash[] = [];
  /** The ids of this batch's calls so far (made with the first one: only with a dedupe window). */
  private idsInBatch: IdSet | undefined;
  private pendingThrough: string | undefined;
  private doneThrough: string | undefined;
  private lastYieldMs = performance.now();

  constructor(
    private readonly context: RouterBatchContext,
    private readonly batch: RecordBatch,
    private readonly routing: RoutingTable,
  ) {
    this.out = new SendBuffer(context.maxTopicBytesPerSend);
    this.isDeletions = batch.topic === context.names.deletions;
  }

  async run(): Promise<void> {
    const { batch } = this;
    try {
      for (const record of batch.records) {
        let outcome = this.isDeletions ? planDeletion(record, this.routing) : planShapedCall(record, this.routing);
        // NOTE: a promise only when a destination's expression needs JSONata's own evaluation.
        if (outcome instanceof Promise) {
          outcome = await outcome;
          await this.letOthersRun();
        }
        if (outcome.kind === 'invalid') await this.addInvalid(record, outcome);
        else if (outcome.kind === 'routed') await this.addCall(record, outcome);
        else await this.addDeletion(record, outcome);
        this.pendingThrough = record.offset;
      }
      await this.flush();
    } catch (error) {
      for (const span of this.spans) endSpan(span, error);
      this.context.audiences?.abandoned(this.pairs);
      // Nothing of this batch past `doneThrough` is marked done: it is fetched again.
      this.context.logger.warn(
        { err: error, topic: batch.topic, partition: batch.partition, firstOffset: batch.records[0]?.offset, doneThrough: this.doneThrough },
        'batch not finished; it will be consumed again (records already written may be written twice)',
      );
      throw error;
    }
  }

  /**
   * NOTE: JSONata's own evaluation is a chain of microtasks, and while a batch works
   * through calls that need it, timers and I/O wait: the consumer's heartbeats among
   * them. Measured on the route bench with every expression left to JSONata: the group
   * rejoined again and again, each time routing its batches in hand again (a tenth of the
   * events duplicated; docs/benchmarks.md#figures-behind-the-code). So every 20 ms of
   * such work the batch lets the event loop run. Calls without it never wait here.
   */
  private async letOthersRun(): Promise<void> {
    if (performance.now() - this.lastYieldMs < YIELD_EVERY_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.lastYieldMs = performance.now();
  }

  // NOTE: the order here is the no-loss guarantee: send, wait for the acks, and
  // only then mark the offsets done. The commit follows at the end of the batch.
  private async flush(): Promise<void> {
    const through = this.pendingThrough;
    if (through === undefined) return;
    const { out, context, batch } = this;
    // NOTE: in a transaction (kafka.transactions, docs/kafka.md#transactions) the writes
    // and the batch's offsets commit together; what the router may only believe of
    // committed output (its memory of routed calls, the `seen` pairs) waits for that.
    if (out.size > 0) await (batch.send ? batch.send(out.topicRecords()) : context.producer.send(out.topicRecords()));
    for (const span of this.spans) span.end();
    this.spans.length = 0;
    const ids = this.ids.splice(0);
    const pairs = this.pairs.splice(0);
    const acknowledged = () => {
      context.dedupe?.remember(batch.partition, ids, BigInt(through) + 1n);
      context.audiences?.acknowledged(pairs);
    };
    if (batch.afterCommit) batch.afterCommit((committed) => (committed ? acknowledged() : context.audiences?.abandoned(pairs)));
    else acknowledged();
    this.tally.applyTo(context.metrics);
    for (const deletion of this.afterSend) {
      context.metrics.deletions.inc({ result: deletion.targets.length > 0 ? 'sent' : 'no_affected_source' });
      await context.onDeletion?.(deletion.userId, deletion.sourceIds);
    }
    this.afterSend.length = 0;
    out.clear();
    this.logInvalid();
    this.doneThrough = through;
    this.pendingThrough = undefined;
    await this.batch.markDone(through);
  }

  private async addInvalid(record: InboundRecord, outcome: InvalidOutcome): Promise<void> {
    const { names, logger } = this.context;
    const message = invalidRecord(record, outcome.error);
    const bytes = recordBytes(record.key, record.value, message.headers);
    if (!this.out.fits(names.callsInvalid, bytes)) await this.flush();
    this.out.add(names.callsInvalid, message, bytes);
    this.tally.recordInvalid(outcome.reason);
    const seen = this.invalidSeen.get(outcome.reason);
    if (seen) seen.count += 1;
    else this.invalidSeen.set(outcome.reason, { count: 1, offset: record.offset, error: outcome.error });
    if (this.isDeletions) {
      logger.error(
        { topic: record.topic, partition: record.partition, offset: record.offset, reason: outcome.reason, error: outcome.error },
        `deletion request not handled, kept in ${names.callsInvalid}: ${outcome.error}`,
      );
    }
  }

  /**
   * The call's id hash when it is to be remembered, `copy` when it is a copy of a call
   * routed within the window (docs/kafka.md#copies-of-a-call): this partition's memory, or
   * an earlier record of this batch, has its (source, messageId).
   */
  private idOf(routed: RoutedCall): IdHash | 'copy' | undefined {
    const { dedupe } = this.context;
    const own = routed.call.messageId;
    if (dedupe === undefined || this.isDeletions || own === undefined) return undefined;
    const hash = hashId(routed.source.id, own);
    const inBatch = (this.idsInBatch ??= new IdSet());
    if (inBatch.has(hash) || dedupe.isCopy(this.batch.partition, hash)) return 'copy';
    inBatch.add(hash);
    return hash;
  }

  private async addCall(record: InboundRecord, routed: RoutedCall): Promise<void> {
    const { out, context } = this;
    const id = this.idOf(routed);
    if (id === 'copy') {
      this.tally.callDeduplicated(routed.source.id);
      return;
    }
    const { names } = context;
    const { key, headers, timestamp, body, tracking } = routed;
    // AUDIENCES HOOK: the call's audience record goes into the same send as its deliveries.
    // A call its tracking plan blocked is delivered nowhere, nor recorded for audiences.
    const audience = tracking?.blocked === true ? undefined : context.audiences?.event(routed);
    const audienceBytes = audience ? recordBytes(audience.message.key, audience.message.value, undefined) : 0;
    // A violating call's records go into the same send too: acknowledged before the offset is committed.
    const violation = tracking !== undefined ? violationRecord(routed) : undefined;
    const violationBytes = violation !== undefined ? recordBytes(violation.key, violation.value, violation.headers) : 0;
    const blocked = tracking?.blocked === true ? blockedRecord(record, routed) : undefined;
    const blockedBytes = blocked !== undefined ? recordBytes(blocked.key, blocked.value, blocked.headers) : 0;
    // Every destination that takes the shared body gets the same record (key, body,
    // headers, timestamp: one render); a reshaped one gets its own (`decision.body`).
    const shared = body !== null ? { key, value: body, headers, timestamp } : undefined;
    const sharedBytes = body !== null ? recordBytes(key, body, headers) : 0;
    let fits = (audience === undefined || out.fits(audience.topic, audienceBytes)) && (violation === undefined || out.fits(names.violations, violationBytes));
    if (blocked !== undefined && !out.fits(names.callsBlocked, blockedBytes)) fits = false;
    for (const d of routed.decisions) {
      if (d.routed && !out.fits(d.target.topic, d.body !== undefined ? recordBytes(key, d.body, headers) : sharedBytes)) fits = false;
    }
    if (!fits) {
      // NOTE: the pair this call claimed is in no batch yet: a failed flush must hand
      // it back too, or it stays pending and is never written.
      await this.flush().catch((error: unknown) => {
        if (audience?.pair !== undefined) context.audiences?.abandoned([audience.pair]);
        throw error;
      });
    }
    // NOTE: after the flush above: the id is remembered with this call's own send.
    if (id !== undefined) this.ids.push(id);
    const span = startCallSpan(routed, this.batch.topic);
    if (span !== undefined) this.spans.push(span);
    for (const d of routed.decisions) {
      if (!d.routed) continue;
      if (d.body !== undefined) out.add(d.target.topic, { key, value: d.body, headers, timestamp }, recordBytes(key, d.body, headers));
      else if (shared !== undefined) out.add(d.target.topic, shared, sharedBytes);
    }
    if (audience) {
      out.add(audience.topic, audience.message, audienceBytes);
      if (audience.pair !== undefined) this.pairs.push(audience.pair);
    }
    if (violation !== undefined) out.add(names.violations, violation, violationBytes);
    if (blocked !== undefined) out.add(names.callsBlocked, blocked, blockedBytes);
    this.tallyCall(routed);
  }

  private tallyCall(routed: RoutedCall): void {
    const source = routed.source.id;
    this.tally.callReceived(source, routed.type);
    if (routed.tracking !== undefined) {
      const event = violationEventLabel(routed);
      for (const v of routed.tracking.violations) this.tally.violation(source, event, v.type);
    }
    for (const d of routed.decisions) {
      if (d.routed) {
        this.tally.eventRouted(source, d.target.id);
        continue;
      }
      this.tally.eventFiltered(source, d.target.id, d.reason);
      if (d.reason === 'transform_error') this.context.shapingErrors.failed(source, d, { topic: this.batch.topic, ...routed.origin });
    }
  }

  /** A request without `sourceIds`: the audience processor sends it to the sources that have seen the user. */
  private async handOverDeletion(record: InboundRecord, deletion: PlannedDeletion, hook: AudienceHook): Promise<void> {
    const handed: AudienceEventOut = hook.deletion(deletion.userId, deletion.timestampMs);
    const bytes = recordBytes(handed.message.key, handed.message.value, undefined);
    if (!this.out.fits(handed.topic, bytes)) await this.flush();
    this.out.add(handed.topic, handed.message, bytes);
    this.context.logger.info(
      { partition: record.partition, offset: record.offset },
      'deletion request without sourceIds: handed to the audience processor, which sends it to the sources that have seen the user',
    );
  }

  private async addDeletion(record: InboundRecord, deletion: PlannedDeletion): Promise<void> {
    const { audiences, logger } = this.context;
    if (!deletion.named && audiences !== undefined) return this.handOverDeletion(record, deletion, audiences);
    let fits = true;
    const sizes = deletion.targets.map((t) => recordBytes(deletion.key, deletion.body, t.headers));
    deletion.targets.forEach((t, i) => {
      if (!this.out.fits(t.target.topic, sizes[i]!)) fits = false;
    });
    if (!fits) await this.flush();
    deletion.targets.forEach((t, i) => {
      this.out.add(t.target.topic, { key: deletion.key, value: deletion.body, headers: t.headers }, sizes[i]!);
      this.tally.eventRouted(t.sourceId, t.target.id);
    });
    this.afterSend.push(deletion);
    logger.info(
      { partition: record.partition, offset: record.offset, sourceIds: deletion.sourceIds, destinations: deletion.targets.map((t) => t.target.id) },
      `deletion request: delete sent to ${deletion.targets.length} destination(s)`,
    );
  }

  private logInvalid(): void {
    const { topic, partition } = this.batch;
    const { names, logger } = this.context;
    if (!this.isDeletions) {
      for (const [reason, { count, offset, error }] of this.invalidSeen) {
        logger.warn({ reason, count, topic, partition, offset, error }, `${count} call(s) kept in ${names.callsInvalid} (reason ${reason}); the first, at offset ${offset}: ${error}`);
      }
    }
    this.invalidSeen.clear();
  }
}
