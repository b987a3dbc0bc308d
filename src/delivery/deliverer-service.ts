// `switchyard deliverer`: one worker (consumer group, connection pool, permits) per
// enabled destination, created and stopped as the config changes.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { maskConfig } from '../config/mask.js';
import { createAdmin, createProducer, createTopology } from '../kafka/index.js';
import type { KafkaAdmin, RecordProducer, Topology } from '../kafka/index.js';
import type { LagSampler } from '../observability/consumer-lag.js';
import { startLagSampler } from '../observability/consumer-lag.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { DEFAULT_CIRCUIT_POLICY } from './circuit-breaker.js';
import type { CircuitPolicy } from './circuit-breaker.js';
import type { PreparedDestination } from './destination-settings.js';
import { prepareDestination } from './destination-settings.js';
import { consumedTopics, destinationTopics } from './destination-topics.js';
import type { DestinationTopics } from './destination-topics.js';
import type { DestinationWorker } from './destination-worker.js';
import { createDestinationWorker } from './destination-worker.js';
import type { HttpSender } from './http-sender.js';
import { createHttpSender } from './http-sender.js';

export interface DelivererTuning {
  /** How often consumer lag and retry queue depth are sampled. */
  sampleIntervalMs: number;
  /** After a config reload could not be applied (broker unreachable), try again after this long. */
  reconcileRetryMs: number;
  /** Tests and benchmarks may swap the HTTP client. */
  createSender: (options: { timeoutMs: number; blockPrivateNetworks: boolean }) => HttpSender;
  /**
   * The per-URL circuit breaker (DESIGN §7: 5 failures, 30 s doubling to 10 min). Not in
   * the config file: tests and benchmarks shorten the cool-down here.
   */
  circuitBreaker: Partial<typeof DEFAULT_CIRCUIT_POLICY>;
}

const DEFAULT_TUNING: DelivererTuning = {
  sampleIntervalMs: 10_000,
  reconcileRetryMs: 5_000,
  createSender: createHttpSender,
  circuitBreaker: DEFAULT_CIRCUIT_POLICY,
};

/**
 * The breaker's thresholds for a delivery config. NOTE: a cool-down is at most a
 * quarter of `maxRetryWindow`: with a window shorter than the defaults' minutes (a test
 * or a demo config), a URL skipped longer would see its events dead-lettered without a
 * single request after a brief hiccup. With the 4 h default nothing changes. A probe or
 * watched request always ends within the timeout; the lease only frees the slot of one
 * whose result was lost to a bug.
 */
export function circuitPolicy(delivery: Config['delivery'], tuning: Partial<typeof DEFAULT_CIRCUIT_POLICY> = {}): CircuitPolicy {
  const policy = { ...DEFAULT_CIRCUIT_POLICY, ...tuning };
  const maxCoolDownMs = Math.min(policy.maxCoolDownMs, delivery.maxRetryWindowMs / 4);
  return { ...policy, coolDownMs: Math.min(policy.coolDownMs, maxCoolDownMs), maxCoolDownMs, trackedLeaseMs: 2 * delivery.timeoutMs + 1_000 };
}

/** A destination's consumer group: `<clientId>-deliverer-<destinationId>`. */
export function delivererGroupId(config: Config, destinationId: string): string {
  return `${config.kafka.clientId}-deliverer-${destinationId}`;
}

interface Running {
  worker: DestinationWorker;
  /** The delivery settings it was built with; other values need a new worker. */
  shape: string;
}

/** A destination's worker to start: its id and topics. */
interface PlannedWorker {
  id: string;
  topics: DestinationTopics;
}

export function createDelivererService(deps: RoleDeps, tuning: Partial<DelivererTuning> = {}): Service {
  return new DelivererService(deps, { ...DEFAULT_TUNING, ...tuning });
}

class DelivererService implements Service {
  readonly name = 'deliverer';
  private readonly logger: Logger;
  // NOTE: topic names, groups and partition counts come from the config at start, as in
  // the router: moving running consumers to another cluster or prefix is a restart's job.
  private readonly initial: Config;
  private readonly topology: Topology;
  private readonly workers = new Map<string, Running>();
  private readonly settings = new Map<string, PreparedDestination>();
  private admin: KafkaAdmin | undefined;
  /** One producer for every worker's retries and dead letters (the port merges their sends). */
  private producer: RecordProducer | undefined;
  private lag: LagSampler | undefined;
  private unsubscribe: (() => void) | undefined;
  private reconciling: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | undefined;
  private started = false;
  private stopping = false;

  constructor(
    private readonly deps: RoleDeps,
    private readonly options: DelivererTuning,
  ) {
    this.logger = deps.logger.child({ component: 'deliverer' });
    this.initial = deps.config.current();
    this.topology = createTopology(this.initial.kafka.topicPrefix);
  }

  async start(): Promise<void> {
    const admin = (this.admin = createAdmin(this.deps.kafka));
    await admin.connect();
    this.producer = createProducer(this.deps.kafka);
    await this.producer.connect();
    await this.scheduleReconcile(this.initial);
    this.started = true;
    this.unsubscribe = this.deps.config.onChange((next, previous) => {
      if (JSON.stringify(next.kafka) !== JSON.stringify(previous.kafka)) {
        this.logger.warn('kafka settings changed in the config; the deliverer keeps the ones it started with until it is restarted');
      }
      void this.scheduleReconcile(next);
    });
    this.lag = this.startLagSampler(admin);
    this.logger.info({ destinations: [...this.workers.keys()] }, 'deliverer started');
  }

  readonly stop = onceStop(async () => {
    this.stopping = true;
    this.unsubscribe?.();
    clearTimeout(this.retryTimer);
    await runAll([
      // A reload half-way through would leave a worker behind.
      () => this.reconciling.catch(() => undefined),
      async () => this.lag?.stop(),
      // All at once: each drains its requests in flight (bounded by delivery.timeout).
      () => this.stopAllWorkers(),
      async () => this.producer?.disconnect(),
      async () => this.admin?.disconnect(),
    ]);
  });

  health(): ServiceHealth {
    return workersHealth(
      [...this.workers.values()].map((r) => r.worker),
      this.started && !this.stopping,
    );
  }

  private scheduleReconcile(config: Config): Promise<void> {
    // Each run waits for the one before, whatever became of it.
    this.reconciling = this.reconciling
      .catch(() => undefined)
      .then(async () => {
        if (this.stopping) return;
        clearTimeout(this.retryTimer);
        try {
          await this.reconcile(config);
        } catch (error) {
          if (!this.started) throw error;
          this.logger.error({ err: error, retryInMs: this.options.reconcileRetryMs }, 'could not apply the new destinations; trying again');
          this.retryTimer = setTimeout(() => void this.scheduleReconcile(this.deps.config.current()).catch(() => undefined), this.options.reconcileRetryMs);
        }
      });
    return this.reconciling;
  }

  /** Brings the running workers in line with `config`. Runs one at a time (scheduleReconcile). */
  private async reconcile(config: Config): Promise<void> {
    const enabled = config.destinations.filter((d) => d.enabled);
    this.prepareSettings(config, enabled);
    const shape = JSON.stringify(config.delivery);
    await this.stopStaleWorkers(shape);
    const missing = enabled.filter((d) => !this.workers.has(d.id));
    if (missing.length === 0) return;
    const planned = await this.createTopicsOf(config, missing);
    for (const worker of planned) await this.startWorker(config, worker, shape);
  }

  /** Settings first: running workers take new URLs, headers and secrets with their next event. */
  private prepareSettings(config: Config, enabled: readonly Config['destinations'][number][]): void {
    const masked = maskConfig(config) as Config;
    this.settings.clear();
    for (const destination of enabled) {
      const maskedDestination = masked.destinations.find((d) => d.id === destination.id)!;
      this.settings.set(destination.id, prepareDestination(destination, maskedDestination));
    }
  }

  /**
   * Stops the workers of destinations gone or disabled, and those built with other
   * delivery settings (`shape`); tells the others their settings changed.
   * NOTE: a removed or disabled destination's events stay in its topics, untouched,
   * until it is configured again: stopping it never drops anything.
   */
  private async stopStaleWorkers(shape: string): Promise<void> {
    const stale = [...this.workers.entries()].filter(([id, running]) => !this.settings.has(id) || running.shape !== shape);
    for (const [id] of stale) this.workers.delete(id);
    for (const { worker } of this.workers.values()) worker.settingsChanged();
    const stopped = await Promise.allSettled(
      stale.map(async ([id, running]) => {
        await running.worker.stop();
        this.forget(running.worker);
        this.logger.info({ destination: id }, this.settings.has(id) ? 'delivery settings changed; restarting its worker' : 'destination left the config or was disabled; its worker stopped');
      }),
    );
    for (const result of stopped) if (result.status === 'rejected') this.logger.error({ err: result.reason }, 'a destination worker did not stop cleanly');
  }

  /** The topics of each destination to start (its retry tiers, leftovers included), created where missing. */
  private async createTopicsOf(config: Config, missing: readonly { id: string }[]): Promise<PlannedWorker[]> {
    const admin = this.admin!;
    const existing = await admin.listTopics();
    const { names } = this.topology;
    const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
    const planned = missing.map((d) => ({ id: d.id, topics: destinationTopics(names, d.id, config.delivery.retryTiers, existing, taken) }));
    // The leftover tiers a worker also reads exist already (they were found in `existing`).
    await admin.ensureTopics(
      missing.flatMap((d) => this.topology.destination(d.id, config.delivery.retryTiers)),
      this.initial.kafka,
    );
    return planned;
  }

  private async startWorker(config: Config, { id, topics }: PlannedWorker, shape: string): Promise<void> {
    const worker = createDestinationWorker({
      destinationId: id,
      groupId: delivererGroupId(this.initial, id),
      topics,
      delivery: config.delivery,
      partitionsPerTopic: this.initial.kafka.partitions,
      settings: () => this.settings.get(id),
      kafka: this.deps.kafka,
      sender: this.options.createSender({ timeoutMs: config.delivery.timeoutMs, blockPrivateNetworks: config.delivery.blockPrivateNetworks }),
      circuitPolicy: circuitPolicy(config.delivery, this.options.circuitBreaker),
      producer: this.producer!,
      metrics: this.deps.metrics,
      logger: this.logger,
    });
    this.workers.set(id, { worker, shape });
    try {
      await worker.start();
    } catch (error) {
      this.workers.delete(id);
      await worker.stop().catch(() => undefined);
      throw error;
    }
    this.logger.info({ destination: id, groupId: worker.groupId, topics: consumedTopics(topics) }, 'delivering for destination');
  }

  private async stopAllWorkers(): Promise<void> {
    const results = await Promise.allSettled([...this.workers.values()].map(({ worker }) => worker.stop()));
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    if (failures.length > 0) throw new AggregateError(failures, `${failures.length} destination worker(s) did not stop cleanly`);
  }

  /** A stopped worker's lag and retry queue depth series go away with it. */
  private forget(worker: DestinationWorker): void {
    const { metrics } = this.deps;
    for (const topic of consumedTopics(worker.topics)) metrics.consumerLag.remove({ group: worker.groupId, topic });
    for (const { tier } of worker.topics.retries) metrics.retryQueueDepth.remove({ destination: worker.destinationId, tier: tier.name });
  }

  /** Consumer lag of every worker's topics, and from it each retry tier's queue depth. */
  private startLagSampler(admin: KafkaAdmin): LagSampler {
    const { metrics } = this.deps;
    return startLagSampler({
      source: admin,
      metrics,
      logger: this.logger,
      intervalMs: this.options.sampleIntervalMs,
      groups: () => [...this.workers.values()].map(({ worker }) => ({ groupId: worker.groupId, topics: consumedTopics(worker.topics) })),
      onSample: (group, topic, value) => {
        for (const { worker } of this.workers.values()) {
          if (worker.groupId !== group.groupId) continue;
          const retry = worker.topics.retries.find((r) => r.topic === topic);
          if (retry) metrics.retryQueueDepth.set({ destination: worker.destinationId, tier: retry.tier.name }, value);
        }
      },
    });
  }
}

/** Live unless a consumer stopped for good; ready once running and every consumer joined its group. */
function workersHealth(running: readonly DestinationWorker[], up: boolean): ServiceHealth {
  const dead = running.filter((w) => w.failure() !== undefined);
  const waiting = running.filter((w) => !w.joined());
  const live = dead.length === 0;
  const ready = up && waiting.length === 0;
  const detail = !live
    ? `consumer of ${dead.map((w) => w.destinationId).join(', ')} stopped for good: ${dead[0]!.failure()!.message}`
    : waiting.length > 0
      ? `waiting for the consumer group of ${waiting.map((w) => w.destinationId).join(', ')} to join`
      : undefined;
  return { live, ready, ...(detail === undefined ? {} : { detail }) };
}
