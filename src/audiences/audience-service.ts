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
import { NotStartedError, TopicLayoutError } from '../errors.js';
import { createProducer, ensureTopics, topicNames } from '../kafka/index.js';
import type { Admin, Consumer, EachBatchPayload, Message, Producer, TopicMessages } from '../kafka/index.js';
import { startLagSampler } from '../kafka/lag.js';
import type { LagSampler } from '../kafka/lag.js';
import { userHashForLog } from '../observability/logger.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop, runAll } from '../runtime/service.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { applyRecords, createPartitionState, dueProfiles, loadProfile, loadUserSources, sweepProfiles } from './engine.js';
import type { EngineOutput, PartitionState } from './engine.js';
import { audienceEraseMessage, audienceTopicNames, audienceTopicSpecs } from './records.js';
import { restoreChangelog } from './restore.js';
import { compileAudiences } from './rules.js';
import type { AudienceSet } from './rules.js';

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
/** Messages per produce request: keeps each request well under the broker's size limit. */
const MAX_MESSAGES_PER_SEND = 1_000;
const MAX_BYTES_PER_SEND = 512 * 1024;
/** While a batch waits for its partition's restore, heartbeat this often so the group keeps the member. */
const WAIT_HEARTBEAT_MS = 2_000;

export function createAudienceService(deps: RoleDeps, options: AudienceServiceOptions = {}): AudienceService {
  const initial = deps.config.current();
  const logger = deps.logger.child({ component: 'audiences' });
  const now = options.now ?? Date.now;
  const sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
  const sweepChunk = options.sweepChunk ?? DEFAULT_SWEEP_CHUNK;
  // NOTE: topic prefix and client id are read once: changing them needs a restart.
  const prefix = initial.kafka.topicPrefix;
  const names = topicNames(prefix);
  const topics = audienceTopicNames(prefix);
  const groupId = `${initial.kafka.clientId}-audiences`;
  const { metrics } = deps;

  let set: AudienceSet = compileAudiences(initial);
  let shape = shapeOf(set);
  const partitions = new Map<number, PartitionState>();
  const assigned = new Set<number>();
  /** Bumped when a partition is assigned anew: work begun for an older assignment is dropped. */
  const assignment = new Map<number, number>();
  const queues = new Map<number, Promise<void>>();
  const reportedAudiences = new Set<string>();
  let memberId: string | undefined;
  let joined = false;
  let crashed: string | undefined;
  let stopping = false;
  let admin: Admin | undefined;
  let lag: LagSampler | undefined;
  let producer: Producer | undefined;
  let consumer: Consumer | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let unsubscribeConfig: (() => void) | undefined;
  const ensuredTopics = new Set<string>();

  /** Runs tasks of one partition one after the other (batches, restores and sweeps never overlap). */
  function runOn<T>(partition: number, task: () => Promise<T>): Promise<T> {
    const previous = queues.get(partition) ?? Promise.resolve();
    const result = previous.then(task);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    queues.set(partition, settled);
    void settled.then(() => {
      if (queues.get(partition) === settled) queues.delete(partition);
    });
    return result;
  }

  async function ensureDeliveryTopics(config: Config): Promise<void> {
    const wanted = [...new Set([...config.audiences.flatMap((a) => a.destinations), ...config.sources.flatMap((s) => s.destinations)])]
      .map((id) => names.deliveries(id))
      .filter((topic) => !ensuredTopics.has(topic));
    if (wanted.length === 0 || !admin) return;
    await ensureTopics(admin, wanted.map((topic) => ({ topic })), config.kafka);
    for (const topic of wanted) ensuredTopics.add(topic);
  }

  async function prepareTopics(client: Admin, config: Config): Promise<void> {
    await ensureTopics(client, audienceTopicSpecs(prefix), config.kafka);
    const metadata = await client.fetchTopicMetadata({ topics: [topics.events, topics.profiles, topics.userSources] });
    const count = (topic: string) => metadata.topics.find((t) => t.name === topic)?.partitions.length ?? 0;
    for (const changelog of [topics.profiles, topics.userSources]) {
      if (count(topics.events) !== count(changelog)) {
        // NOTE: adding partitions to audience.events moves users to other partitions,
        // whose processors do not hold their state: they would start over.
        throw new TopicLayoutError(
          `topic ${topics.events} has ${count(topics.events)} partitions but ${changelog} has ${count(changelog)}; ` +
            `partition n of the changelog holds the state of the users of partition n of the events, so the counts must be equal: ` +
            `give ${changelog} (compacted) as many partitions as ${topics.events}, then start again`,
        );
      }
    }
    await ensureDeliveryTopics(config);
  }

  // ---- output -------------------------------------------------------------

  /** Produces in requests of bounded size, one after the other, so the order per key is kept. */
  async function sendChunked(messagesByTopic: Map<string, Message[]>): Promise<void> {
    const out = producer;
    if (!out) throw new NotStartedError('audiences: producer not connected');
    const pending: TopicMessages[] = [];
    let count = 0;
    let bytes = 0;
    const flush = async () => {
      const topicMessages = pending.filter((t) => t.messages.length > 0);
      pending.length = 0;
      count = 0;
      bytes = 0;
      if (topicMessages.length > 0) await out.sendBatch({ topicMessages, acks: -1 });
    };
    for (const [topic, messages] of messagesByTopic) {
      let current: TopicMessages = { topic, messages: [] };
      pending.push(current);
      for (const message of messages) {
        if (count >= MAX_MESSAGES_PER_SEND || bytes >= MAX_BYTES_PER_SEND) {
          await flush();
          current = { topic, messages: [] };
          pending.push(current);
        }
        current.messages.push(message);
        count += 1;
        bytes += (typeof message.value === 'string' ? message.value.length : (message.value?.length ?? 0)) + 64;
      }
    }
    await flush();
  }

  /** Deliveries first, acknowledged; then the changelog. See the NOTE at the top. */
  async function publish(state: PartitionState, out: EngineOutput): Promise<void> {
    if (out.deliveries.length > 0) {
      const byTopic = new Map<string, Message[]>();
      for (const d of out.deliveries) {
        const topic = names.deliveries(d.destinationId);
        let list = byTopic.get(topic);
        if (!list) byTopic.set(topic, (list = []));
        list.push({ key: d.key, value: d.value, headers: d.headers });
      }
      await sendChunked(byTopic);
    }
    if (out.writes.size > 0 || out.sourceWrites.size > 0) {
      const changelogs = new Map<string, Message[]>();
      for (const [topic, entries] of [
        [topics.profiles, out.writes],
        [topics.userSources, out.sourceWrites],
      ] as const) {
        const writes: Message[] = [];
        for (const [key, value] of entries) {
          const deletedAt = topic === topics.userSources ? out.deletedAt.get(key) : undefined;
          writes.push({ key, value, partition: state.partition, ...(deletedAt !== undefined ? { timestamp: String(deletedAt) } : {}) });
        }
        if (writes.length > 0) changelogs.set(topic, writes);
      }
      await sendChunked(changelogs);
    }
    for (const { audience, change } of out.changes) metrics.audienceChanges.inc({ audience, change });
    if (out.repeats > 0) {
      logger.debug({ partition: state.partition, repeats: out.repeats }, 'dropped audience records the router wrote again after a restart');
    }
    for (const problem of out.problems) {
      if (problem.offset !== undefined) {
        logger.error(
          { topic: topics.events, partition: state.partition, offset: problem.offset, error: problem.error },
          `audience record skipped: ${problem.error}; it stays in ${topics.events} for inspection (only the router should write there)`,
        );
      } else {
        logger.error(
          { topic: topics.profiles, partition: state.partition, key: problem.key, error: problem.error },
          `audience profile unreadable in ${topics.profiles}, so left out (the user counts as new): ${problem.error}`,
        );
      }
    }
    for (const deletion of out.deletions) {
      const erased = deletion.hadProfile ? 'audience state erased' : 'no audience state to erase';
      if (deletion.result !== undefined) metrics.deletions.inc({ result: deletion.result });
      if (deletion.kind === 'erase') {
        logger.info({ userHash: userHashForLog(deletion.userId) }, `deleted user: ${erased}`);
      } else if (deletion.result === 'no_affected_source') {
        // NOTE: no user id at info (personal data); the request's place in the topic finds it.
        logger.info(
          { topic: topics.events, partition: state.partition, offset: deletion.offset, affectedSources: deletion.affectedSources },
          `deletion request: no delete sent, no source with an enabled destination has seen the user; ${erased}`,
        );
      } else {
        logger.info(
          { userHash: userHashForLog(deletion.userId), affectedSources: deletion.affectedSources, destinations: deletion.destinations },
          `deletion request done: ${deletion.destinations.length} delete bod${deletion.destinations.length === 1 ? 'y' : 'ies'} queued, ${erased}`,
        );
      }
      if (deletion.unknownSources.length > 0) {
        logger.warn({ userHash: userHashForLog(deletion.userId), unknownSources: deletion.unknownSources }, 'deletion request names sources that are not configured; they were skipped');
      }
    }
    if (out.changes.length > 0 || out.deletions.length > 0) reportMembers();
  }

  function reportMembers(): void {
    const totals = new Map<string, number>(set.audiences.map((a) => [a.key, 0]));
    for (const state of partitions.values()) {
      for (const [audience, n] of state.members) if (totals.has(audience)) totals.set(audience, (totals.get(audience) ?? 0) + n);
    }
    for (const [audience, n] of totals) {
      metrics.audienceMembers.set({ audience }, n);
      reportedAudiences.add(audience);
    }
    for (const audience of reportedAudiences) {
      if (!totals.has(audience)) {
        metrics.audienceMembers.remove({ audience });
        reportedAudiences.delete(audience);
      }
    }
  }

  // ---- partitions -----------------------------------------------------------

  function unload(partition: number, why: string): void {
    if (partitions.delete(partition)) {
      logger.debug({ partition, why }, 'audience partition unloaded');
      reportMembers();
    }
  }

  /**
   * Starts reading the changelog of the partitions with one consumer (one group join
   * for a whole assignment) and returns a promise per partition, settled as soon as
   * that partition has been read.
   */
  function restore(list: readonly number[]): Map<number, Promise<PartitionState>> {
    const started = Date.now();
    const states = new Map(list.map((partition) => [partition, createPartitionState(partition)]));
    // Each partition is done when both of its changelogs are read.
    const unread = new Map(list.map((partition) => [partition, 2]));
    const settle = new Map<number, { resolve: (state: PartitionState) => void; reject: (error: unknown) => void }>();
    const promises = new Map<number, Promise<PartitionState>>();
    for (const partition of list) {
      const promise = new Promise<PartitionState>((resolve, reject) => settle.set(partition, { resolve, reject }));
      // A partition revoked before its turn never awaits its promise: keep a failure from going unhandled.
      promise.catch(() => undefined);
      promises.set(partition, promise);
    }
    let problems = 0;
    let done = 0;
    let profiles = 0;
    let users = 0;
    const onPartitionDone = (partition: number) => {
      const left = (unread.get(partition) ?? 1) - 1;
      unread.set(partition, left);
      if (left > 0) return;
      const state = states.get(partition)!;
      // One info line per restore (a whole assignment), not one per partition.
      logger.debug({ partition, profiles: state.profiles.size, users: state.userSources.size, ms: Date.now() - started }, 'audience partition restored');
      done += 1;
      profiles += state.profiles.size;
      users += state.userSources.size;
      if (done === list.length) logger.info({ partitions: list.length, profiles, users, ms: Date.now() - started }, 'audience profiles restored');
      settle.get(partition)?.resolve(state);
      settle.delete(partition);
    };
    const loaders: [string, (state: PartitionState, key: string, value: string | null) => string | undefined][] = [
      [topics.profiles, loadProfile],
      // Users of a record not readable are left out: a deletion then misses the sources
      // they listed (logged, with the key, for an operator to look at).
      [topics.userSources, loadUserSources],
    ];
    for (const [topic, load] of loaders) {
      restoreChangelog({
        kafka: deps.kafka,
        topic,
        partitions: list,
        groupPrefix: groupId,
        logger,
        onRecord: (partition, key, value) => {
          const problem = load(states.get(partition)!, key, value);
          if (problem !== undefined) {
            problems += 1;
            if (problems <= 10) logger.error({ partition, key, error: problem }, `unreadable record in ${topic} left out: ${problem}`);
          }
        },
        onPartitionDone,
      }).then(
        () => undefined,
        (error: unknown) => {
          for (const { reject } of settle.values()) reject(error);
        },
      );
    }
    return promises;
  }

  /** Restores started for an assignment and not yet taken by their partition's task. */
  const restoring = new Map<number, Promise<PartitionState>>();

  /**
   * Re-evaluates every profile of the partition in chunks: first-creation syncs, rule
   * edits, removals. `restored`: the profiles were just loaded (and are counted).
   */
  async function sweepAll(state: PartitionState, restored: boolean): Promise<{ profiles: number; changes: number }> {
    const started = Date.now();
    const keys = [...state.profiles.keys()];
    let changes = 0;
    for (let i = 0; i < keys.length; i += sweepChunk) {
      if (stopping) return { profiles: i, changes };
      const out = sweepProfiles(state, keys.slice(i, i + sweepChunk), set, now(), restored);
      await publish(state, out);
      changes += out.changes.length;
      // Let batches of other partitions and heartbeats through between chunks.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (restored) reportMembers();
    // Per partition, so debug: the restore and the config change each have an info line of their own.
    logger.debug(
      { partition: state.partition, profiles: keys.length, changes, ms: Date.now() - started, after: restored ? 'restore' : 'config change' },
      'audience partition re-evaluated',
    );
    return { profiles: keys.length, changes };
  }

  /** The partition's state, restored (and fully re-evaluated) first when this processor does not hold it. */
  async function loaded(partition: number): Promise<PartitionState | undefined> {
    const have = partitions.get(partition);
    if (have) return have;
    if (!assigned.has(partition)) return undefined;
    const ticket = assignment.get(partition);
    const pending = restoring.get(partition);
    restoring.delete(partition);
    const state = await (pending ?? restore([partition]).get(partition)!);
    if (!assigned.has(partition) || assignment.get(partition) !== ticket) return undefined;
    partitions.set(partition, state);
    try {
      await sweepAll(state, true);
    } catch (error) {
      unload(partition, 'sweep after restore failed');
      throw error;
    }
    return state;
  }

  function onAssignment(mine: readonly number[], newMemberId: string): void {
    // NOTE: a member that kept its member id took part in every generation in between
    // (one that misses a rebalance is removed and gets a new id), so partitions it
    // had and has again were nobody else's meanwhile: their state is current.
    const continuous = newMemberId === memberId;
    memberId = newMemberId;
    const next = new Set(mine);
    for (const partition of [...assigned]) {
      if (!next.has(partition) || !continuous) {
        assigned.delete(partition);
        assignment.set(partition, (assignment.get(partition) ?? 0) + 1);
        restoring.delete(partition);
        unload(partition, 'revoked');
      }
    }
    const fresh = [...next].filter((partition) => !assigned.has(partition));
    for (const partition of fresh) {
      assigned.add(partition);
      assignment.set(partition, (assignment.get(partition) ?? 0) + 1);
    }
    // Restore at once, not at the first batch: a partition with no new records still
    // owes first-creation syncs and window expiries.
    if (fresh.length > 0) for (const [partition, promise] of restore(fresh)) restoring.set(partition, promise);
    for (const partition of fresh) {
      void runOn(partition, () => loaded(partition)).catch((error: unknown) => {
        logger.error({ err: error, partition }, 'audience partition restore failed; retried at its next batch or sweep');
      });
    }
    joined = true;
    logger.info({ partitions: [...next].sort((a, b) => a - b) }, 'audience partitions assigned');
  }

  // ---- work -----------------------------------------------------------------

  async function processBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const partition = batch.partition;
    const state = await loaded(partition);
    if (state === undefined || !payload.isRunning() || payload.isStale()) return;
    const records = batch.messages.map((m) => ({ offset: Number(m.offset), value: m.value, timestampMs: Number(m.timestamp) }));
    let out: EngineOutput;
    try {
      out = applyRecords(state, records, set, now());
      await publish(state, out);
    } catch (error) {
      // The in-memory profiles are ahead of what was acknowledged: forget them, so
      // the retried batch starts from the changelog.
      unload(partition, 'batch failed');
      throw error;
    }
    const last = batch.messages[batch.messages.length - 1];
    if (last === undefined) return;
    await consumer?.commitOffsets([{ topic: batch.topic, partition, offset: (BigInt(last.offset) + 1n).toString() }]);
    payload.resolveOffset(last.offset);
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const work = runOn(payload.batch.partition, () => processBatch(payload));
    await whileHeartbeating(work, payload.heartbeat);
  }

  function sweepWindows(): void {
    if (stopping) return;
    for (const partition of assigned) {
      void runOn(partition, async () => {
        const state = await loaded(partition);
        if (state === undefined || stopping) return;
        try {
          const at = now();
          const due = dueProfiles(state, at);
          if (due.length > 0) await publish(state, sweepProfiles(state, due, set, at));
        } catch (error) {
          unload(partition, 'sweep failed');
          throw error;
        }
      }).catch((error: unknown) => logger.error({ err: error, partition }, 'audience window sweep failed; retried at the next sweep'));
    }
  }

  function onConfigChange(next: Config): void {
    const nextSet = compileAudiences(next);
    const nextShape = shapeOf(nextSet);
    set = nextSet;
    if (nextShape === shape) return;
    shape = nextShape;
    logger.info({ audiences: nextSet.audiences.map((a) => a.key) }, 'audiences changed; re-evaluating every profile');
    reportMembers();
    const topicsReady = ensureDeliveryTopics(next);
    const started = Date.now();
    const sweeps = [...assigned].map((partition) =>
      runOn(partition, async () => {
        await topicsReady;
        const state = await loaded(partition);
        if (state === undefined) return undefined;
        try {
          return await sweepAll(state, false);
        } catch (error) {
          // Unloaded: the next restore re-evaluates everything again.
          unload(partition, 'sweep after config change failed');
          throw error;
        }
      }).catch((error: unknown) => {
        logger.error({ err: error, partition }, 'audience re-evaluation failed; it runs again when the partition is restored');
        return undefined;
      }),
    );
    // One info line for the whole change, once every partition is done.
    void Promise.all(sweeps).then((results) => {
      const done = results.filter((r) => r !== undefined);
      const total = (key: 'profiles' | 'changes') => done.reduce((n, r) => n + r[key], 0);
      logger.info(
        { partitions: done.length, profiles: total('profiles'), changes: total('changes'), ms: Date.now() - started },
        'audiences re-evaluated after the config change',
      );
    });
  }

  const stop = onceStop(async () => {
    stopping = true;
    if (sweepTimer) clearInterval(sweepTimer);
    unsubscribeConfig?.();
    // The router stops before this service (it is listed after it), so no erase
    // request arrives once the producer is gone.
    await runAll([
      async () => lag?.stop(),
      async () => consumer?.disconnect(),
      async () => Promise.all([...queues.values()]),
      async () => producer?.disconnect(),
      async () => admin?.disconnect(),
    ]);
  });

  return {
    name: 'audiences',
    async eraseUser(userId, sourceIds) {
      if (!producer) throw new NotStartedError('audiences: eraseUser called before start()');
      await producer.send({ topic: topics.events, acks: -1, messages: [audienceEraseMessage(userId, sourceIds)] });
    },
    async start() {
      admin = deps.kafka.admin();
      await admin.connect();
      await prepareTopics(admin, initial);
      producer = createProducer(deps.kafka);
      await producer.connect();
      consumer = deps.kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        onAssignment(event.payload.memberAssignment[topics.events] ?? [], event.payload.memberId);
      });
      consumer.on(consumer.events.CRASH, (event) => {
        if (!event.payload.restart) crashed = String(event.payload.error);
        // A crash kafkajs restarts from (a coordinator still loading at start-up) is a warning, as in the router.
        const level = event.payload.restart ? 'warn' : 'error';
        logger[level]({ err: event.payload.error, restart: event.payload.restart }, event.payload.restart ? 'audience consumer crashed; kafkajs restarts it' : 'audience consumer crashed and will not restart');
      });
      await consumer.connect();
      await consumer.subscribe({ topic: topics.events, fromBeginning: true });
      await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });
      unsubscribeConfig = deps.config.onChange((next) => onConfigChange(next));
      sweepTimer = setInterval(sweepWindows, sweepIntervalMs);
      sweepTimer.unref();
      lag = startLagSampler({ admin, metrics, logger, intervalMs: LAG_INTERVAL_MS, groups: () => [{ groupId, topics: [topics.events] }] });
      logger.info({ topic: topics.events, groupId, audiences: set.audiences.map((a) => a.key), sweepIntervalMs }, 'audience processor started');
    },
    stop,
    health(): ServiceHealth {
      if (crashed !== undefined) return { live: false, ready: false, detail: `audience consumer crashed: ${crashed}` };
      const unrestored = [...assigned].filter((p) => !partitions.has(p));
      if (!joined) return { live: true, ready: false, detail: 'audience consumer has not joined its group yet' };
      if (unrestored.length > 0) return { live: true, ready: false, detail: `restoring audience partitions ${unrestored.join(', ')}` };
      return { live: true, ready: true };
    },
  };
}

/** What makes a full re-evaluation necessary: the audiences themselves (not destinations' switches). */
function shapeOf(set: AudienceSet): string {
  return JSON.stringify(set.audiences.map((a) => [a.key, a.fingerprint]));
}

/** Awaits `work`, heartbeating the group meanwhile so a long restore does not cost the membership. */
async function whileHeartbeating<T>(work: Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
  const tick = Symbol('tick');
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const ticked = new Promise<typeof tick>((resolve) => {
      timer = setTimeout(resolve, WAIT_HEARTBEAT_MS, tick);
    });
    const result = await Promise.race([work.then((value) => ({ value })), ticked]);
    clearTimeout(timer);
    if (result !== tick) return result.value;
    await heartbeat();
  }
}
