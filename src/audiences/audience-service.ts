// The audience processor: part of the router role. It consumes `audience.events`
// (calls and deletion requests re-keyed by identity), keeps the profiles of the
// partitions it owns in memory, announces membership changes as identifies on the
// destinations' delivery topics, and keeps its state in the compacted changelog
// `audience.profiles`, restored whenever it is assigned a partition. It keeps the
// seen sources of the users (`user.sources`, compacted, key userId) the same way, and
// carries out the deletion requests without `sourceIds` that the router hands it:
// delete bodies to the sources that have seen the user, then the user's state erased.
//
// NOTE: the order of each step is what makes it crash-safe:
//   1. produce the identifies / delete bodies, await acks=all;
//   2. produce the changed profiles (with the offset of the last record applied) and
//      the changed seen sources (tombstones of deleted users among them);
//   3. commit the `audience.events` offsets.
// A crash before 2 recomputes the same changes from the old profile, with the same
// messageIds (receivers de-duplicate); a crash before 3 replays records that the
// written profiles already cover, which are skipped. Nothing is lost either way.
import type { Config } from '../config/schema.js';
import { TopicLayoutError } from '../errors.js';
import { createConsumerService } from '../runtime/consumer-service.js';
import type { ConsumerContext } from '../runtime/consumer-service.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop } from '../runtime/service.js';
import type { Service } from '../runtime/service.js';
import { AudiencePartitions } from './audience-partitions.js';
import { audienceEraseMessage } from './records.js';
import { compileAudiences } from './rules.js';
import type { AudienceSet } from './rules.js';
import { audiencesGroupId, legacyGroupIds } from '../runtime/group-ids.js';
import { createTopology } from '../runtime/topology.js';

export interface AudienceServiceOptions {
  /**
   * How often profiles are checked for a windowed event that aged out (a user
   * leaving an `event … within` audience with no new call). Such a change is
   * announced at most this late. Default 60 s.
   */
  sweepIntervalMs?: number;
  /** Profiles re-evaluated per step of a full sweep (after a restore or a config change). */
  sweepChunk?: number;
  /** The clock rules are judged at. */
  now?: () => number;
}

export interface AudienceService extends Service {
  /**
   * Erases a deleted user's audience state and drops `sourceIds` (all when absent)
   * from the user's seen sources: writes an erase record to `audience.events`, keyed
   * by userId so it is ordered with the user's calls, and resolves once it is
   * acknowledged (the router's deletion hook; idempotent).
   */
  eraseUser(userId: string, sourceIds?: readonly string[]): Promise<void>;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 60_000;
const LAG_INTERVAL_MS = 15_000;
const DEFAULT_SWEEP_CHUNK = 2_000;

/**
 * The partition counts of the changelogs must equal that of the events.
 * NOTE: adding partitions to audience.events moves users to other partitions,
 * whose processors do not hold their state: they would start over.
 */
async function checkPartitionCounts(context: ConsumerContext, topics: { events: string; profiles: string; userSources: string }): Promise<void> {
  const counts = await context.admin.partitionCounts([topics.events, topics.profiles, topics.userSources]);
  const count = (topic: string) => counts.get(topic) ?? 0;
  for (const changelog of [topics.profiles, topics.userSources]) {
    if (count(topics.events) !== count(changelog)) {
      throw new TopicLayoutError(
        `topic ${topics.events} has ${count(topics.events)} partitions but ${changelog} has ${count(changelog)}; ` +
          `partition n of the changelog holds the state of the users of partition n of the events, so the counts must be equal: ` +
          `give ${changelog} (compacted) as many partitions as ${topics.events}, then start again`,
      );
    }
  }
}

export function createAudienceService(deps: RoleDeps, options: AudienceServiceOptions = {}): AudienceService {
  const initial = deps.config.current();
  const logger = deps.logger.child({ component: 'audiences' });
  const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  // NOTE: topic and group prefixes are read once: changing them needs a restart.
  const topology = createTopology(initial.kafka.topicPrefix);
  const topics = topology.audiences;
  const groupId = audiencesGroupId(initial);

  const audiences = new AudiencesInForce(initial);
  let stopping = false;
  let sweepTimer: NodeJS.Timeout | undefined;
  let context: ConsumerContext | undefined;
  const partitions = new AudiencePartitions({
    kafka: deps.kafka,
    topics,
    output: { names: topology.names, topics, producer: () => service.producer(), metrics: deps.metrics, logger },
    metrics: deps.metrics,
    logger,
    audiences: () => audiences.set,
    sweepChunk: options.sweepChunk ?? DEFAULT_SWEEP_CHUNK,
    now: options.now ?? Date.now,
    stopping: () => stopping,
  });

  const ensureDeliveryTopics = (config: Config): Promise<unknown> => context!.topics.ensure(topology.audienceDeliveries(config), config);

  function onConfigChange(next: Config): void {
    if (!audiences.update(next)) return;
    logger.info({ audiences: audiences.keys() }, 'audiences changed; re-evaluating every profile');
    partitions.reportMembers();
    partitions.reevaluateAll(ensureDeliveryTopics(next));
  }

  const service = createConsumerService({
    name: 'audiences',
    consumerLabel: 'audience consumer',
    deps,
    logger,
    topics: () => topology.audienceState(),
    consumer: { groupId, topics: [topics.events], fromBeginning: true, commit: { kind: 'batch-end' }, maxWaitTimeInMs: 500 },
    upgradeFrom: [legacyGroupIds.audiences(initial)],
    lag: { intervalMs: LAG_INTERVAL_MS },
    async prepare(connected) {
      context = connected;
      await checkPartitionCounts(connected, topics);
      await ensureDeliveryTopics(initial);
      sweepTimer = setInterval(() => partitions.sweepWindows(), sweepIntervalMs);
      sweepTimer.unref();
    },
    handler: () => (batch) => partitions.handleBatch(batch),
    onJoin: (assignment, memberId) => partitions.onAssignment(assignment[topics.events] ?? [], memberId),
    onConfigChange: (next) => onConfigChange(next),
    onStopping() {
      stopping = true;
      if (sweepTimer) clearInterval(sweepTimer);
    },
    // The router stops before this service (it is listed after it), so no erase
    // request arrives once the producer is gone.
    afterConsumer: () => partitions.settled(),
    notReady() {
      const unrestored = partitions.unrestored();
      return unrestored.length > 0 ? `restoring audience partitions ${unrestored.join(', ')}` : undefined;
    },
  });

  return {
    name: service.name,
    async eraseUser(userId, sourceIds) {
      await service.producer().send([{ topic: topics.events, messages: [audienceEraseMessage(userId, sourceIds)] }]);
    },
    async start() {
      await service.start();
      logger.info({ topic: topics.events, groupId, audiences: audiences.keys(), sweepIntervalMs }, 'audience processor started');
    },
    stop: onceStop(() => service.stop()),
    health: () => service.health(),
  };
}

/** The audiences of the config in force, compiled. */
class AudiencesInForce {
  set: AudienceSet;
  private shape: string;

  constructor(config: Config) {
    this.set = compileAudiences(config);
    this.shape = shapeOf(this.set);
  }

  /** Takes the audiences of `next`; true when they changed in shape, so every profile is to be re-evaluated. */
  update(next: Config): boolean {
    this.set = compileAudiences(next);
    const shape = shapeOf(this.set);
    if (shape === this.shape) return false;
    this.shape = shape;
    return true;
  }

  keys(): string[] {
    return this.set.audiences.map((a) => a.key);
  }
}

/** What makes a full re-evaluation necessary: the audiences themselves (not destinations' switches). */
function shapeOf(set: AudienceSet): string {
  return JSON.stringify(set.audiences.map((a) => [a.key, a.fingerprint]));
}
