// The partition stream's upgrade from older group names (partition-stream.ts,
// `legacyGroupOf`): a partition the stream's group never committed starts where the
// first older group that committed it stopped. The walk down each partition's chain of
// older groups is LegacyChain (pure, unit-tested); LegacyCarry asks the broker.
// (Roles that consume in batches carry once, before they join: group-upgrade.ts.)
import type { Logger } from 'pino';
import { isGroupNotAuthorized } from './admin.js';
import type { GroupOffset, KafkaAdmin } from './admin.js';
import { partitionKey as keyOf } from './partition-key.js';

type GroupCommits = readonly { topic: string; partitions: readonly GroupOffset[] }[];

/** Partitions of one topic, as a group's commits are asked for. */
export interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** An older group's commit of a partition, to start the partition from. */
export interface LegacyCommit {
  topic: string;
  partition: number;
  offset: string;
  metadata: string | null;
}

/**
 * The walk down the chains of older groups, a step at a time: at step n, each partition
 * still without a commit asks the n-th group of its chain (`chainOf(topic)`, most recent
 * first); a partition whose group answered with a commit is done. Pure.
 */
export class LegacyChain {
  private left: { topic: string; partition: number; chain: readonly string[] }[];
  private step = -1;
  /** The partitions asked at the current step. */
  private wanted = new Set<string>();
  /** The partitions carried at the current step. */
  private readonly found = new Set<string>();

  constructor(fresh: readonly { topic: string; partition: number }[], chainOf: (topic: string) => readonly string[]) {
    this.left = fresh.map((f) => ({ ...f, chain: chainOf(f.topic) }));
  }

  /**
   * The next step's questions: group → the partitions it is asked for, by topic.
   * Undefined once every partition has its commit or has no older group left to ask.
   */
  nextStep(): Map<string, TopicPartitions[]> | undefined {
    if (this.step >= 0) this.left = this.left.filter((f) => !this.found.has(keyOf(f.topic, f.partition)));
    this.step += 1;
    const asked = this.left.filter((f) => f.chain[this.step] !== undefined);
    this.left = asked;
    this.wanted = new Set(asked.map((f) => keyOf(f.topic, f.partition)));
    this.found.clear();
    if (asked.length === 0) return undefined;
    const byGroup = new Map<string, Map<string, number[]>>();
    for (const { topic, partition, chain } of asked) {
      const group = chain[this.step]!;
      const topics = byGroup.get(group) ?? new Map<string, number[]>();
      topics.set(topic, [...(topics.get(topic) ?? []), partition]);
      byGroup.set(group, topics);
    }
    return new Map([...byGroup].map(([group, topics]) => [group, [...topics].map(([topic, partitions]) => ({ topic, partitions }))]));
  }

  /**
   * Of a group's answer, the commits to carry: partitions asked at this step, not
   * carried yet, `stillWanted` (the stream still holds them), with a commit.
   */
  take(committed: GroupCommits, stillWanted: (key: string) => boolean): LegacyCommit[] {
    const carried: LegacyCommit[] = [];
    for (const { topic, partitions } of committed) {
      for (const { partition, offset, metadata } of partitions) {
        const key = keyOf(topic, partition);
        if (!this.wanted.has(key) || this.found.has(key) || !stillWanted(key) || BigInt(offset) < 0n) continue;
        this.found.add(key);
        carried.push({ topic, partition, offset, metadata });
      }
    }
    return carried;
  }
}

/** How LegacyCarry hands over what it found. */
export interface CarryTarget {
  /** Whether the partition is still to be started (a rejoin may have taken it away meanwhile). */
  stillWanted(key: string): boolean;
  /** Start the partition from this commit. */
  carry(commit: LegacyCommit): void;
}

/**
 * NOTE: the upgrade from older group names (`legacyGroupOf`: `<clientId>-deliverer`,
 * then the per-destination `<clientId>-deliverer-<id>` of older versions still): a
 * partition this group never committed starts where the first of them that committed
 * it stopped, skipping what its metadata lists as finished, not at the start of the
 * log (which would deliver the topic's whole retention again). The next commit makes
 * it this group's own. At each assignment, so a destination enabled again later
 * starts where the old group left it too.
 */
export class LegacyCarry {
  /** Older groups this principal may not read: not asked again. */
  private readonly unreadableGroups = new Set<string>();

  constructor(
    private readonly settings: { groupId: string; admin: KafkaAdmin; legacyGroupOf: (topic: string) => readonly string[] },
    private readonly logger: Logger,
  ) {}

  /** Starts each of `fresh` (partitions without a commit in the group) from an older group's commit, where one has it. */
  async carry(fresh: readonly { topic: string; partition: number }[], target: CarryTarget): Promise<void> {
    const chain = new LegacyChain(fresh, (topic) => this.settings.legacyGroupOf(topic).filter((group) => !this.unreadableGroups.has(group)));
    for (let step = chain.nextStep(); step !== undefined; step = chain.nextStep()) {
      // NOTE: one group per destination in the oldest versions: a first start at 1,000
      // destinations reads 1,000 groups; a few at a time keeps that to a second or two
      // without a burst on the broker.
      await forEachLimited([...step], 16, async ([group, asked]) => {
        const carried = chain.take(await this.readOlder(group, asked), (key) => target.stillWanted(key));
        for (const commit of carried) target.carry(commit);
        if (carried.length > 0) this.logger.info({ groupId: this.settings.groupId, legacyGroup: group, partitions: carried.length }, `${carried.length} partition(s) start from the commits of ${group}, the group an older version used`);
      });
    }
  }

  /** An older group's commits; none from a group this principal may not read. */
  private readOlder(group: string, asked: readonly TopicPartitions[]): Promise<GroupCommits> {
    return readCommits(this.settings.admin, group, asked).catch((error: unknown) => {
      // NOTE: a deployment that never ran an older version, with ACLs on its own prefix only, must still join.
      if (!isGroupNotAuthorized(error)) throw error;
      this.unreadableGroups.add(group);
      this.logger.warn({ groupId: this.settings.groupId, legacyGroup: group }, `not authorized to read the commits of ${group}, the group an older version used: nothing is carried from it`);
      return [];
    });
  }
}

/** A group's commits of these partitions: in one request where the admin can, else per topic. */
export function readCommits(admin: KafkaAdmin, groupId: string, assigned: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: GroupOffset[] }[]> {
  if (admin.committedOffsetsOf !== undefined) return admin.committedOffsetsOf(groupId, assigned);
  return admin.committedOffsets(
    groupId,
    assigned.map((a) => a.topic),
  );
}

/** `work` on each item, at most `limit` at once; the first failure rejects (the others finish). */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
