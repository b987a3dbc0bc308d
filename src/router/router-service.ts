// `switchyard router`: consumes `<prefix>calls` and `<prefix>deletions`, writes one
// webhook body per routed destination to `<prefix>deliveries.<id>` (and what it
// cannot use to `<prefix>calls.invalid`), and commits a batch's offsets only after
// every record it wrote for that batch is acknowledged. The lifecycle is the
// consumer-service runtime's; the batches are handled by RouterBatch (router-batch.ts).
import type { Config } from '../config/schema.js';
import type { Logger } from 'pino';
import { randomBytes } from 'node:crypto';
import { MAX_TOPIC_BYTES_PER_SEND, createTransactionalProducer } from '../kafka/index.js';
import type { TransactionalProducer } from '../kafka/index.js';
import { createConsumerService } from '../runtime/consumer-service.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop } from '../runtime/service.js';
import type { Service } from '../runtime/service.js';
import type { AudienceHook } from './audience-hook.js';
import { CallMemory } from './dedupe/call-memory.js';
import { hashId } from './dedupe/id-window.js';
import { createPartitionReader } from './dedupe/partition-reader.js';
import { callIdentity } from './plan-call.js';
import { RouterBatch } from './router-batch.js';
import type { DeletionHook, RouterBatchContext } from './router-batch.js';
import { compileRoutingTable } from './routing-table.js';
import type { RoutingTable } from './routing-table.js';
import { ShapingErrorLog } from './shaping-errors.js';
import { groupPrefixOf, legacyGroupIds, routerGroupId } from '../runtime/group-ids.js';
import type { CommitPolicy, ConsumerSettings, RecordBatch } from '../runtime/consumer.js';
import { GroupedTransactions } from '../runtime/grouped-transactions.js';
import { createTopology } from '../runtime/topology.js';
import type { TopicEnsurer, Topology } from '../runtime/topology.js';
import type { TopicNames } from '../runtime/topics.js';

export type { DeletionHook } from './router-batch.js';

/** Consumer and send settings; the defaults suit production, the benchmark shares them with its baseline. */
export interface RouterTuning {
  /** How much one fetch takes from one partition (the Fetch request's `partition_max_bytes`). */
  maxBytesPerPartition: number;
  /** How much one fetch takes in all (the Fetch request's `max_bytes`). */
  maxBytes: number;
  /** How long an idle fetch waits on the broker (the Fetch request's `max_wait_ms`); also bounds how long stop() waits for it. */
  maxWaitTimeInMs: number;
  /** How much a fetch waits for, up to `maxWaitTimeInMs` (the Fetch request's `min_bytes`). */
  minBytes: number;
  /** Partitions whose batches are routed at once. */
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
  // NOTE: a fetch is answered once 64 KiB wait for it, or after 50 ms. With the default
  // (answer with the first record), a router keeping up with a steady stream fetched
  // once per gateway write: a few calls per fetch, each batch one produce and one
  // commit, and the broker spent more CPU per event than Switchyard did (gateway bench,
  // steady load). At bulk rates 64 KiB is there at once; below about 1,300 calls a
  // second a call waits up to 50 ms longer. An idle router fetches 20 times a second.
  maxWaitTimeInMs: 50,
  minBytes: 64 * 1024,
  // NOTE: three partitions' batches at once, so one batch is routed while another waits
  // for its acks and commit (each partition's batches still run one after the other, in
  // order). Measured with `npm run bench -- route`, 1 → 3 cut the router's time; the
  // gain comes from overlapping, so more adds little on two cores, and
  // each batch in hand holds its input and its output in memory. The price: a router
  // killed mid-way routes up to three uncommitted batches again instead of one, so more
  // duplicates after a SIGKILL, nothing lost either way (chaos full profile; figures of
  // both: docs/benchmarks.md#figures-behind-the-code).
  partitionsConsumedConcurrently: 3,
  maxTopicBytesPerSend: MAX_TOPIC_BYTES_PER_SEND,
  lagIntervalMs: 15_000,
};

export interface RouterDeps extends RoleDeps {
  onDeletion?: DeletionHook;
  /**
   * AUDIENCES HOOK (audience-hook.ts, implemented by src/audiences/router-hook.ts): a record to write for each valid
   * call (its audience record, or a `seen` record for a new user-source pair), sent
   * with the call's deliveries, so it is acknowledged before the offset is committed;
   * and the hand-over of deletion requests without `sourceIds` to the audience
   * processor, which knows the sources that have seen the user. Without it, such a
   * request goes to every source's destinations.
   */
  audiences?: AudienceHook;
  tuning?: Partial<RouterTuning>;
}

/** The router's consumer group (`<groupPrefix>router`): named with every other group in src/runtime/group-ids.ts. */
export { routerGroupId } from '../runtime/group-ids.js';

/** The router's topics and routing table, following config reloads. */
class RouterConfig {
  readonly names: TopicNames;
  private topics: TopicEnsurer | undefined;
  private table: RoutingTable | undefined;

  constructor(
    private readonly deps: RouterDeps,
    private readonly topology: Topology,
    private readonly logger: Logger,
  ) {
    this.names = topology.names;
  }

  /** Once connected: where topics are created from. */
  connect(topics: TopicEnsurer): void {
    this.topics = topics;
  }

  /** Creates the topics `config` needs that this process has not seen yet. */
  async ensureTopicsFor(config: Config): Promise<void> {
    const created = await this.topics!.ensure(this.topology.router(config), config);
    if (created.length > 0) this.logger.info({ topics: created }, `created ${created.length} topic(s)`);
  }

  /**
   * The routing table for the config in force now. Read per batch, so a reload
   * applies from the next batch; its topics exist before anything is routed to them.
   */
  async routingTable(): Promise<RoutingTable> {
    const config = this.deps.config.current();
    if (this.table?.config !== config) {
      await this.ensureTopicsFor(config);
      this.table = compileRoutingTable(config, this.names);
    }
    return this.table;
  }

  onConfigChange(next: Config, previous: Config): void {
    const { logger } = this;
    if (JSON.stringify(next.kafka) !== JSON.stringify(previous.kafka)) {
      logger.warn('kafka settings changed in the config; the router keeps its current ones until it is restarted');
    }
    logger.info({ sources: next.sources.length, destinations: next.destinations.length }, 'routing config reloaded; it applies from the next batch');
    // Eagerly, so a new destination's topics exist before its first call arrives;
    // the batch path ensures them again (and waits) if this failed.
    this.ensureTopicsFor(next).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not create the topics of the new config yet; will retry with the next batch');
    });
  }
}

/** The router's consumer: its group on `calls` and `deletions`, with the tuning's fetch settings (the benchmark's baselines use it too). */
export function routerConsumerSettings(groupId: string, topics: string[], tuning: RouterTuning, commit: CommitPolicy = { kind: 'batch-end' }): ConsumerSettings {
  return {
    groupId,
    topics,
    fromBeginning: true,
    commit,
    maxBytesPerPartition: tuning.maxBytesPerPartition,
    maxBytes: tuning.maxBytes,
    maxWaitTimeInMs: tuning.maxWaitTimeInMs,
    minBytes: tuning.minBytes,
    partitionsConsumedConcurrently: tuning.partitionsConsumedConcurrently,
  };
}

export function createRouterService(deps: RouterDeps): Service {
  const logger = deps.logger.child({ component: 'router' });
  const tuning: RouterTuning = { ...ROUTER_TUNING, ...deps.tuning };
  // NOTE: topic names and the group come from the config at construction. A reload
  // that changes `kafka` is refused (logged): moving a running consumer to other
  // topics is a restart's job.
  const initial = deps.config.current();
  const topology = createTopology(initial.kafka.topicPrefix);
  const routing = new RouterConfig(deps, topology, logger);
  const groupId = routerGroupId(initial);
  const consumed = [routing.names.calls, routing.names.deletions];
  const shapingErrors = new ShapingErrorLog(logger);
  // NOTE: the window is read at start, as the memory it sizes is built at assignment.
  const dedupeWindowMs = initial.router.dedupeWindowMs;
  const callsReader = dedupeWindowMs > 0 ? createPartitionReader(deps.kafka, routing.names.calls) : undefined;
  const dedupe =
    callsReader === undefined
      ? undefined
      : new CallMemory({
          windowMs: dedupeWindowMs,
          read: callsReader.read,
          logger,
        });

  const transactional = routerTransactions(deps, initial);
  const service = createConsumerService({
    name: 'router',
    consumerLabel: 'router consumer',
    deps,
    logger,
    topics: (config) => topology.router(config),
    consumer: routerConsumerSettings(groupId, consumed, tuning, transactional?.commit),
    upgradeFrom: [legacyGroupIds.router(initial)],
    // NOTE: one send in flight; the batches that finish meanwhile leave together as one
    // request when it is acknowledged (the client sends one request at a time per broker
    // anyway: src/kafka/producer.ts, ProducerOptions.maxConcurrentSends).
    producer: { maxConcurrentSends: 1, maxTopicBytesPerSend: tuning.maxTopicBytesPerSend },
    lag: { intervalMs: tuning.lagIntervalMs },
    handler: (connected) => {
      routing.connect(connected.topics);
      const context: RouterBatchContext = {
        names: routing.names,
        producer: connected.producer,
        metrics: deps.metrics,
        logger,
        maxTopicBytesPerSend: tuning.maxTopicBytesPerSend,
        shapingErrors,
        ...(deps.onDeletion ? { onDeletion: deps.onDeletion } : {}),
        ...(deps.audiences ? { audiences: deps.audiences } : {}),
        ...(dedupe ? { dedupe } : {}),
      };
      return async (batch: RecordBatch) => {
        const table = await routing.routingTable();
        const first = batch.records[0];
        if (dedupe !== undefined && first !== undefined && batch.topic === routing.names.calls) {
          await dedupe.prepare(batch.partition, BigInt(first.offset), (record) => {
            const id = callIdentity({ ...record, topic: batch.topic, offset: record.offset.toString() }, table);
            return id === undefined ? undefined : hashId(id.source, id.messageId);
          });
        }
        return new RouterBatch(context, batch, table).run();
      };
    },
    onJoin: (assignment) => {
      dedupe?.keepOnly(assignment[routing.names.calls] ?? []);
      logger.info({ groupId, assignment }, 'router joined its consumer group');
    },
    onConfigChange: (next, previous) => routing.onConfigChange(next, previous),
  });

  return {
    name: service.name,
    async start() {
      await transactional?.producer.connect();
      await service.start();
      logger.info({ groupId, topics: consumed, transactionalId: transactional?.producer.transactionalId }, 'router started');
    },
    stop: onceStop(async () => {
      await service.stop();
      await transactional?.producer.close();
      await callsReader?.close();
      logger.info('router stopped');
    }),
    health: () => service.health(),
  };
}

/** How long a transaction takes in more batches after it opened (GroupedTransactions): a few ms, so that batches finishing together share it. */
const TRANSACTION_OPEN_MS = 20;

/**
 * The router's transactional producer and commit policy (kafka.transactions, on by
 * default; docs/kafka.md#transactions). One transactional id per router process,
 * `<groupPrefix>router.<random>`: zombies are fenced by the group's generation
 * (TxnOffsetCommit, KIP-447), not by the id, so the id need not follow the partitions;
 * the prefix is the deployment's (one TransactionalId ACL per deployment).
 */
function routerTransactions(deps: RouterDeps, config: Config): { producer: TransactionalProducer; commit: CommitPolicy } | undefined {
  if (config.kafka.transactions === false) return undefined;
  const producer = createTransactionalProducer(deps.kafka, { transactionalId: `${groupPrefixOf(config)}router.${randomBytes(6).toString('hex')}` });
  return { producer, commit: { kind: 'transaction', transactions: new GroupedTransactions(producer, { maxOpenMs: TRANSACTION_OPEN_MS }) } };
}
