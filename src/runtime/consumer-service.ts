// The lifecycle every consuming role shares: connect, ensure its topics, a producer,
// subscribe, health from the group's join/crash/stop, consumer-lag sampling,
// commit-until-done (the port's consumer), and the ordered stop. The role brings its
// batch handler and a few hooks.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { NotStartedError } from '../errors.js';
import { createAdmin, createProducer } from '../kafka/index.js';
import { createCrashLevels } from './crash-levels.js';
import type { KafkaAdmin, ProducerOptions, RecordProducer, TopicSpec } from '../kafka/index.js';
import { startLagSampler } from '../observability/consumer-lag.js';
import type { LagGroup, LagSampler } from '../observability/consumer-lag.js';
import type { RoleDeps } from './deps.js';
import { onceStop, runAll } from './service.js';
import type { Service, ServiceHealth } from './service.js';
import { carryGroupCommits } from './group-upgrade.js';
import { startConsumer } from './consumer.js';
import type { BatchHandler, ConsumerEvents, ConsumerSettings, RunningConsumer } from './consumer.js';
import { TopicEnsurer } from './topology.js';

/** What the service has connected, handed to the role's hooks. */
export interface ConsumerContext {
  admin: KafkaAdmin;
  producer: RecordProducer;
  /** Creates topics not created by this process yet (serialized; remembers what it made). */
  topics: TopicEnsurer;
}

export interface ConsumerServiceOptions {
  /** The service's name (`router`), also in its log lines. */
  name: string;
  /** What the logs call the consumer ("router consumer"). */
  consumerLabel: string;
  deps: RoleDeps;
  /** The role's logger. */
  logger: Logger;
  consumer: ConsumerSettings;
  /**
   * The names the consumer's group had in older versions, most recent first: before it
   * joins, the group takes their commits for the partitions it never committed
   * (src/runtime/group-upgrade.ts), so an upgrade neither redoes nor skips anything.
   */
  upgradeFrom?: readonly string[];
  /** The topics to create before anything starts, from the topology. */
  topics(config: Config): TopicSpec[];
  producer?: ProducerOptions;
  /** How often consumer lag is sampled; `groups` defaults to this consumer's group and topics. */
  lag: { intervalMs: number; groups?: () => LagGroup[]; onSample?: (group: LagGroup, topic: string, lag: number) => void };
  /** After the topics, before the consumer starts (checks, timers). */
  prepare?(context: ConsumerContext): Promise<void>;
  /** The batch handler, made once everything is connected. */
  handler(context: ConsumerContext): BatchHandler;
  /** The member joined (again): its partitions per topic. */
  onJoin?(assignment: Record<string, number[]>, memberId: string): void;
  /** A config reload (the service is running). */
  onConfigChange?(next: Config, previous: Config): void;
  /** Called once stopping begins, before anything stops (timers, caches). */
  onStopping?(): void;
  /** After the consumer stopped and before the producer goes (work the batches left running). */
  afterConsumer?(): Promise<unknown>;
  /** Extra readiness once joined: a reason not to be ready yet, or undefined. */
  notReady?(): string | undefined;
}

export interface ConsumerService extends Service {
  /** The role's producer (throws before start). */
  producer(): RecordProducer;
}

/** Health of a consumer that joins a group: not live once its consumer stopped for good. */
class ConsumerHealth {
  started = false;
  joined = false;
  stopping = false;
  dead = false;

  report(notReady: string | undefined): ServiceHealth {
    // NOTE: /readyz and /healthz are not authenticated: the detail names what is down,
    // never the error's text (logged at fatal when it happened).
    if (this.dead) return { live: false, ready: false, detail: 'the Kafka consumer stopped for good (the log has the error): restart the process' };
    const detail = this.stopping
      ? 'stopping'
      : !this.started
        ? 'starting'
        : !this.joined
          ? 'waiting to join the consumer group'
          : notReady;
    return detail === undefined ? { live: true, ready: true } : { live: true, ready: false, detail };
  }
}

/** One consuming role's connections and their lifecycle, in the order of the file's header. */
class ConsumerServiceRuntime {
  private readonly health = new ConsumerHealth();
  private admin: KafkaAdmin | undefined;
  private producer: RecordProducer | undefined;
  private consumer: RunningConsumer | undefined;
  private lag: LagSampler | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly options: ConsumerServiceOptions) {}

  async start(): Promise<void> {
    const { deps, logger } = this.options;
    const initial = deps.config.current();
    const admin = (this.admin = createAdmin(deps.kafka));
    await admin.connect();
    const topics = new TopicEnsurer(admin);
    const created = await topics.ensure(this.options.topics(initial), initial);
    if (created.length > 0) logger.info({ topics: created }, `created ${created.length} topic(s)`);
    const producer = (this.producer = createProducer(deps.kafka, this.options.producer));
    await producer.connect();
    const context: ConsumerContext = { admin, producer, topics };
    await this.options.prepare?.(context);
    const { groupId, topics: consumed } = this.options.consumer;
    if (this.options.upgradeFrom !== undefined) await carryGroupCommits(admin, { to: groupId, from: this.options.upgradeFrom, topics: consumed, logger });
    this.consumer = await startConsumer(deps.kafka, this.options.consumer, this.options.handler(context), this.events(), logger);
    this.startLag(admin);
    const onChange = this.options.onConfigChange;
    if (onChange) this.unsubscribe = deps.config.onChange((next, previous) => onChange(next, previous));
    this.health.started = true;
  }

  private events(): ConsumerEvents {
    const { logger, consumerLabel, onJoin } = this.options;
    const health = this.health;
    const crashLevels = createCrashLevels();
    return {
      onJoin: (assignment, memberId) => {
        health.joined = true;
        crashLevels.joined();
        onJoin?.(assignment, memberId);
      },
      onCrash: (error, restart) => {
        health.joined = false;
        const { level, lastingMs } = crashLevels.crashed(error, restart, Date.now());
        if (level === 'fatal') {
          health.dead = true;
          logger.fatal({ err: error }, `${consumerLabel} stopped for good; restart the process`);
        } else {
          logger[level]({ err: error, lastingMs }, `${consumerLabel} failed; it joins the group again shortly`);
        }
      },
      onStop: () => {
        health.joined = false;
      },
    };
  }

  private startLag(source: KafkaAdmin): void {
    const { deps, logger, lag } = this.options;
    const { groupId, topics } = this.options.consumer;
    this.lag = startLagSampler({
      source,
      metrics: deps.metrics,
      logger,
      intervalMs: lag.intervalMs,
      groups: lag.groups ?? (() => [{ groupId, topics: [...topics] }]),
      ...(lag.onSample ? { onSample: lag.onSample } : {}),
    });
  }

  // NOTE: consumer.stop() returns once the batches in hand are finished: sent,
  // acknowledged and committed. Only then do the producer and admin go.
  async stop(): Promise<void> {
    this.health.stopping = true;
    this.options.onStopping?.();
    await runAll([
      async () => this.unsubscribe?.(),
      async () => this.lag?.stop(),
      async () => this.consumer?.stop(),
      async () => this.consumer?.disconnect(),
      async () => this.options.afterConsumer?.(),
      async () => this.producer?.disconnect(),
      async () => this.admin?.disconnect(),
    ]);
  }

  report(): ServiceHealth {
    return this.health.report(this.consumer?.assignmentProblem() ?? this.options.notReady?.());
  }

  connectedProducer(): RecordProducer {
    if (this.producer === undefined) throw new NotStartedError(`${this.options.name}: the producer is used before start()`);
    return this.producer;
  }
}

export function createConsumerService(options: ConsumerServiceOptions): ConsumerService {
  const runtime = new ConsumerServiceRuntime(options);
  return {
    name: options.name,
    start: () => runtime.start(),
    stop: onceStop(() => runtime.stop()),
    health: () => runtime.report(),
    producer: () => runtime.connectedProducer(),
  };
}
