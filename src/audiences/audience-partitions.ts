// The partitions of `audience.events` one processor owns: their state in memory,
// restored from the changelogs when assigned, updated by batches and sweeps that run
// one after the other per partition.
import type { Logger } from 'pino';
import type { KafkaClient } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import { publish } from './audience-output.js';
import type { AudienceOutputContext } from './audience-output.js';
import { applyRecords, createPartitionState, dueProfiles, loadProfile, loadUserSources, sweepProfiles } from './engine.js';
import type { EngineOutput, PartitionState } from './engine.js';
import { restoreChangelog } from './restore.js';
import type { AudienceSet } from './rules.js';
import type { RecordBatch } from '../runtime/consumer.js';
import type { AudienceTopicNames } from '../runtime/topics.js';

export interface AudiencePartitionsOptions {
  kafka: KafkaClient;
  topics: AudienceTopicNames;
  output: AudienceOutputContext;
  metrics: Metrics;
  logger: Logger;
  /** The audiences in force now (a config reload replaces them). */
  audiences: () => AudienceSet;
  sweepChunk: number;
  now: () => number;
  /** True once the service stops: sweeps end early. */
  stopping: () => boolean;
}

type Loader = (state: PartitionState, key: string, value: string | null) => string | undefined;

export class AudiencePartitions {
  private readonly partitions = new Map<number, PartitionState>();
  private readonly assigned = new Set<number>();
  /** Bumped when a partition is assigned anew: work begun for an older assignment is dropped. */
  private readonly assignment = new Map<number, number>();
  private readonly queues = new Map<number, Promise<void>>();
  /** Restores started for an assignment and not yet taken by their partition's task. */
  private readonly restoring = new Map<number, Promise<PartitionState>>();
  private readonly reportedAudiences = new Set<string>();
  private memberId: string | undefined;

  constructor(private readonly options: AudiencePartitionsOptions) {}

  /** The partitions assigned and not restored yet. */
  unrestored(): number[] {
    return [...this.assigned].filter((p) => !this.partitions.has(p));
  }

  /** Every partition task still running (for the stop). */
  settled(): Promise<unknown> {
    return Promise.all([...this.queues.values()]);
  }

  /** Runs tasks of one partition one after the other (batches, restores and sweeps never overlap). */
  runOn<T>(partition: number, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(partition) ?? Promise.resolve();
    const result = previous.then(task);
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(partition, settled);
    void settled.then(() => {
      if (this.queues.get(partition) === settled) this.queues.delete(partition);
    });
    return result;
  }

  /** Publishes an engine step and reports the members when they may have changed. */
  async publish(state: PartitionState, out: EngineOutput): Promise<void> {
    await publish(this.options.output, state, out);
    if (out.changes.length > 0 || out.deletions.length > 0) this.reportMembers();
  }

  reportMembers(): void {
    const { metrics } = this.options;
    const set = this.options.audiences();
    const totals = new Map<string, number>(set.audiences.map((a) => [a.key, 0]));
    for (const state of this.partitions.values()) {
      for (const [audience, n] of state.members) if (totals.has(audience)) totals.set(audience, (totals.get(audience) ?? 0) + n);
    }
    for (const [audience, n] of totals) {
      metrics.audienceMembers.set({ audience }, n);
      this.reportedAudiences.add(audience);
    }
    for (const audience of this.reportedAudiences) {
      if (!totals.has(audience)) {
        metrics.audienceMembers.remove({ audience });
        this.reportedAudiences.delete(audience);
      }
    }
  }

  unload(partition: number, why: string): void {
    if (this.partitions.delete(partition)) {
      this.options.logger.debug({ partition, why }, 'audience partition unloaded');
      this.reportMembers();
    }
  }

  // ---- restore ------------------------------------------------------------------

  /**
   * Starts reading the changelog of the partitions with one consumer (one group join
   * for a whole assignment) and returns a promise per partition, settled as soon as
   * that partition has been read.
   */
  restore(list: readonly number[]): Map<number, Promise<PartitionState>> {
    const { logger, topics } = this.options;
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
    const totals = { done: 0, profiles: 0, users: 0 };
    const onPartitionDone = (partition: number) => {
      const left = (unread.get(partition) ?? 1) - 1;
      unread.set(partition, left);
      if (left > 0) return;
      const state = states.get(partition)!;
      // One info line per restore (a whole assignment), not one per partition.
      logger.debug({ partition, profiles: state.profiles.size, users: state.userSources.size, ms: Date.now() - started }, 'audience partition restored');
      totals.done += 1;
      totals.profiles += state.profiles.size;
      totals.users += state.userSources.size;
      if (totals.done === list.length) logger.info({ partitions: list.length, profiles: totals.profiles, users: totals.users, ms: Date.now() - started }, 'audience profiles restored');
      settle.get(partition)?.resolve(state);
      settle.delete(partition);
    };
    const loaders: [string, Loader][] = [
      [topics.profiles, loadProfile],
      // Users of a record not readable are left out: a deletion then misses the sources
      // they listed (logged, with the key, for an operator to look at).
      [topics.userSources, loadUserSources],
    ];
    const problems = { count: 0 };
    for (const [topic, load] of loaders) {
      this.restoreTopic(topic, list, states, load, problems, onPartitionDone).then(
        () => undefined,
        (error: unknown) => {
          for (const { reject } of settle.values()) reject(error);
        },
      );
    }
    return promises;
  }

  private restoreTopic(
    topic: string,
    list: readonly number[],
    states: Map<number, PartitionState>,
    load: Loader,
    problems: { count: number },
    onPartitionDone: (partition: number) => void,
  ): Promise<void> {
    const { logger } = this.options;
    return restoreChangelog({
      kafka: this.options.kafka,
      topic,
      partitions: list,
      logger,
      onRecord: (partition, key, value) => {
        const problem = load(states.get(partition)!, key, value);
        if (problem !== undefined) {
          problems.count += 1;
          if (problems.count <= 10) logger.error({ partition, key, error: problem }, `unreadable record in ${topic} left out: ${problem}`);
        }
      },
      onPartitionDone,
    });
  }

  /**
   * Re-evaluates every profile of the partition in chunks: first-creation syncs, rule
   * edits, removals. `restored`: the profiles were just loaded (and are counted).
   */
  async sweepAll(state: PartitionState, restored: boolean): Promise<{ profiles: number; changes: number }> {
    const { sweepChunk, now } = this.options;
    const started = Date.now();
    const keys = [...state.profiles.keys()];
    let changes = 0;
    for (let i = 0; i < keys.length; i += sweepChunk) {
      if (this.options.stopping()) return { profiles: i, changes };
      const out = sweepProfiles(state, keys.slice(i, i + sweepChunk), this.options.audiences(), now(), restored);
      await this.publish(state, out);
      changes += out.changes.length;
      // Let batches of other partitions and heartbeats through between chunks.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (restored) this.reportMembers();
    // Per partition, so debug: the restore and the config change each have an info line of their own.
    this.options.logger.debug(
      { partition: state.partition, profiles: keys.length, changes, ms: Date.now() - started, after: restored ? 'restore' : 'config change' },
      'audience partition re-evaluated',
    );
    return { profiles: keys.length, changes };
  }

  /** The partition's state, restored (and fully re-evaluated) first when this processor does not hold it. */
  async loaded(partition: number): Promise<PartitionState | undefined> {
    const have = this.partitions.get(partition);
    if (have) return have;
    if (!this.assigned.has(partition)) return undefined;
    const ticket = this.assignment.get(partition);
    const pending = this.restoring.get(partition);
    this.restoring.delete(partition);
    const state = await (pending ?? this.restore([partition]).get(partition)!);
    if (!this.assigned.has(partition) || this.assignment.get(partition) !== ticket) return undefined;
    this.partitions.set(partition, state);
    try {
      await this.sweepAll(state, true);
    } catch (error) {
      this.unload(partition, 'sweep after restore failed');
      throw error;
    }
    return state;
  }

  onAssignment(mine: readonly number[], newMemberId: string): void {
    // NOTE: a member that kept its member id took part in every generation in between
    // (one that misses a rebalance is removed and gets a new id), so partitions it
    // had and has again were nobody else's meanwhile: their state is current.
    const continuous = newMemberId === this.memberId;
    this.memberId = newMemberId;
    const next = new Set(mine);
    for (const partition of [...this.assigned]) {
      if (!next.has(partition) || !continuous) {
        this.assigned.delete(partition);
        this.assignment.set(partition, (this.assignment.get(partition) ?? 0) + 1);
        this.restoring.delete(partition);
        this.unload(partition, 'revoked');
      }
    }
    const fresh = [...next].filter((partition) => !this.assigned.has(partition));
    for (const partition of fresh) {
      this.assigned.add(partition);
      this.assignment.set(partition, (this.assignment.get(partition) ?? 0) + 1);
    }
    // Restore at once, not at the first batch: a partition with no new records still
    // owes first-creation syncs and window expiries.
    if (fresh.length > 0) for (const [partition, promise] of this.restore(fresh)) this.restoring.set(partition, promise);
    for (const partition of fresh) {
      void this.runOn(partition, () => this.loaded(partition)).catch((error: unknown) => {
        this.options.logger.error({ err: error, partition }, 'audience partition restore failed; retried at its next batch or sweep');
      });
    }
    this.options.logger.info({ partitions: [...next].sort((a, b) => a - b) }, 'audience partitions assigned');
  }

  // ---- work -----------------------------------------------------------------------

  /**
   * One batch of `audience.events`, after the partition's earlier tasks.
   * NOTE: a batch may wait long for its partition's restore; the consumer runtime
   * heartbeats meanwhile (every second), so the group keeps the member.
   */
  handleBatch(batch: RecordBatch): Promise<void> {
    return this.runOn(batch.partition, () => this.processBatch(batch));
  }

  private async processBatch(batch: RecordBatch): Promise<void> {
    const partition = batch.partition;
    const state = await this.loaded(partition);
    if (state === undefined || !batch.stillOwned()) return;
    const records = batch.records.map((r) => ({ offset: Number(r.offset), value: r.value, timestampMs: Number(r.timestamp) }));
    try {
      const out = applyRecords(state, records, this.options.audiences(), this.options.now());
      await this.publish(state, out);
    } catch (error) {
      // The in-memory profiles are ahead of what was acknowledged: forget them, so
      // the retried batch starts from the changelog.
      this.unload(partition, 'batch failed');
      throw error;
    }
    const last = batch.records[batch.records.length - 1];
    if (last !== undefined) await batch.markDone(last.offset);
  }

  /** Announces the users whose windowed events aged out, in every partition held. */
  sweepWindows(): void {
    if (this.options.stopping()) return;
    for (const partition of this.assigned) {
      void this.runOn(partition, async () => {
        const state = await this.loaded(partition);
        if (state === undefined || this.options.stopping()) return;
        try {
          const at = this.options.now();
          const due = dueProfiles(state, at);
          if (due.length > 0) await this.publish(state, sweepProfiles(state, due, this.options.audiences(), at));
        } catch (error) {
          this.unload(partition, 'sweep failed');
          throw error;
        }
      }).catch((error: unknown) => this.options.logger.error({ err: error, partition }, 'audience window sweep failed; retried at the next sweep'));
    }
  }

  /** Re-evaluates every profile of every partition held (the audiences changed), once `topicsReady`. */
  reevaluateAll(topicsReady: Promise<unknown>): void {
    const started = Date.now();
    const sweeps = [...this.assigned].map((partition) =>
      this.runOn(partition, async () => {
        await topicsReady;
        const state = await this.loaded(partition);
        if (state === undefined) return undefined;
        try {
          return await this.sweepAll(state, false);
        } catch (error) {
          // Unloaded: the next restore re-evaluates everything again.
          this.unload(partition, 'sweep after config change failed');
          throw error;
        }
      }).catch((error: unknown) => {
        this.options.logger.error({ err: error, partition }, 'audience re-evaluation failed; it runs again when the partition is restored');
        return undefined;
      }),
    );
    // One info line for the whole change, once every partition is done.
    void Promise.all(sweeps).then((results) => {
      const done = results.filter((r) => r !== undefined);
      const total = (key: 'profiles' | 'changes') => done.reduce((n, r) => n + r[key], 0);
      this.options.logger.info(
        { partitions: done.length, profiles: total('profiles'), changes: total('changes'), ms: Date.now() - started },
        'audiences re-evaluated after the config change',
      );
    });
  }
}
