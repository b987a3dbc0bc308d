// The deliverer's side of the destination lifecycle (docs/webhooks.md#automatic-disabling,
// docs/operations.md#operational-events), one service beside the deliverer:
// 1. watch: every tick, this pod's attempts of each destination with `autoDisable` (read
//    from its own delivery metrics, the delivery path untouched) go into an AttemptLog,
//    reported to `destinations.state` when they changed;
// 2. decide: from every pod's reports and the folded state, the transition due now (if
//    any) is written to `destinations.state`. Every pod decides; two that write the same
//    transition make one, as the second is ignored by the fold (lifecycle-state.ts);
// 3. publish: the member of the `<groupPrefix>operations` group that holds the state
//    topic's one partition turns each accepted transition into its operational event
//    (operations topic, webhooks), then commits past it: one pod writes each event.
//    A pod that dies between the event and its commit leaves it to be written again by
//    the next owner (at least once, never lost).
import type { AutoDisableConfig, Config } from '../config/schema.js';
import type { ConfigStore } from '../config/store.js';
import { createAdmin, createProducer } from '../kafka/index.js';
import { createCrashLevels } from '../runtime/crash-levels.js';
import type { OutboundRecord, RecordProducer } from '../kafka/index.js';
import type { HttpSender } from '../delivery/http-sender.js';
import { createHttpSender } from '../delivery/http-sender.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { AttemptLog, decideTransition } from './auto-disable.js';
import { createEffectiveConfigStore } from './effective-config.js';
import { createEventPublisher } from './operation-events.js';
import type { EventPublisher } from './operation-events.js';
import { deadLetterReportKey, deadLetterReportRecord, instanceName, operationsGroupId, operationsTopic, reportRecord, stateTopic, tombstoneRecord, transitionRecord } from './state-records.js';
import type { DeadLetterReport } from './state-records.js';
import { SAMPLE_SIZE } from '../observability/dead-letter-tap.js';
import type { DestinationStates } from './state-follower.js';
import { startConsumer } from '../runtime/consumer.js';
import type { ConsumerEvents, RecordBatch, RunningConsumer } from '../runtime/consumer.js';

/**
 * A minute's dead letters are summed up this many ticks after it ended: by then every pod
 * (all tick alike, on the same config) has reported its own.
 */
const DEAD_LETTER_GRACE = 3;
/** The least time after a minute ends before its dead letters are summed up. */
const MIN_DEAD_LETTER_GRACE_MS = 10_000;

/** The tick: a twentieth of the shortest `autoDisable.after`, within these bounds. */
const MIN_TICK_MS = 200;
const MAX_TICK_MS = 15_000;

/** A tick for `config`: undefined when no enabled destination has `autoDisable`. */
export function lifecycleTickMs(config: Config): number | undefined {
  const afters = config.destinations.filter((d) => d.enabled && d.settings.autoDisable !== undefined).map((d) => d.settings.autoDisable!.afterMs);
  if (afters.length === 0) return undefined;
  return Math.min(MAX_TICK_MS, Math.max(MIN_TICK_MS, Math.floor(Math.min(...afters) / 20)));
}

export interface LifecycleService extends Service {
  /** The config the deliverer runs on (effective-config.ts). */
  readonly deliveryConfig: ConfigStore;
}

export interface LifecycleOptions {
  /** Tests may swap the HTTP client of the operations webhooks. */
  createSender?: (options: { timeoutMs: number; blockPrivateNetworks: boolean }) => HttpSender;
}

export function createLifecycleService(deps: RoleDeps, states: DestinationStates, options: LifecycleOptions = {}): LifecycleService {
  return new Lifecycle(deps, states, options);
}

class Lifecycle implements LifecycleService {
  readonly name = 'lifecycle';
  readonly deliveryConfig: ReturnType<typeof createEffectiveConfigStore>;
  private readonly logger: RoleDeps['logger'];
  private readonly initial: Config;
  private readonly instance = instanceName();
  private readonly logs = new Map<string, AttemptLog>();
  /** Each destination's attempt counts at the last tick, by outcome. */
  private lastCounts = new Map<string, Map<string, number>>();
  /** The transition this pod wrote for a destination and has not read back yet. */
  private readonly pending = new Map<string, string>();
  private readonly crashLevels = createCrashLevels();
  private producer: RecordProducer | undefined;
  private sender: HttpSender | undefined;
  private publisher: EventPublisher | undefined;
  private consumer: RunningConsumer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopping = false;
  private unsubscribe: (() => void) | undefined;
  private failedTicks = 0;
  /** This pod's dead letters per destination and minute, as last reported, until the minute is summed up. */
  private readonly deadLetterMinutes = new Map<string, DeadLetterReport>();
  /** Summaries of a destination-minute this pod wrote and has not read back yet, by their record key. */
  private readonly pendingSums = new Map<string, string>();

  constructor(
    private readonly deps: RoleDeps,
    private readonly states: DestinationStates,
    private readonly options: LifecycleOptions,
  ) {
    this.logger = deps.logger.child({ component: 'lifecycle' });
    this.initial = deps.config.current();
    this.deliveryConfig = createEffectiveConfigStore(deps.config, (id) => states.view.lifecycle(id));
  }

  async start(): Promise<void> {
    const { initial } = this;
    await this.states.caughtUp();
    // NOTE: the deliverer started before this service with every destination held back; it now gets its lanes.
    this.deliveryConfig.release();
    this.unsubscribe = this.states.onChange(() => this.deliveryConfig.refresh());
    const admin = createAdmin(this.deps.kafka);
    await admin.connect();
    try {
      await admin.ensureTopics([{ topic: operationsTopic(initial) }], initial.kafka);
    } finally {
      await admin.disconnect();
    }
    this.producer = createProducer(this.deps.kafka);
    await this.producer.connect();
    this.sender = (this.options.createSender ?? createHttpSender)({ timeoutMs: initial.delivery.timeoutMs, blockPrivateNetworks: initial.delivery.blockPrivateNetworks });
    this.publisher = createEventPublisher({ topic: operationsTopic(initial), producer: this.producer, sender: this.sender, operations: () => this.deps.config.current().operations, logger: this.logger });
    const settings = { groupId: operationsGroupId(initial), topics: [stateTopic(initial)], fromBeginning: true, commit: { kind: 'batch-end' as const }, maxWaitTimeInMs: 500 };
    this.consumer = await startConsumer(this.deps.kafka, settings, (batch) => this.publishBatch(batch), this.consumerEvents(), this.logger);
    // The clock of the attempt counts starts now: what the metrics held before is not this tick's.
    await this.attemptsSinceLastTick();
    this.scheduleTick();
  }

  readonly stop = onceStop(async () => {
    this.stopping = true;
    clearTimeout(this.timer);
    this.unsubscribe?.();
    await runAll([() => this.ticking.catch(() => undefined), async () => this.consumer?.disconnect(), async () => this.producer?.disconnect(), async () => this.sender?.close(), async () => this.deliveryConfig.close()]);
  });

  health(): ServiceHealth {
    return { live: true, ready: true };
  }

  private consumerEvents(): ConsumerEvents {
    const topic = stateTopic(this.initial);
    return {
      onJoin: (assignment) => {
        this.crashLevels.joined();
        const owned = (assignment[topic] ?? []).length > 0;
        this.logger.debug({ owned }, owned ? 'this pod writes the operational events' : 'another pod writes the operational events');
      },
      onCrash: (error, restart) => {
        const { level, lastingMs } = this.crashLevels.crashed(error, restart, Date.now());
        this.logger[level === 'fatal' ? 'error' : level]({ err: error, restart, lastingMs }, 'the operational events consumer failed');
      },
    };
  }

  /** The operations group's batches: each accepted transition's event, then the commit past it. */
  private async publishBatch(batch: RecordBatch): Promise<void> {
    for (const record of batch.records) {
      if (!batch.stillOwned()) return;
      const offset = BigInt(record.offset);
      await this.states.reached(offset);
      const event = this.states.view.eventAt(offset);
      if (event !== undefined) await this.publisher!.publish(event);
      else if (offset < this.states.view.heldFrom()) this.logger.error({ offset: record.offset }, 'the operational event of this destinations.state record (if it was one) is no longer held: this pod took the operations partition too far behind; it is skipped');
      await batch.markDone(record.offset);
      this.states.view.forgetEventsBefore(offset);
    }
  }

  private scheduleTick(): void {
    if (this.stopping) return;
    const tickMs = lifecycleTickMs(this.deps.config.current());
    clearTimeout(this.timer);
    // NOTE: without a destination that has autoDisable, nothing is watched: the timer checks again at the longest tick (a reload may add one).
    this.timer = setTimeout(() => {
      this.ticking = this.tick().then(
        () => {
          this.failedTicks = 0;
        },
        (error: unknown) => {
          this.failedTicks += 1;
          this.logger[this.failedTicks === 1 ? 'warn' : 'debug']({ err: error }, 'could not report attempts or write a transition to destinations.state (Kafka); trying again next tick');
        },
      );
      void this.ticking.finally(() => this.scheduleTick());
    }, tickMs ?? MAX_TICK_MS);
  }

  private async tick(): Promise<void> {
    const config = this.deps.config.current();
    const nowMs = Date.now();
    const deltas = await this.attemptsSinceLastTick();
    const watched = config.destinations.filter((d) => d.enabled && d.settings.autoDisable !== undefined);
    const reports = [];
    for (const destination of watched) {
      const log = this.logs.get(destination.id) ?? new AttemptLog();
      this.logs.set(destination.id, log);
      const delta = deltas.get(destination.id);
      if (delta !== undefined) log.tick(nowMs, delta.succeeded, delta.failed);
      const report = log.takeReport(destination.id, this.instance, nowMs);
      if (report !== undefined) reports.push(reportRecord(report));
    }
    for (const id of [...this.logs.keys()]) if (!watched.some((d) => d.id === id)) this.logs.delete(id);
    const topic = stateTopic(this.initial);
    if (reports.length > 0) this.logger.trace({ reports: reports.length, watched: watched.map((d) => d.id) }, 'reporting attempts');
    if (reports.length > 0) await this.producer!.send([{ topic, messages: reports }]);
    const transitions = watched.flatMap((destination) => this.decide(destination.id, destination.settings.autoDisable!, nowMs));
    const deadLetters = this.deadLetterRecords(nowMs);
    if (transitions.length + deadLetters.length > 0) await this.producer!.send([{ topic, messages: [...transitions, ...deadLetters] }]);
  }

  /**
   * `message.dead_lettered` (docs/operations.md#operational-events): this pod's dead letters
   * of each minute are reported to `destinations.state` (a record per destination, minute
   * and pod); once a minute ended DEAD_LETTER_GRACE ticks ago, every pod writes the sum of
   * all reports of that destination-minute, and the first one read is its event. A report
   * whose minute was summed up is removed (a tombstone).
   */
  private deadLetterRecords(nowMs: number): OutboundRecord[] {
    const records: OutboundRecord[] = [];
    for (const drained of this.deps.metrics.deadLetterTap.drain()) {
      const key = deadLetterReportKey({ ...drained, instance: this.instance });
      const known = this.deadLetterMinutes.get(key);
      const report: DeadLetterReport = known === undefined ? { ...drained, instance: this.instance } : { ...known, count: known.count + drained.count, sample: [...known.sample, ...drained.sample].slice(0, SAMPLE_SIZE) };
      this.deadLetterMinutes.set(key, report);
      records.push(deadLetterReportRecord(report));
    }
    const { view } = this.states;
    for (const [key, report] of this.deadLetterMinutes) {
      if (!view.summedUp(report.destination, report.minute)) continue;
      this.deadLetterMinutes.delete(key);
      records.push(tombstoneRecord(key));
    }
    // NOTE: at least MIN_DEAD_LETTER_GRACE_MS: with short ticks (a test's `after: 3s` gives
    // 200 ms), another pod's report of the minute's last seconds was often not read back
    // yet when the sum was written, and its dead letters were in no event.
    const graceMs = Math.max(MIN_DEAD_LETTER_GRACE_MS, DEAD_LETTER_GRACE * (lifecycleTickMs(this.deps.config.current()) ?? MAX_TICK_MS));
    for (const due of view.deadLetterMinutesDue(nowMs - graceMs)) {
      const id = `${due.destination}/${due.minute}`;
      const waiting = this.pendingSums.get(id);
      if (waiting !== undefined && view.outcomeOf(waiting) === undefined) continue;
      const { key, record } = transitionRecord({ kind: 'dead_lettered', destination: due.destination, at: nowMs, minute: due.minute, count: due.count, messageIds: due.messageIds });
      this.pendingSums.set(id, key);
      records.push(record);
    }
    for (const [id, key] of this.pendingSums) if (view.outcomeOf(key) !== undefined) this.pendingSums.delete(id);
    return records;
  }

  /** The transition due for a destination, from what the topic says (this pod's own reports included once read back). */
  private decide(destination: string, autoDisable: AutoDisableConfig, nowMs: number): OutboundRecord[] {
    const waiting = this.pending.get(destination);
    if (waiting !== undefined && this.states.view.outcomeOf(waiting) === undefined) return [];
    this.pending.delete(destination);
    const { view } = this.states;
    const request = decideTransition({ destination, autoDisable, lifecycle: view.lifecycle(destination), reports: view.reportsOf(destination), nowMs });
    if (request === undefined) return [];
    const { key, record } = transitionRecord(request);
    this.pending.set(destination, key);
    this.logger.info({ destination, transition: request.kind, ...(request.kind === 'failing' ? { share: request.share } : {}) }, `destination ${destination}: writing transition ${request.kind}`);
    return [record];
  }

  /** This pod's attempts since the last tick, by destination: 2xx, and the others (an open circuit's skips are not attempts). */
  private async attemptsSinceLastTick(): Promise<Map<string, { succeeded: number; failed: number }>> {
    const { values } = await this.deps.metrics.deliveryAttempts.get();
    const counts = new Map<string, Map<string, number>>();
    for (const { labels, value } of values) {
      const destination = String(labels.destination);
      const byOutcome = counts.get(destination) ?? new Map<string, number>();
      byOutcome.set(String(labels.outcome), value);
      counts.set(destination, byOutcome);
    }
    const deltas = new Map<string, { succeeded: number; failed: number }>();
    for (const [destination, byOutcome] of counts) {
      const before = this.lastCounts.get(destination);
      let succeeded = 0;
      let failed = 0;
      for (const [outcome, value] of byOutcome) {
        if (outcome === 'circuit_open') continue;
        // NOTE: a series that went down was reset (a lane made again): count it from 0.
        const previous = before?.get(outcome) ?? 0;
        const delta = value >= previous ? value - previous : value;
        if (outcome === '2xx') succeeded += delta;
        else failed += delta;
      }
      deltas.set(destination, { succeeded, failed });
    }
    this.lastCounts = counts;
    return deltas;
  }
}
