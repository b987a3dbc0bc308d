// `switchyard deliverer`: ONE consumer (the port's partition stream, group
// `<groupPrefix>deliverer`) on the topics of every enabled destination, and per
// destination a lane (destination-lane.ts: its queue, permits, circuits, rate limit,
// and its account in the stream's commit ledger), created and stopped as the config
// changes. Whatever the number of destinations the process has one consumer, one
// producer, one admin and one HTTP connection pool.
import type { Logger } from 'pino';
import { retryPolicyOf } from '../config/retry-policy.js';
import type { CircuitBreakerConfig, Config, DestinationConfig } from '../config/schema.js';
import { TopicsNotCreatedError } from '../errors.js';
import { DEFAULT_TRANSACTION_TIMEOUT_MS, createAdmin, createOffsetReader, createProducer } from '../kafka/index.js';
import { recordGapReader } from '../observability/record-gaps.js';
import { createCrashLevels } from '../runtime/crash-levels.js';
import type { InboundRecord, KafkaAdmin, OffsetReader, RecordProducer } from '../kafka/index.js';
import type { LagSampler } from '../observability/consumer-lag.js';
import { startLagSampler } from '../observability/consumer-lag.js';
import { createRecordCounter } from '../observability/record-counts.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { onceStop, runAll } from '../runtime/service.js';
import { DEFAULT_CIRCUIT_POLICY } from './circuit-breaker.js';
import type { CircuitPolicy } from './circuit-breaker.js';
import type { PreparedDestination } from './destination-settings.js';
import { prepareDestination } from './destination-settings.js';
import { consumedTopics, destinationTopics } from './destination-topics.js';
import type { DestinationTopics } from './destination-topics.js';
import { EventDelivery } from './deliver-event.js';
import { DeliveryCounters } from './delivery-counters.js';
import { CommitAccount } from './commit-account.js';
import { createDeliveryStream } from './delivery-stream.js';
import type { DeliveryStream } from './delivery-stream.js';
import { DestinationLane, laneQueueBound, laneUncommittedBound } from './destination-lane.js';
import { EndOfTurn } from './end-of-turn.js';
import { KafkaDelivery } from './kafka-sender.js';
import { KafkaTransactions } from './kafka-transactions.js';
import { ClusterProducers } from './target-producers.js';
import type { HttpSender } from './http-sender.js';
import { createHttpSender } from './http-sender.js';
import { RatePace } from './rate-pace.js';
import { RetryOrDeadLetter } from './retry-or-dead-letter.js';
import { RetryTierWait } from './retry-tier-wait.js';
import { TokenSource, TokenSources } from './token-source.js';
import { USER_AGENT } from '../version.js';
import { UrlCircuits } from './url-circuits.js';
import type { UrlStatus } from './url-circuits.js';
import { delivererGroupId, legacyGroupIds } from '../runtime/group-ids.js';
import { createTopology } from '../runtime/topology.js';
import type { Topology } from '../runtime/topology.js';

export interface DelivererTuning {
  /** How often consumer lag and retry queue depth are sampled. */
  sampleIntervalMs: number;
  /** After a config reload could not be applied (broker unreachable), try again after this long. */
  reconcileRetryMs: number;
  /** Tests and benchmarks may swap the HTTP client. */
  createSender: (options: { timeoutMs: number; blockPrivateNetworks: boolean }) => HttpSender;
  /**
   * The per-URL circuit breaker (docs/webhooks.md#delivery-and-retries: 5 failures, 30 s doubling to 10 min). Not in
   * the config file: tests and benchmarks shorten the cool-down here.
   */
  circuitBreaker: Partial<typeof DEFAULT_CIRCUIT_POLICY>;
  /** After a commit failed (a rebalance, the broker away), how long before the next try (commits otherwise follow completions at once). */
  commitEveryMs: number;
  /**
   * Fetch long-poll: how long an idle fetch waits on the broker, also how late a
   * resumed partition (room in its lane, a retry due) is fetched again.
   */
  maxFetchWaitMs: number;
  /**
   * The fetch wait once idle (nothing fetched for 2 s, no paused partition due soon): an
   * idle deliverer's cost grows with its partitions per fetch. Heartbeats run on their own
   * timer (src/kafka/membership.ts), so the wait need not stay under the session timeout.
   */
  idleFetchWaitMs: number;
  /**
   * The fetch wait while a lane is full (its partitions paused until it has room): short,
   * so that a lane that drained is fetched again soon instead of after a long poll on
   * nothing. NOTE: one fetch brings up to 1 MB per partition, several times a lane's
   * queue bound at 0 ms receivers; with a long wait here a lone busy destination
   * idled between its fetches (deliver bench, docs/benchmarks.md#figures-behind-the-code).
   */
  roomFetchWaitMs: number;
}

/** Beyond delivery.timeout, how long a reload waits for a leaving lane's last writes (a retry tier's, a dead letter's). */
const LEAVING_DRAIN_SLACK_MS = 2_000;

/** Waits for `work`, at most `ms`; either way resolves (work never rejects here). */
async function settledWithin(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

const DEFAULT_TUNING: DelivererTuning = {
  sampleIntervalMs: 10_000,
  reconcileRetryMs: 5_000,
  createSender: createHttpSender,
  circuitBreaker: DEFAULT_CIRCUIT_POLICY,
  commitEveryMs: 100,
  maxFetchWaitMs: 500,
  idleFetchWaitMs: 3_000,
  roomFetchWaitMs: 50,
};

/**
 * The breaker's thresholds for a delivery config and a destination's `circuitBreaker`
 * settings (over the tuning, over the defaults). NOTE: a cool-down is at most a quarter
 * of `maxRetryWindow`: with a window shorter than the defaults' minutes (a test or a
 * demo config), a URL shut longer would see its events wait past their window after a
 * brief hiccup. With the 4 h default nothing changes. A probe or watched request always
 * ends within the timeout; the lease only frees the slot of one whose result was lost to a bug.
 */
export function circuitPolicy(
  delivery: Config['delivery'],
  tuning: Partial<typeof DEFAULT_CIRCUIT_POLICY> = {},
  overrides: CircuitBreakerConfig = {},
): CircuitPolicy {
  const policy = { ...DEFAULT_CIRCUIT_POLICY, ...tuning, ...overrides };
  const maxCoolDownMs = Math.min(policy.maxCoolDownMs, delivery.maxRetryWindowMs / 4);
  return { ...policy, coolDownMs: Math.min(policy.coolDownMs, maxCoolDownMs), maxCoolDownMs, trackedLeaseMs: 2 * delivery.timeoutMs + 1_000 };
}

/** The deliverer's consumer group (`<groupPrefix>deliverer`), one for every destination: named in src/runtime/group-ids.ts. */
export { delivererGroupId } from '../runtime/group-ids.js';

/** The group a destination had before one group served them all (`<clientId>-deliverer-<id>`): its commits seed an upgrade. */
export const legacyDelivererGroupId = legacyGroupIds.delivererOfDestination;

/** One destination's lane and what it was built with. */
interface RunningLane {
  id: string;
  lane: DestinationLane;
  topics: DestinationTopics;
  /** The `delivery` settings it was built with, as JSON; other values need a new lane. */
  deliveryJson: string;
  /** Its retry tiers and window (`retryPolicyOf`), as JSON: other tiers are other topics, so a change needs a new lane. */
  retryJson: string;
  circuits: UrlCircuits;
  pool: SharedSender;
}

/** The HTTP pool every lane built with the same `delivery` settings shares. */
interface SharedSender {
  sender: HttpSender;
  deliveryJson: string;
  /** Lanes still using it. */
  users: number;
}

/**
 * What a deliverer shows an operator besides its metrics (the console,
 * docs/admin-api.md#get-v1destinations): read-only views of its lanes.
 */
export interface DelivererStatus {
  /** Each running lane's URLs: circuit state and last answers, by destination id. */
  urlStatuses(): Map<string, UrlStatus[]>;
}

/** Whether `service` is a deliverer that tells its lanes' state. */
export function isDelivererStatus(service: Service): service is Service & DelivererStatus {
  return typeof (service as Partial<DelivererStatus>).urlStatuses === 'function';
}

export function createDelivererService(deps: RoleDeps, tuning: Partial<DelivererTuning> = {}): Service & DelivererStatus {
  return new DelivererService(deps, { ...DEFAULT_TUNING, ...tuning });
}

class DelivererService implements Service, DelivererStatus {
  readonly name = 'deliverer';
  private readonly logger: Logger;
  // NOTE: topic names, groups and partition counts come from the config at start, as in
  // the router: moving running consumers to another cluster or prefix is a restart's job.
  private readonly initial: Config;
  private readonly topology: Topology;
  private readonly groupId: string;
  private readonly lanes = new Map<string, RunningLane>();
  private readonly laneOfTopic = new Map<string, RunningLane>();
  private readonly settings = new Map<string, PreparedDestination>();
  /** Destinations with a series of `switchyard_tls_client_cert_expiry_seconds`. */
  private certificatesReported = new Set<string>();
  /** Each `auth.oauth2` destination's token, kept across reloads (token-source.ts). */
  private readonly tokens: TokenSources;
  /** Enabled destinations whose topics could not be created, with why: no lane, tried again every reconcileRetryMs. */
  private readonly unmade = new Map<string, string>();
  /** Lanes taken out of service that still finish their requests in flight. */
  private readonly draining = new Set<Promise<void>>();
  /** One end-of-turn pump for every lane (end-of-turn.ts). */
  private readonly endOfTurn = new EndOfTurn();
  private admin: KafkaAdmin | undefined;
  /** One producer for every lane's retries and dead letters (the port merges their sends). */
  private producer: RecordProducer | undefined;
  /** The producers of the Kafka destinations' topics, one per cluster (made with the first such lane). */
  private targets: ClusterProducers | undefined;
  /**
   * The deliverer's transactions (exactly once; made with the first lane that needs them):
   * the Kafka destinations' of the same cluster and, with kafka.transactions, every lane's
   * retry and dead-letter writes.
   */
  private transactions: { shared: KafkaTransactions; alone: KafkaTransactions } | undefined;
  /** Made at start and kept to the end: the lanes hold it and its ledger. */
  private stream: DeliveryStream | undefined;
  /** The stream has topics (it is a member, or joining). */
  private subscribed = false;
  private sender: SharedSender | undefined;
  private lag: LagSampler | undefined;
  /** Reads the retry tiers' offsets that hold no record, for their queue depth. */
  private offsetReader: OffsetReader | undefined;
  private unsubscribe: (() => void) | undefined;
  private unwatchBuffered: (() => void) | undefined;
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
    this.groupId = delivererGroupId(this.initial);
    this.tokens = new TokenSources(
      (destinationId, config, connection) =>
        new TokenSource({
          config,
          connection,
          userAgent: USER_AGENT,
          // NOTE: the pool of the moment: the lanes' own, so the token endpoint passes the same address guard.
          postForm: (target, body, headers) => this.sender!.sender.postForm(target, body, headers),
          counted: (result) => deps.metrics.authTokenRequests.inc({ destination: destinationId, result }),
        }),
    );
  }

  async start(): Promise<void> {
    const admin = (this.admin = createAdmin(this.deps.kafka));
    await admin.connect();
    this.stream = this.createStream(admin, this.initial.delivery.bufferBudgetBytes);
    this.unwatchBuffered = this.deps.metrics.watchBuffered(() => this.stream?.buffered() ?? { records: 0, bytes: 0 });
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
    this.logger.info({ destinations: [...this.lanes.keys()], groupId: this.groupId }, 'deliverer started');
  }

  readonly stop = onceStop(async () => {
    this.stopping = true;
    this.unsubscribe?.();
    this.unwatchBuffered?.();
    clearTimeout(this.retryTimer);
    await runAll([
      // A reload half-way through would leave a lane behind.
      () => this.reconciling.catch(() => undefined),
      async () => this.lag?.stop(),
      async () => this.offsetReader?.close(),
      // NOTE: the lanes drain first (each request bounded by delivery.timeout) while the
      // consumer is still a member: its stop then commits what they finished, then leaves.
      () => this.stopAllLanes(),
      async () => this.stream?.stop(),
      async () => this.sender?.sender.close(),
      async () => this.producer?.disconnect(),
      async () => this.targets?.close(),
      async () => this.transactions?.shared.close(),
      async () => this.transactions?.alone.close(),
      async () => this.admin?.disconnect(),
    ]);
  });

  health(): ServiceHealth {
    const ready = this.started && !this.stopping && (this.lanes.size === 0 || this.stream?.joined() === true);
    if (!ready) return { live: true, ready, detail: this.stopping ? 'stopping' : `waiting for the consumer group ${this.groupId} to join` };
    // NOTE: a destination the config enables has a lane, or its topics could not be made
    // (reported below): until then the deliverer is not delivering what it was given, as
    // at a start under the lifecycle, every destination held back until the states are
    // read (docs/admin-api.md, /readyz).
    const laneless = this.deps.config.current().destinations.filter((d) => d.enabled && !this.lanes.has(d.id) && !this.unmade.has(d.id));
    if (laneless.length > 0) return { live: true, ready: false, detail: lanelessDetail(laneless.map((d) => d.id)) };
    const foreign = this.lanes.size === 0 ? undefined : this.stream?.assignmentProblem();
    if (foreign !== undefined) return { live: true, ready: false, detail: foreign };
    // NOTE: still ready: the other destinations deliver (docs/operations.md#topics-that-cannot-be-created).
    return this.unmade.size === 0 ? { live: true, ready } : { live: true, ready, detail: unmadeDetail(this.unmade, this.options.reconcileRetryMs) };
  }

  urlStatuses(): Map<string, UrlStatus[]> {
    return new Map([...this.lanes.values()].map((running) => [running.id, running.circuits.statuses()]));
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

  /**
   * Brings the lanes in line with `config`, then the consumer's subscription with the
   * lanes. Runs one at a time (scheduleReconcile).
   *
   * NOTE: settings-only changes (URLs, headers, secrets, rate limits) apply live. A
   * destination added, removed or disabled, or other delivery settings, change the
   * topic set: the consumer commits what finished, leaves and joins again (~a second);
   * the unchanged lanes keep delivering what they hold meanwhile, and what they hold is
   * not handed over again (the stream remembers it).
   */
  private async reconcile(config: Config): Promise<void> {
    const enabled = config.destinations.filter((d) => d.enabled);
    this.prepareSettings(enabled, config.delivery);
    // NOTE: the circuit breaker's thresholds apply live (UrlCircuits.follow): a change of them alone restarts no lane.
    // NOTE: the breaker's thresholds apply live, the buffer budget at the next start: neither restarts a lane.
    const { circuitBreaker: _live, bufferBudgetBytes: _atStart, transactionalMoves: _movesAtStart, ...restarting } = config.delivery;
    const deliveryJson = JSON.stringify(restarting);
    const retryJsons = new Map(enabled.map((d) => [d.id, retryJsonOf(config, d)]));
    const stale = [...this.lanes.values()].filter((running) => !this.settings.has(running.id) || running.deliveryJson !== deliveryJson || running.retryJson !== retryJsons.get(running.id));
    const missing = enabled.filter((d) => !this.lanes.has(d.id) || stale.some((r) => r.id === d.id));
    for (const running of this.lanes.values()) {
      if (stale.includes(running)) continue;
      running.circuits.follow(this.settings.get(running.id)!);
      running.lane.wake();
    }
    this.forgetUnmade(enabled);
    if (stale.length === 0 && missing.length === 0 && (this.subscribed || enabled.length === 0)) return;
    const planned = await this.createTopicsOf(config, missing);
    const leaving: Promise<void>[] = [];
    for (const running of stale) {
      const drained = this.retire(running);
      if (!this.settings.has(running.id)) leaving.push(drained);
      this.logger.info({ destination: running.id }, this.settings.has(running.id) ? 'delivery settings changed; restarting its lane' : 'destination left the config or was disabled; its lane stopped');
    }
    for (const { destination, topics } of planned) this.addLane(config, destination, topics, deliveryJson);
    // A destination that left: its requests in flight end (each bounded by delivery.timeout)
    // and are committed before its partitions leave with the next join, so that adding it
    // back redoes nothing (docs/kafka.md#copies-of-a-call). The other lanes deliver meanwhile.
    if (leaving.length > 0) await settledWithin(Promise.all(leaving), config.delivery.timeoutMs + LEAVING_DRAIN_SLACK_MS);
    const topics = [...this.laneOfTopic.keys()];
    // No destination enabled: no consumer; the stream leaves its group.
    this.subscribed = topics.length > 0;
    await this.stream!.resubscribe(topics);
    if (topics.length === 0) {
      if (this.unmade.size === 0) this.logger.info('no destination enabled; the delivery consumer left its group');
      return;
    }
    this.logger.info({ destinations: [...this.lanes.keys()], topics: topics.length }, 'delivering for the configured destinations');
  }

  /** Settings first: running lanes take new URLs, headers and secrets with their next event. */
  private prepareSettings(enabled: readonly Config['destinations'][number][], delivery: Config['delivery']): void {
    this.settings.clear();
    const defaults = delivery.circuitBreaker === undefined ? {} : { circuitBreaker: delivery.circuitBreaker };
    for (const destination of enabled) this.settings.set(destination.id, prepareDestination(destination, this.tokens, delivery.proxy, defaults));
    this.tokens.keepOnly(new Set(enabled.filter((d) => d.settings.auth !== undefined && 'oauth2' in d.settings.auth).map((d) => d.id)));
    this.reportCertificates(enabled);
  }

  /** `switchyard_tls_client_cert_expiry_seconds` of each enabled destination with a client certificate; the others' series go away. */
  private reportCertificates(enabled: readonly Config['destinations'][number][]): void {
    const gauge = this.deps.metrics.tlsClientCertExpiry;
    const reported = new Set<string>();
    for (const destination of enabled) {
      const expiresAtMs = destination.settings.tls?.material?.certExpiresAtMs;
      if (expiresAtMs === undefined) continue;
      gauge.set({ destination: destination.id }, Math.floor(expiresAtMs / 1000));
      reported.add(destination.id);
    }
    for (const id of this.certificatesReported) if (!reported.has(id)) gauge.remove({ destination: id });
    this.certificatesReported = reported;
  }

  /**
   * The topics of each destination to start (its retry tiers, leftovers included),
   * created where missing. A destination whose topics could not all be created is left
   * out (no lane), reported, and tried again after reconcileRetryMs: the others start.
   */
  private async createTopicsOf(config: Config, missing: readonly DestinationConfig[]): Promise<{ destination: DestinationConfig; topics: DestinationTopics }[]> {
    if (missing.length === 0) return [];
    const admin = this.admin!;
    const existing = await admin.listTopics();
    const { names } = this.topology;
    const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
    // Each destination's own tiers when it sets `settings.retry.tiers` (docs/webhooks.md#retry-policy-per-destination).
    const planned = missing.map((d) => ({ id: d.id, destination: d, topics: destinationTopics(names, d.id, retryPolicyOf(config, d).tiers, existing, taken) }));
    const specs = new Map(missing.map((d) => [d.id, this.topology.destination(d.id, retryPolicyOf(config, d).tiers)]));
    let failed = new Map<string, string>();
    try {
      // The leftover tiers a lane also reads exist already (they were found in `existing`).
      await admin.ensureTopics([...specs.values()].flat(), this.initial.kafka);
    } catch (error) {
      if (!(error instanceof TopicsNotCreatedError)) throw error;
      failed = new Map(error.failed.map((f) => [f.topic, f.reason]));
    }
    const made: { destination: DestinationConfig; topics: DestinationTopics }[] = [];
    for (const destination of planned) {
      const reason = specs
        .get(destination.id)!
        .map((spec) => failed.get(spec.topic))
        .find((r) => r !== undefined);
      if (reason === undefined) {
        made.push(destination);
        this.topicsMade(destination.id);
      } else {
        this.topicsNotMade(destination.id, reason);
      }
    }
    if (this.unmade.size > 0) this.retryUnmadeLater();
    return made;
  }

  /** A destination's topics could not be created: no lane for it; said once per reason (log, gauge, /readyz detail). */
  private topicsNotMade(id: string, reason: string): void {
    const known = this.unmade.get(id);
    this.unmade.set(id, reason);
    this.deps.metrics.destinationTopicsUnavailable.set({ destination: id }, 1);
    if (known === reason) return;
    this.logger.error(
      { destination: id, reason, retryInMs: this.options.reconcileRetryMs },
      `could not create the topics of destination ${id} (${reason}); nothing is delivered for it until they exist (its events wait in Kafka), the other destinations deliver. Trying again every ${this.options.reconcileRetryMs} ms`,
    );
  }

  private topicsMade(id: string): void {
    if (!this.unmade.delete(id)) return;
    this.deps.metrics.destinationTopicsUnavailable.remove({ destination: id });
    this.logger.info({ destination: id }, `the topics of destination ${id} exist now; delivering for it`);
  }

  /** Destinations no longer enabled are no longer reported. */
  private forgetUnmade(enabled: readonly { id: string }[]): void {
    const ids = new Set(enabled.map((d) => d.id));
    for (const id of [...this.unmade.keys()]) {
      if (ids.has(id)) continue;
      this.unmade.delete(id);
      this.deps.metrics.destinationTopicsUnavailable.remove({ destination: id });
    }
  }

  private retryUnmadeLater(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.scheduleReconcile(this.deps.config.current()).catch(() => undefined), this.options.reconcileRetryMs);
  }

  private createStream(admin: KafkaAdmin, bufferBudgetBytes: number): DeliveryStream {
    const handler = {
      accept: (records: readonly InboundRecord[]) => {
        const running = this.laneOfTopic.get(records[0]!.topic);
        running?.lane.accept(records);
        return running !== undefined;
      },
      revoke: (topic: string, partition: number) => this.laneOfTopic.get(topic)?.lane.revoke(topic, partition) ?? [],
    };
    // The names older versions gave the group, most recent first (src/runtime/group-ids.ts).
    const legacyGroupOf = (topic: string): readonly string[] => {
      const running = this.laneOfTopic.get(topic);
      return running === undefined ? [] : [legacyGroupIds.deliverer(this.initial), legacyDelivererGroupId(this.initial, running.id)].filter((group) => group !== this.groupId);
    };
    // A transient crash (the coordinator still loading at a first start) stays at debug for a minute (crash-levels.ts).
    const crashLevels = createCrashLevels();
    const events = {
      onJoin: () => crashLevels.joined(),
      onCrash: (error: Error, restart: boolean) => {
        const { level, lastingMs } = crashLevels.crashed(error, restart, Date.now());
        if (level === 'fatal') this.logger.fatal({ err: error }, 'delivery consumer stopped for good; restart the process');
        else this.logger[level]({ err: error, lastingMs }, 'delivery consumer failed; it joins the group again shortly');
      },
    };
    const settings = { groupId: this.groupId, admin, commitEveryMs: this.options.commitEveryMs, maxWaitTimeInMs: this.options.maxFetchWaitMs, idleWaitTimeInMs: this.options.idleFetchWaitMs, roomWaitTimeInMs: this.options.roomFetchWaitMs, legacyGroupOf, bufferBudgetBytes };
    return createDeliveryStream(this.deps.kafka, settings, handler, events, this.logger);
  }

  /** The HTTP pool for `config.delivery`, shared by every lane built with it. */
  private senderFor(config: Config, deliveryJson: string): SharedSender {
    if (this.sender?.deliveryJson !== deliveryJson) {
      const previous = this.sender;
      this.sender = { deliveryJson, users: 0, sender: this.options.createSender({ timeoutMs: config.delivery.timeoutMs, blockPrivateNetworks: config.delivery.blockPrivateNetworks }) };
      // The lanes still draining on the previous one close it when the last is done (retire).
      if (previous !== undefined && previous.users === 0) void previous.sender.close();
    }
    this.sender.users += 1;
    return this.sender;
  }

  private addLane(config: Config, destination: DestinationConfig, topics: DestinationTopics, deliveryJson: string): void {
    const { id } = destination;
    const { metrics } = this.deps;
    const policy = retryPolicyOf(config, destination);
    // The destination's own window, where the lane's parts read `maxRetryWindow`.
    const delivery = { ...config.delivery, maxRetryWindowMs: policy.maxRetryWindowMs };
    const logger = this.logger.child({ destination: id });
    const circuits = new UrlCircuits({ destinationId: id, policy: (overrides) => circuitPolicy(delivery, this.options.circuitBreaker, overrides), gauge: metrics.circuitState, logger });
    const counters = new DeliveryCounters(metrics, id);
    const pace = new RatePace(delivery.maxRetryWindowMs);
    // With kafka.transactions and delivery.transactionalMoves (read at start), each move to a retry tier or the dead letters commits with the offset it moves (retry-or-dead-letter.ts).
    const transactions = this.initial.kafka.transactions && this.initial.delivery.transactionalMoves ? { transactions: this.kafkaTransactions(config) } : {};
    const next = new RetryOrDeadLetter({ destinationId: id, topics, policy, producer: this.producer!, ...transactions, counters, logger });
    const pool = this.senderFor(config, deliveryJson);
    const stream = this.stream!;
    const sender = pool.sender;
    const lane = new DestinationLane({
      destinationId: id,
      concurrency: delivery.concurrencyPerDestination,
      queueBound: laneQueueBound(delivery.concurrencyPerDestination),
      settings: () => this.settings.get(id),
      circuits,
      pace,
      tierWait: new RetryTierWait(topics, delivery.maxRetryWindowMs),
      events:
        destination.type === 'kafka'
          ? new KafkaDelivery({ destinationId: id, producers: this.targetProducers(config), transactions: this.kafkaTransactions(config), timeoutMs: delivery.timeoutMs, counters, next, logger })
          : new EventDelivery({ destinationId: id, sender, circuits, pace, counters, next, logger }),
      stream,
      commits: new CommitAccount(stream.ledger, laneUncommittedBound(delivery.concurrencyPerDestination)),
      logger,
      endOfTurn: this.endOfTurn,
    });
    const initial = this.settings.get(id);
    if (initial !== undefined) circuits.follow(initial);
    const running: RunningLane = { id, lane, topics, deliveryJson, retryJson: retryJsonOf(config, destination), circuits, pool };
    this.lanes.set(id, running);
    for (const topic of consumedTopics(topics)) this.laneOfTopic.set(topic, running);
    this.logger.info({ destination: id, topics: consumedTopics(topics) }, 'delivering for destination');
  }

  /** The Kafka destinations' producers; `delivery.blockPrivateNetworks` as at the first such lane (a change applies at restart). */
  private targetProducers(config: Config): ClusterProducers {
    this.targets ??= new ClusterProducers({ kafka: this.deps.kafka, blockPrivateNetworks: config.delivery.blockPrivateNetworks, logger: this.logger });
    return this.targets;
  }

  /** The deliverer's transactions (kafka-transactions.ts), made with the first lane that needs them; `delivery.timeout` as then. */
  private kafkaTransactions(config: Config): { shared: KafkaTransactions; alone: KafkaTransactions } {
    const stream = this.stream!;
    const options = {
      deadlineMs: config.delivery.timeoutMs + DEFAULT_TRANSACTION_TIMEOUT_MS,
      kafka: this.deps.kafka,
      groupId: this.groupId,
      member: () => stream.transactionMember(),
      ledger: stream.ledger,
      logger: this.logger,
    };
    this.transactions ??= { shared: new KafkaTransactions(options), alone: new KafkaTransactions({ ...options, alone: true }) };
    return this.transactions;
  }

  /**
   * Takes a lane out of service: its queue is dropped (those records are fetched again
   * from the commit by whichever lane takes its topics), its requests in flight finish.
   * NOTE: a removed or disabled destination's events stay in its topics, untouched,
   * until it is configured again: stopping it never drops anything.
   */
  /** Stops a lane; the promise settles once its requests in flight ended (never rejects). */
  private retire(running: RunningLane): Promise<void> {
    for (const topic of consumedTopics(running.topics)) this.stream?.revokeTopic(topic);
    this.lanes.delete(running.id);
    for (const topic of consumedTopics(running.topics)) if (this.laneOfTopic.get(topic) === running) this.laneOfTopic.delete(topic);
    const drained = running.lane
      .stop()
      .then(() => {
        running.circuits.close();
        if (!this.lanes.has(running.id)) this.forget(running);
        const { pool } = running;
        pool.users -= 1;
        return pool !== this.sender && pool.users === 0 ? pool.sender.close() : undefined;
      })
      .catch((error: unknown) => this.logger.error({ err: error, destination: running.id }, 'a destination lane did not stop cleanly'))
      .finally(() => this.draining.delete(drained));
    this.draining.add(drained);
    return drained;
  }

  private async stopAllLanes(): Promise<void> {
    const destinations = [...this.lanes.keys()];
    for (const running of [...this.lanes.values()]) void this.retire(running);
    if (destinations.length > 0) this.logger.info({ destinations }, 'stopping: each destination lane finishes its requests in flight');
    await Promise.all(this.draining);
  }

  /** A stopped lane's lag and retry queue depth series go away with it. */
  private forget(running: RunningLane): void {
    const { metrics } = this.deps;
    for (const topic of consumedTopics(running.topics)) metrics.consumerLag.remove({ group: this.groupId, topic });
    for (const { tier } of running.topics.retries) metrics.retryQueueDepth.remove({ destination: running.id, tier: tier.name });
  }

  /**
   * Consumer lag of the group's topics, and each retry tier's queue depth: the records
   * waiting in it, offsets that hold none (the markers of transactional moves, aborted
   * moves) left out (src/observability/record-counts.ts).
   */
  private startLagSampler(admin: KafkaAdmin): LagSampler {
    const { metrics } = this.deps;
    const retryOf = (topic: string) => {
      const running = this.laneOfTopic.get(topic);
      const retry = running?.topics.retries.find((r) => r.topic === topic);
      return running !== undefined && retry !== undefined ? { destination: running.id, tier: retry.tier.name } : undefined;
    };
    this.offsetReader = createOffsetReader(this.deps.kafka);
    return startLagSampler({
      source: admin,
      metrics,
      logger: this.logger,
      intervalMs: this.options.sampleIntervalMs,
      groups: () => [{ groupId: this.groupId, topics: [...this.laneOfTopic.keys()] }],
      // An idle deliverer of many destinations asked for thousands of log ends at every sample
      // for nothing (docs/benchmarks.md#figures-behind-the-code).
      recordsMovedAt: () => this.stream?.recordsMovedAt(),
      records: {
        of: (topic) => retryOf(topic) !== undefined,
        counter: createRecordCounter(),
        reader: recordGapReader(this.offsetReader),
        onRecords: (_group, topic, waiting) => {
          const labels = retryOf(topic);
          if (labels !== undefined) metrics.retryQueueDepth.set(labels, waiting);
        },
      },
    });
  }
}

/** What of a destination's retry policy and type its lane is built with (`stopOn` applies live, through its settings). */
function retryJsonOf(config: Config, destination: DestinationConfig): string {
  const { tiers, maxRetryWindowMs } = retryPolicyOf(config, destination);
  // NOTE: the type too: a lane sends with what its type needs (HTTP or a Kafka producer), so another type needs a new lane.
  return JSON.stringify({ tiers, maxRetryWindowMs, type: destination.type });
}

/** The /readyz detail while some enabled destinations have no lane yet (a config being applied). */
function lanelessDetail(ids: readonly string[]): string {
  const more = ids.length > 5 ? ` and ${ids.length - 5} more` : '';
  return `applying the config: no lane yet for ${ids.slice(0, 5).join(', ')}${more} (their topics are being made, or the deliverer is starting)`;
}

/** The /readyz detail while some destinations' topics could not be created. */
export function unmadeDetail(unmade: ReadonlyMap<string, string>, retryMs: number): string {
  const listed = [...unmade].slice(0, 5).map(([id, reason]) => `${id} (${reason})`);
  const more = unmade.size > listed.length ? ` and ${unmade.size - listed.length} more` : '';
  return `delivering for the other destinations; the topics of ${listed.join(', ')}${more} could not be created, trying again every ${retryMs} ms`;
}
