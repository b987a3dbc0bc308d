// The lifecycle every consuming role shares: connect, ensure its topics, a producer,
// subscribe, health from the group's join/crash/stop, consumer-lag sampling,
// commit-until-done (the port's consumer), and the ordered stop. The role brings its
// batch handler and a few hooks.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { TopicEnsurer, createAdmin, createProducer, startConsumer } from '../kafka/index.js';
import type { BatchHandler, ConsumerSettings, KafkaAdmin, ProducerOptions, RecordProducer, RunningConsumer, TopicSpec } from '../kafka/index.js';
import { startLagSampler } from '../observability/consumer-lag.js';
import type { LagGroup, LagSampler } from '../observability/consumer-lag.js';
import type { RoleDeps } from './deps.js';
import { onceStop, runAll } from './service.js';
import type { Service, ServiceHealth } from './service.js';

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
  dead: string | undefined;

  report(notReady: string | undefined): ServiceHealth {
    if (this.dead !== undefined) return { live: false, ready: false, detail: `consumer stopped: ${this.dead}` };
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

export function createConsumerService(options: ConsumerServiceOptions): ConsumerService {
  const { deps, logger, name } = options;
  const health = new ConsumerHealth();
  let admin: KafkaAdmin | undefined;
  let producer: RecordProducer | undefined;
  let consumer: RunningConsumer | undefined;
  let lag: LagSampler | undefined;
  let unsubscribe: (() => void) | undefined;

  const onCrash = (error: Error, restart: boolean) => {
    health.joined = false;
    if (restart) {
      logger.warn({ err: error }, `${options.consumerLabel} failed; kafkajs restarts it`);
    } else {
      health.dead = error.message;
      logger.fatal({ err: error }, `${options.consumerLabel} stopped for good; restart the process`);
    }
  };

  const start = async () => {
    const initial = deps.config.current();
    admin = createAdmin(deps.kafka);
    await admin.connect();
    const topics = new TopicEnsurer(admin);
    const created = await topics.ensure(options.topics(initial), initial);
    if (created.length > 0) logger.info({ topics: created }, `created ${created.length} topic(s)`);
    producer = createProducer(deps.kafka, options.producer);
    await producer.connect();
    const context: ConsumerContext = { admin, producer, topics };
    await options.prepare?.(context);
    consumer = await startConsumer(
      deps.kafka,
      options.consumer,
      options.handler(context),
      {
        onJoin: (assignment, memberId) => {
          health.joined = true;
          options.onJoin?.(assignment, memberId);
        },
        onCrash,
        onStop: () => {
          health.joined = false;
        },
      },
      logger,
    );
    const { groupId, topics: consumed } = options.consumer;
    lag = startLagSampler({
      source: admin,
      metrics: deps.metrics,
      logger,
      intervalMs: options.lag.intervalMs,
      groups: options.lag.groups ?? (() => [{ groupId, topics: [...consumed] }]),
      ...(options.lag.onSample ? { onSample: options.lag.onSample } : {}),
    });
    const onChange = options.onConfigChange;
    if (onChange) unsubscribe = deps.config.onChange((next, previous) => onChange(next, previous));
    health.started = true;
  };

  return {
    name,
    start,
    // NOTE: consumer.stop() returns once the batches in hand are finished: sent,
    // acknowledged and committed. Only then do the producer and admin go.
    stop: onceStop(async () => {
      health.stopping = true;
      options.onStopping?.();
      await runAll([
        async () => unsubscribe?.(),
        async () => lag?.stop(),
        async () => consumer?.stop(),
        async () => consumer?.disconnect(),
        async () => options.afterConsumer?.(),
        async () => producer?.disconnect(),
        async () => admin?.disconnect(),
      ]);
    }),
    health: () => health.report(options.notReady?.()),
    producer() {
      if (producer === undefined) throw new Error(`${name}: the producer is used before start()`);
      return producer;
    },
  };
}
