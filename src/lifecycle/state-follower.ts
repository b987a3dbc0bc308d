// Every process that serves or acts on destination state (deliverers, the admin API of
// any role) follows `destinations.state` from its start, in a group of its own that
// commits nothing, and folds it into a StateView: so every pod, the console and
// GET /v1/destinations see the same state, and a restart reads it again.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { ConfigStore } from '../config/store.js';
import { createAdmin } from '../kafka/index.js';
import { createCrashLevels } from '../runtime/crash-levels.js';
import type { KafkaClient } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop } from '../runtime/service.js';
import { LIFECYCLE_STATES } from './lifecycle-state.js';
import { readStateRecord, stateFollowerGroupId, stateTopic } from './state-records.js';
import { StateView } from './state-view.js';
import type { OperationEvent } from './state-view.js';
import { startConsumer } from '../runtime/consumer.js';
import type { ConsumerEvents, RecordBatch, RunningConsumer } from '../runtime/consumer.js';

/**
 * NOTE: with no record for this long after the first fetch, the follower counts as caught
 * up although it did not reach the end it saw at start: the end may be a record it never
 * gets (compaction removed a tombstone at the end).
 */
const QUIET_CAUGHT_UP_MS = 2_000;

export type StateListener = (event: OperationEvent | undefined) => void;

export interface DestinationStates extends Service {
  readonly view: StateView;
  /** Resolves once the records present at start are folded in. */
  caughtUp(): Promise<void>;
  /** Resolves once the record at `offset` is folded in. */
  reached(offset: bigint): Promise<void>;
  /** Resolves with the outcome of the transition written under `key` (null: ignored) once read, or undefined after `timeoutMs`. */
  outcomeOf(key: string, timeoutMs: number): Promise<OperationEvent | null | undefined>;
  /** Called after each batch that changed something (with each accepted transition's event). */
  onChange(listener: StateListener): () => void;
}

/** Creates the topic when missing: one partition (one order for every record), compacted. */
export async function ensureStateTopic(kafka: KafkaClient, config: Config): Promise<void> {
  const admin = createAdmin(kafka);
  await admin.connect();
  try {
    await admin.ensureTopics([{ topic: stateTopic(config), compacted: true }], { partitions: 1, replicationFactor: config.kafka.replicationFactor });
  } finally {
    await admin.disconnect();
  }
}

export function createStateFollower(deps: FollowerDeps): DestinationStates {
  return new StateFollower(deps);
}

interface FollowerDeps {
  config: { current(): Config; onChange?: ConfigStore['onChange'] };
  kafka: KafkaClient;
  metrics?: Metrics;
  logger: Logger;
  /** False where the state is only served (a gateway, a router): a failure to read it is logged, not fatal. Default true. */
  required?: boolean;
}

class StateFollower implements DestinationStates {
  readonly name = 'destination-states';
  readonly view = new StateView();
  private readonly topic: string;
  private readonly initial: Config;
  private readonly logger: Logger;
  private readonly listeners = new Set<StateListener>();
  private readonly waiters = new Set<() => void>();
  private readonly crashLevels = createCrashLevels();
  private consumer: RunningConsumer | undefined;
  private endAtStart = 0n;
  private lastRecordMs = 0;
  private fetched = false;
  private caught = false;
  private failed = false;
  /** Destinations with series of switchyard_destination_state. */
  private gauged = new Set<string>();
  private resolveCaughtUp: () => void = () => undefined;
  private readonly caughtUpPromise = new Promise<void>((resolve) => {
    this.resolveCaughtUp = resolve;
  });
  private readonly quietTimer: NodeJS.Timeout;
  private readonly unsubscribeConfig: (() => void) | undefined;

  constructor(private readonly deps: FollowerDeps) {
    this.initial = deps.config.current();
    this.unsubscribeConfig = deps.config.onChange?.(() => {
      if (this.caught) this.publishGauge();
    });
    this.topic = stateTopic(this.initial);
    this.logger = deps.logger.child({ component: 'destination-states' });
    this.quietTimer = setInterval(() => {
      if (!this.caught && this.fetched && Date.now() - this.lastRecordMs >= QUIET_CAUGHT_UP_MS) this.markCaughtUp();
    }, 250);
    this.quietTimer.unref();
  }

  async start(): Promise<void> {
    try {
      await this.readFromStart();
    } catch (error) {
      // NOTE: a gateway or router only serves the state (GET /v1/destinations, the admin API's
      // enable/disable): without it they still do their work, so they start and say so.
      if (this.deps.required !== false) throw error;
      this.failed = true;
      this.markCaughtUp();
      this.logger.error({ err: error, topic: this.topic }, `could not read ${this.topic}; GET /v1/destinations shows no destination as disabled, and enable/disable fail, until this process is restarted with access to it`);
    }
  }

  /** Creates the topic if missing, notes its end, and follows it from its start until caught up. */
  private async readFromStart(): Promise<void> {
    await ensureStateTopic(this.deps.kafka, this.initial);
    const admin = createAdmin(this.deps.kafka);
    await admin.connect();
    try {
      const [ends] = await admin.partitionEnds(this.topic);
      this.endAtStart = ends === undefined ? 0n : BigInt(ends.high);
      if (ends !== undefined && BigInt(ends.high) <= BigInt(ends.low)) this.markCaughtUp();
    } finally {
      await admin.disconnect();
    }
    this.lastRecordMs = Date.now();
    const settings = { groupId: stateFollowerGroupId(this.initial), topics: [this.topic], fromBeginning: true, commit: { kind: 'none' as const }, maxWaitTimeInMs: 250 };
    this.consumer = await startConsumer(this.deps.kafka, settings, (batch) => this.follow(batch), this.consumerEvents(), this.logger);
    await this.caughtUpPromise;
  }

  readonly stop = onceStop(async () => {
    clearInterval(this.quietTimer);
    this.unsubscribeConfig?.();
    await this.consumer?.disconnect();
  });

  health(): ServiceHealth {
    if (!this.caught) return { live: true, ready: false, detail: `reading the destination states (${this.topic})` };
    return this.failed ? { live: true, ready: true, detail: `not following ${this.topic} (Kafka; the log has the error): destination states may be stale` } : { live: true, ready: true };
  }

  caughtUp(): Promise<void> {
    return this.caughtUpPromise;
  }

  async reached(offset: bigint): Promise<void> {
    await this.waitUntil(() => this.view.nextOffset() > offset);
  }

  async outcomeOf(key: string, timeoutMs: number): Promise<OperationEvent | null | undefined> {
    await this.waitUntil(() => this.view.outcomeOf(key) !== undefined, timeoutMs);
    return this.view.outcomeOf(key);
  }

  onChange(listener: StateListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private consumerEvents(): ConsumerEvents {
    return {
      onJoin: () => this.crashLevels.joined(),
      onFetch: () => {
        if (!this.fetched) this.lastRecordMs = Date.now();
        this.fetched = true;
        this.failed = false;
      },
      onCrash: (error, restart) => {
        this.failed = true;
        const { level, lastingMs } = this.crashLevels.crashed(error, restart, Date.now());
        this.logger[level === 'fatal' ? 'error' : level]({ err: error, restart, lastingMs }, `reading ${this.topic} failed; destination states are as last read until it is back`);
      },
    };
  }

  private async follow(batch: RecordBatch): Promise<void> {
    const events: OperationEvent[] = [];
    for (const record of batch.records) {
      const offset = BigInt(record.offset);
      if (offset > this.view.nextOffset()) this.view.skipTo(offset);
      const event = this.view.apply(offset, readStateRecord(record.key, record.value));
      if (event !== undefined) events.push(event);
    }
    this.lastRecordMs = Date.now();
    if (!this.caught && this.view.nextOffset() >= this.endAtStart) this.markCaughtUp();
    if (this.caught) this.publishGauge();
    for (const event of events) for (const listener of this.listeners) listener(event);
    if (events.length === 0) for (const listener of this.listeners) listener(undefined);
    for (const waiter of [...this.waiters]) waiter();
    // NOTE: nothing is committed (commit: none), but the runtime reads on from what was marked done.
    const last = batch.records[batch.records.length - 1];
    if (last !== undefined) await batch.markDone(last.offset);
  }

  private markCaughtUp(): void {
    if (this.caught) return;
    this.caught = true;
    this.resolveCaughtUp();
    this.publishGauge();
    this.logger.info({ topic: this.topic, destinationsWithHistory: this.view.known().length, disabled: [...this.view.disabled()] }, 'destination states read');
  }

  /**
   * `switchyard_destination_state{destination,state}`: 1 for each destination's state, 0 for
   * the others. NOTE: a destination with `enabled: false` in the config has no series: it is
   * off on purpose, and an alert on `disabled` should not fire for it.
   */
  private publishGauge(): void {
    const gauge = this.deps.metrics?.destinationState;
    if (gauge === undefined) return;
    const enabled = new Set<string>();
    for (const destination of this.deps.config.current().destinations) {
      if (!destination.enabled) continue;
      enabled.add(destination.id);
      const { state } = this.view.lifecycle(destination.id);
      for (const s of LIFECYCLE_STATES) gauge.set({ destination: destination.id, state: s }, s === state ? 1 : 0);
    }
    for (const id of this.gauged) if (!enabled.has(id)) for (const s of LIFECYCLE_STATES) gauge.remove({ destination: id, state: s });
    this.gauged = enabled;
  }

  private waitUntil(done: () => boolean, timeoutMs?: number): Promise<boolean> {
    return new Promise((resolve) => {
      if (done()) return resolve(true);
      let timer: NodeJS.Timeout | undefined;
      const check = () => {
        if (!done()) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(true);
      };
      this.waiters.add(check);
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          this.waiters.delete(check);
          resolve(false);
        }, timeoutMs);
      }
    });
  }
}
