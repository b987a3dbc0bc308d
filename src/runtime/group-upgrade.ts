// The upgrade from older consumer group names (group-ids.ts, `legacyGroupIds`): a
// partition a group has never committed starts where the first of its older groups
// (most recent name first) that committed it stopped, with that commit's metadata (the
// deliverer's finished offsets above it, the replay's ledger), instead of at the start
// of the log, which would do every retained record again. The next commit makes it the
// group's own. Roles that consume in batches carry once, before their member joins
// (carryGroupCommits); the deliverer's partition stream carries at each assignment
// (src/delivery/partition-stream.ts, `legacyGroupOf`: each destination's topics have
// older names of their own), so a destination enabled again later starts where the old
// group left it too. Both walk the chains of older groups with LegacyChain (pure).
import type { Logger } from 'pino';
import { isGroupInUse, isGroupNotAuthorized, partitionKey as keyOf } from '../kafka/index.js';
import type { GroupOffset, KafkaAdmin } from '../kafka/index.js';

type GroupCommits = readonly { topic: string; partitions: readonly GroupOffset[] }[];

/** Partitions of one topic, as a group's commits are asked for. */
export interface TopicPartitions {
  topic: string;
  partitions: number[];
}

/** A commit carried from an older group, with the group it came from. */
export interface CarriedCommit {
  topic: string;
  partition: number;
  offset: string;
  metadata: string | null;
  from: string;
}

const committed = (offset: string): boolean => BigInt(offset) >= 0n;

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
   * Of the answer of `group`, the commits to carry: partitions asked at this step, not
   * carried yet, `stillWanted` (the caller still starts them), with a commit.
   */
  take(group: string, answer: GroupCommits, stillWanted: (key: string) => boolean): CarriedCommit[] {
    const carried: CarriedCommit[] = [];
    for (const { topic, partitions } of answer) {
      for (const { partition, offset, metadata } of partitions) {
        const key = keyOf(topic, partition);
        if (!this.wanted.has(key) || this.found.has(key) || !stillWanted(key) || !committed(offset)) continue;
        this.found.add(key);
        carried.push({ topic, partition, offset, metadata, from: group });
      }
    }
    return carried;
  }
}

export interface CarryOptions {
  /** The group the commits are carried into (never read as an older one of itself). */
  groupId: string;
  /** Warns of older groups this principal may not read; none: silent. */
  logger?: Logger;
  /** Older groups this principal may not read: not asked (a group found so is added). */
  unreadable?: Set<string>;
  /** Whether the partition is still to be started (a rejoin may have taken it away meanwhile). */
  stillWanted?(key: string): boolean;
  /** Each carried commit, as soon as its group answered. */
  carry?(commit: CarriedCommit): void;
}

/** For each of `fresh` (partitions without a commit), the commit of the first group of its chain that has one. */
export async function findOlderCommits(admin: KafkaAdmin, fresh: readonly { topic: string; partition: number }[], chainOf: (topic: string) => readonly string[], options: CarryOptions): Promise<CarriedCommit[]> {
  const { groupId, logger, unreadable = new Set<string>(), stillWanted = () => true } = options;
  // A prefix that makes the new name equal to an old one (groupPrefix "<clientId>-") has nothing to carry.
  const chain = new LegacyChain(fresh, (topic) => chainOf(topic).filter((group) => group !== groupId && !unreadable.has(group)));
  const carried: CarriedCommit[] = [];
  for (let step = chain.nextStep(); step !== undefined; step = chain.nextStep()) {
    // NOTE: one group per destination in the oldest versions: a first start at 1,000
    // destinations reads 1,000 groups; a few at a time keeps that to a second or two
    // without a burst on the broker.
    await forEachLimited([...step], 16, async ([group, asked]) => {
      const answer = await admin.committedOffsetsOf(group, asked).catch((error: unknown) => {
        // NOTE: a deployment that never ran an older version, with ACLs on its own prefix
        // only (docs/operations.md#share-a-cluster), must still start.
        if (!isGroupNotAuthorized(error)) throw error;
        unreadable.add(group);
        logger?.warn(
          { groupId, legacyGroup: group },
          `not authorized to read the commits of ${group}, the name an older version gave consumer group ${groupId}: nothing is carried from it. If this deployment ran that version, grant Describe on ${group} (docs/operations.md#upgrade)`,
        );
        return [];
      });
      for (const commit of chain.take(group, answer, stillWanted)) {
        carried.push(commit);
        options.carry?.(commit);
      }
    });
  }
  return carried;
}

/** Logs the commits carried into `groupId`. */
export function logCarried(logger: Logger, groupId: string, carried: readonly CarriedCommit[]): void {
  if (carried.length === 0) return;
  const groups = [...new Set(carried.map((c) => c.from))];
  logger.info(
    { groupId, from: groups, partitions: carried.map(({ topic, partition, offset }) => ({ topic, partition, offset })) },
    `consumer group ${groupId} starts ${carried.length} partition(s) from the commits of ${groups.join(', ')} (the group names of an older version); once every process runs this version, those groups can be deleted`,
  );
}

/** The partitions of `commits` without a commit (offset -1; a commit at 0 is one). */
export function uncommitted(commits: GroupCommits): { topic: string; partition: number }[] {
  return commits.flatMap(({ topic, partitions }) => partitions.filter((p) => !committed(p.offset)).map(({ partition }) => ({ topic, partition })));
}

/** Each partition's commit in the first of `groups` that has one (a reader's view across an upgrade not carried yet). */
export async function readCommitsAcross(admin: KafkaAdmin, groups: readonly string[], topics: readonly string[]): Promise<{ topic: string; partitions: GroupOffset[] }[]> {
  const [first, ...older] = groups;
  if (first === undefined) return [];
  const current = await admin.committedOffsets(first, topics);
  const carried = new Map((await findOlderCommits(admin, uncommitted(current), () => older, { groupId: first })).map((c) => [keyOf(c.topic, c.partition), c]));
  return current.map(({ topic, partitions }) => ({
    topic,
    partitions: partitions.map((p) => {
      const c = carried.get(keyOf(topic, p.partition));
      return c === undefined ? { ...p } : { partition: p.partition, offset: c.offset, metadata: c.metadata };
    }),
  }));
}

/**
 * Before a member of `to` joins: carries the commits of `from` (older names, most recent
 * first) on `topics` into `to` for every partition `to` has not committed, and logs
 * what it carried. Returns the carried commits (none when `to` has them all already,
 * or when a member of `to` runs already: it carried them when it started).
 */
export async function carryGroupCommits(admin: KafkaAdmin, options: { to: string; from: readonly string[]; topics: readonly string[]; logger: Logger }): Promise<CarriedCommit[]> {
  const { to, from, topics, logger } = options;
  // NOTE: a group that committed every partition has nothing to carry: the older groups are not read.
  const carried = await findOlderCommits(admin, uncommitted(await admin.committedOffsets(to, topics)), () => from, { groupId: to, logger });
  if (carried.length === 0) return [];
  const byTopic = new Map<string, GroupOffset[]>();
  for (const c of carried) byTopic.set(c.topic, [...(byTopic.get(c.topic) ?? []), { partition: c.partition, offset: c.offset, metadata: c.metadata }]);
  try {
    await admin.commitOffsets(
      to,
      [...byTopic].map(([topic, partitions]) => ({ topic, partitions })),
    );
  } catch (error) {
    if (!isGroupInUse(error)) throw error;
    // NOTE: a member of the new group runs already (another replica started first): it
    // carried the commits itself before it joined, and the group's own commits rule now.
    logger.info({ groupId: to, err: error }, `consumer group ${to} has members already; the commits of the groups it replaces are theirs to carry`);
    return [];
  }
  logCarried(logger, to, carried);
  return carried;
}

/** `work` on each item, at most `limit` at once; the first failure rejects (the others finish). */
async function forEachLimited<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
