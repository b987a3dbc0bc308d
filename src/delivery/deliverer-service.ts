// `switchyard deliverer`: one worker (consumer group, connection pool, permits) per
// enabled destination, created and stopped as the config changes.
import type { Config } from '../config/schema.js';
import { maskConfig } from '../config/mask.js';
import type { Admin, Producer } from '../kafka/index.js';
import { createKafkajsProducer as createProducer, ensureTopics, kafkajsOf, lagSourceOf, topicNames } from '../kafka/index.js';
import type { LagSampler } from '../observability/consumer-lag.js';
import { startLagSampler } from '../observability/consumer-lag.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { DEFAULT_CIRCUIT_POLICY } from './circuit-breaker.js';
import type { CircuitPolicy } from './circuit-breaker.js';
import type { PreparedDestination } from './destination-settings.js';
import { prepareDestination } from './destination-settings.js';
import { consumedTopics, destinationTopics } from './destination-topics.js';
import type { DestinationWorker } from './destination-worker.js';
import { createDestinationWorker } from './destination-worker.js';
import type { HttpSender } from './http-sender.js';
import { createHttpSender } from './http-sender.js';
import type { ProduceBatcher } from './produce-batcher.js';
import { createProduceBatcher } from './produce-batcher.js';

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

export function createDelivererService(deps: RoleDeps, tuning: Partial<DelivererTuning> = {}): Service {
  const { metrics } = deps;
  const kafka = kafkajsOf(deps.kafka);
  const logger = deps.logger.child({ component: 'deliverer' });
  const options: DelivererTuning = { ...DEFAULT_TUNING, ...tuning };
  // NOTE: topic names, groups and partition counts come from the config at start, as in
  // the router: moving running consumers to another cluster or prefix is a restart's job.
  const initial = deps.config.current();
  const names = topicNames(initial.kafka.topicPrefix);

  const workers = new Map<string, Running>();
  const settings = new Map<string, PreparedDestination>();
  let admin: Admin | undefined;
  let producer: Producer | undefined;
  let batcher: ProduceBatcher | undefined;
  let lag: LagSampler | undefined;
  let unsubscribe: (() => void) | undefined;
  let reconciling: Promise<void> = Promise.resolve();
  let retryTimer: NodeJS.Timeout | undefined;
  let started = false;
  let stopping = false;

  const forget = (running: Running) => {
    const { worker } = running;
    for (const topic of consumedTopics(worker.topics)) metrics.consumerLag.remove({ group: worker.groupId, topic });
    for (const { tier } of worker.topics.retries) metrics.retryQueueDepth.remove({ destination: worker.destinationId, tier: tier.name });
  };

  /** Brings the running workers in line with `config`. Runs one at a time. */
  const reconcile = async (config: Config): Promise<void> => {
    const masked = maskConfig(config) as Config;
    const enabled = config.destinations.filter((d) => d.enabled);
    // Settings first: running workers take new URLs, headers and secrets with their next event.
    settings.clear();
    for (const destination of enabled) {
      const maskedDestination = masked.destinations.find((d) => d.id === destination.id)!;
      settings.set(destination.id, prepareDestination(destination, maskedDestination));
    }
    const shape = JSON.stringify(config.delivery);

    // NOTE: a removed or disabled destination's events stay in its topics, untouched,
    // until it is configured again: stopping it never drops anything.
    const stale = [...workers.entries()].filter(([id, running]) => !settings.has(id) || running.shape !== shape);
    for (const [id] of stale) workers.delete(id);
    for (const { worker } of workers.values()) worker.settingsChanged();
    const stopped = await Promise.allSettled(
      stale.map(async ([id, running]) => {
        await running.worker.stop();
        forget(running);
        logger.info({ destination: id }, settings.has(id) ? 'delivery settings changed; restarting its worker' : 'destination left the config or was disabled; its worker stopped');
      }),
    );
    for (const result of stopped) if (result.status === 'rejected') logger.error({ err: result.reason }, 'a destination worker did not stop cleanly');

    const missing = enabled.filter((d) => !workers.has(d.id));
    if (missing.length === 0) return;
    const existing = await admin!.listTopics();
    const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
    const planned = missing.map((d) => ({ id: d.id, topics: destinationTopics(names, d.id, config.delivery.retryTiers, existing, taken) }));
    await ensureTopics(
      admin!,
      planned.flatMap(({ topics }) => [...consumedTopics(topics), topics.dlq]).map((topic) => ({ topic })),
      { partitions: initial.kafka.partitions, replicationFactor: initial.kafka.replicationFactor },
    );
    for (const { id, topics } of planned) {
      const worker = createDestinationWorker({
        destinationId: id,
        groupId: delivererGroupId(initial, id),
        topics,
        delivery: config.delivery,
        partitionsPerTopic: initial.kafka.partitions,
        settings: () => settings.get(id),
        kafka,
        sender: options.createSender({ timeoutMs: config.delivery.timeoutMs, blockPrivateNetworks: config.delivery.blockPrivateNetworks }),
        circuitPolicy: circuitPolicy(config.delivery, options.circuitBreaker),
        producer: batcher!,
        metrics,
        logger,
      });
      workers.set(id, { worker, shape });
      try {
        await worker.start();
      } catch (error) {
        workers.delete(id);
        await worker.stop().catch(() => undefined);
        throw error;
      }
      logger.info({ destination: id, groupId: worker.groupId, topics: consumedTopics(topics) }, 'delivering for destination');
    }
  };

  const scheduleReconcile = (config: Config): Promise<void> => {
    // Each run waits for the one before, whatever became of it.
    reconciling = reconciling.catch(() => undefined).then(async () => {
      if (stopping) return;
      clearTimeout(retryTimer);
      try {
        await reconcile(config);
      } catch (error) {
        if (!started) throw error;
        logger.error({ err: error, retryInMs: options.reconcileRetryMs }, 'could not apply the new destinations; trying again');
        retryTimer = setTimeout(() => void scheduleReconcile(deps.config.current()).catch(() => undefined), options.reconcileRetryMs);
      }
    });
    return reconciling;
  };

  return {
    name: 'deliverer',

    async start() {
      admin = kafka.admin();
      await admin.connect();
      producer = createProducer(kafka);
      await producer.connect();
      batcher = createProduceBatcher(producer);
      await scheduleReconcile(initial);
      started = true;
      unsubscribe = deps.config.onChange((next, previous) => {
        if (JSON.stringify(next.kafka) !== JSON.stringify(previous.kafka)) {
          logger.warn('kafka settings changed in the config; the deliverer keeps the ones it started with until it is restarted');
        }
        void scheduleReconcile(next);
      });
      const a = admin;
      lag = startLagSampler({
        source: lagSourceOf(a),
        metrics,
        logger,
        intervalMs: options.sampleIntervalMs,
        groups: () => [...workers.values()].map(({ worker }) => ({ groupId: worker.groupId, topics: consumedTopics(worker.topics) })),
        onSample: (group, topic, value) => {
          for (const { worker } of workers.values()) {
            if (worker.groupId !== group.groupId) continue;
            const retry = worker.topics.retries.find((r) => r.topic === topic);
            if (retry) metrics.retryQueueDepth.set({ destination: worker.destinationId, tier: retry.tier.name }, value);
          }
        },
      });
      logger.info({ destinations: [...workers.keys()] }, 'deliverer started');
    },

    stop: onceStop(async () => {
      stopping = true;
      unsubscribe?.();
      clearTimeout(retryTimer);
      await runAll([
        // A reload half-way through would leave a worker behind.
        () => reconciling.catch(() => undefined),
        async () => lag?.stop(),
        // All at once: each drains its requests in flight (bounded by delivery.timeout).
        async () => {
          const results = await Promise.allSettled([...workers.values()].map(({ worker }) => worker.stop()));
          const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
          if (failures.length > 0) throw new AggregateError(failures, `${failures.length} destination worker(s) did not stop cleanly`);
        },
        async () => producer?.disconnect(),
        async () => admin?.disconnect(),
      ]);
    }),

    health() {
      const running = [...workers.values()].map((r) => r.worker);
      const dead = running.filter((w) => w.failure() !== undefined);
      const waiting = running.filter((w) => !w.joined());
      const live = dead.length === 0;
      const ready = started && !stopping && waiting.length === 0;
      const detail = !live
        ? `consumer of ${dead.map((w) => w.destinationId).join(', ')} stopped for good: ${dead[0]!.failure()!.message}`
        : waiting.length > 0
          ? `waiting for the consumer group of ${waiting.map((w) => w.destinationId).join(', ')} to join`
          : undefined;
      return { live, ready, ...(detail === undefined ? {} : { detail }) };
    },
  };
}
