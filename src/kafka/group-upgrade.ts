// The upgrade from older consumer group names (group-ids.ts, `legacyGroupIds`): a
// group that has never committed a partition starts it where the group it replaces
// stopped, with that commit's metadata (the deliverer's finished offsets above it, the
// replay's ledger), instead of at the start of the log, which would do every retained
// record again. Done before the member joins, once: the carried commits are the new
// group's own from then on, so a later start finds them and carries nothing.
// (The deliverer carries inside its partition stream instead, at each assignment:
// partition-stream.ts, `legacyGroupOf`, and legacy-carry.ts.)
import type { Logger } from 'pino';
import { isGroupInUse, isGroupNotAuthorized } from './admin.js';
import type { GroupOffset, KafkaAdmin } from './admin.js';
import { partitionKey as keyOf } from './partition-key.js';

type GroupCommits = readonly { topic: string; partitions: readonly GroupOffset[] }[];

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
 * The commits to carry into a group whose own commits are `current`: for each partition
 * it has none of, the commit of the first of `older` (most recent name first) that has
 * one. Pure.
 */
export function commitsToCarry(current: GroupCommits, older: readonly { groupId: string; commits: GroupCommits }[]): CarriedCommit[] {
  const taken = new Set<string>();
  for (const { topic, partitions } of current) for (const p of partitions) if (committed(p.offset)) taken.add(keyOf(topic, p.partition));
  const carried: CarriedCommit[] = [];
  for (const { groupId, commits } of older) {
    for (const { topic, partitions } of commits) {
      for (const { partition, offset, metadata } of partitions) {
        const key = keyOf(topic, partition);
        if (taken.has(key) || !committed(offset)) continue;
        taken.add(key);
        carried.push({ topic, partition, offset, metadata, from: groupId });
      }
    }
  }
  return carried;
}

/** Each partition's commit in the first of `groups` that has one (a reader's view across an upgrade not carried yet). */
export async function readCommitsAcross(admin: KafkaAdmin, groups: readonly string[], topics: readonly string[]): Promise<{ topic: string; partitions: GroupOffset[] }[]> {
  const [first, ...older] = groups;
  if (first === undefined) return [];
  const current = await admin.committedOffsets(first, topics);
  const carried = allCommitted(current) ? [] : commitsToCarry(current, await readOlder(admin, first, older, topics));
  const byTopic = new Map(current.map((t) => [t.topic, t.partitions.map((p) => ({ ...p }))]));
  for (const c of carried) {
    const partitions = byTopic.get(c.topic) ?? [];
    const at = partitions.findIndex((p) => p.partition === c.partition);
    const carriedOffset = { partition: c.partition, offset: c.offset, metadata: c.metadata };
    if (at >= 0) partitions[at] = carriedOffset;
    else partitions.push(carriedOffset);
    byTopic.set(c.topic, partitions);
  }
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}

const allCommitted = (commits: GroupCommits): boolean => commits.every((t) => t.partitions.every((p) => committed(p.offset)));

/**
 * The commits of the older groups. NOTE: a group this principal may not describe reads
 * as empty, with a warning: a deployment that never ran an older version, with ACLs on
 * its own prefix only (docs/operations.md#share-a-cluster), must still start.
 */
async function readOlder(admin: KafkaAdmin, to: string, from: readonly string[], topics: readonly string[], logger?: Logger): Promise<{ groupId: string; commits: GroupCommits }[]> {
  const older: { groupId: string; commits: GroupCommits }[] = [];
  for (const groupId of from) {
    // A prefix that makes the new name equal to an old one (groupPrefix "<clientId>-") has nothing to carry.
    if (groupId === to) continue;
    try {
      older.push({ groupId, commits: await admin.committedOffsets(groupId, topics) });
    } catch (error) {
      if (!isGroupNotAuthorized(error)) throw error;
      logger?.warn(
        { groupId: to, legacyGroup: groupId },
        `not authorized to read the commits of ${groupId}, the name an older version gave consumer group ${to}: nothing is carried from it. If this deployment ran that version, grant Describe on ${groupId} (docs/operations.md#upgrade)`,
      );
    }
  }
  return older;
}

/**
 * Before a member of `to` joins: carries the commits of `from` (older names, most recent
 * first) on `topics` into `to` for every partition `to` has not committed, and logs
 * what it carried. Returns the carried commits (none when `to` has them all already,
 * or when a member of `to` runs already: it carried them when it started).
 */
export async function carryGroupCommits(admin: KafkaAdmin, options: { to: string; from: readonly string[]; topics: readonly string[]; logger: Logger }): Promise<CarriedCommit[]> {
  const { to, from, topics, logger } = options;
  const current = await admin.committedOffsets(to, topics);
  // NOTE: a group that committed every partition has nothing to carry: the older groups are not read.
  if (allCommitted(current)) return [];
  const carried = commitsToCarry(current, await readOlder(admin, to, from, topics, logger));
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
  const groups = [...new Set(carried.map((c) => c.from))];
  logger.info(
    { groupId: to, from: groups, partitions: carried.map(({ topic, partition, offset }) => ({ topic, partition, offset })) },
    `consumer group ${to} starts ${carried.length} partition(s) from the commits of ${groups.join(', ')} (the group names of an older version); once every process runs this version, those groups can be deleted`,
  );
  return carried;
}
