// The admin side of the port: topic creation, partition counts, offsets, on
// @platformatic/kafka's Admin where its public methods do the job, else on wire.ts's raw
// calls (topic-ends.ts). It is the consumer-lag sampler's LagSource.
import { Admin } from '@platformatic/kafka';
import type { CommittedOffset, LagSource, PartitionEnds } from '../observability/consumer-lag.js';
import type { KafkaClient } from './client.js';
import { errorTypes, isRetriable } from './commit.js';
import { ensureTopics } from './ensure-topics.js';
import type { TopicMaker, TopicSpec } from './ensure-topics.js';
import { platformaticOptions } from './platformatic-client.js';
import { createTopicEnds } from './topic-ends.js';
import { ERROR, Wire } from './wire.js';

export interface TopicLayout {
  partitions: number;
  replicationFactor: number;
}

/** A committed offset with the metadata the committer stored with it. */
export interface GroupOffset extends CommittedOffset {
  metadata: string | null;
}

export interface KafkaAdmin extends LagSource {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /** Creates the missing topics with `layout` and waits for their leaders (ensure-topics.ts); returns the created ones. */
  ensureTopics(specs: readonly TopicSpec[], layout: TopicLayout): Promise<string[]>;
  /** How many partitions each topic has (0 for a topic that does not exist). */
  partitionCounts(topics: readonly string[]): Promise<Map<string, number>>;
  /** The names of the topics that exist. */
  listTopics(): Promise<string[]>;
  committedOffsets(groupId: string, topics: readonly string[]): Promise<{ topic: string; partitions: GroupOffset[] }[]>;
  /** The log ends of many topics, one request per leader and end (topic-ends.ts). */
  partitionEndsOf(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
  /** The group's commits of exactly these partitions: one request per 2,000 partitions, no metadata request. */
  committedOffsetsOf(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: GroupOffset[] }[]>;
  /** Commits offsets with metadata for a group nobody is a member of (src/runtime/group-upgrade.ts); refused while it has members (isGroupInUse). */
  commitOffsets(groupId: string, commits: readonly { topic: string; partitions: readonly GroupOffset[] }[]): Promise<void>;
  /** Removes consumer groups (their commits); a group still in use is refused by the broker. */
  deleteGroups(groupIds: readonly string[]): Promise<void>;
}

export function createAdmin(client: KafkaClient): KafkaAdmin {
  const admin = new Admin(platformaticOptions(client.settings, client.clientId));
  const wire = new Wire(client.settings, client.clientId);
  const ends = createTopicEnds(wire);
  const maker: TopicMaker = {
    listTopics: () => admin.listTopics(),
    async createTopics(topics, layout) {
      await admin.createTopics({
        topics: [...topics],
        partitions: layout.partitions,
        replicas: layout.replicationFactor,
        configs: layout.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
      });
    },
    async leaders(topics) {
      const { topics: found } = await wire.metadata(topics);
      return found;
    },
    partitionEnds: (topics) => ends.partitionEnds(topics),
  };
  let closing: Promise<void> | undefined;
  return {
    // NOTE: the client connects on first use; a metadata request here makes a cluster
    // that cannot be reached fail the start, as the roles expect of connect().
    async connect() {
      await admin.metadata({ topics: [] });
    },
    disconnect() {
      closing ??= Promise.allSettled([admin.close(), wire.close()]).then(([a, w]) => {
        if (a.status === 'rejected') throw a.reason;
        if (w.status === 'rejected') throw w.reason;
      });
      return closing;
    },
    ensureTopics: (specs, layout) => ensureTopics(maker, [...specs], { partitions: layout.partitions, replicationFactor: layout.replicationFactor }),
    async partitionCounts(topics) {
      const counts = new Map(topics.map((topic) => [topic, 0]));
      if (topics.length === 0) return counts;
      const { topics: found } = await wire.metadata(topics);
      for (const [name, t] of found) if (t.errorCode === ERROR.NONE) counts.set(name, t.partitions.length);
      return counts;
    },
    listTopics: () => admin.listTopics(),
    async committedOffsets(groupId, topics) {
      // Every partition of each topic, as the lag sampler and `dlq list` read them: a
      // partition without a commit answers offset -1. A topic that does not exist has none.
      const { topics: found } = await wire.metadata(topics);
      const asked = topics.flatMap((name) => {
        const t = found.get(name);
        return t === undefined || t.errorCode !== ERROR.NONE ? [] : [{ name, partitionIndexes: t.partitions.map((p) => p.partition) }];
      });
      const answer = asked.length === 0 ? [] : await retryingTransient(() => admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: asked }] }));
      const byTopic = new Map((answer[0]?.topics ?? []).map((t) => [t.name, t.partitions]));
      return topics.map((topic) => ({
        topic,
        partitions: (byTopic.get(topic) ?? []).map((p) => ({ partition: p.partitionIndex, offset: p.committedOffset.toString(), metadata: p.metadata || null })),
      }));
    },
    async partitionEnds(topic) {
      const found = await retryingTransient(() => ends.partitionEnds([topic]));
      return found.get(topic) ?? [];
    },
    partitionEndsOf: (topics) => retryingTransient(() => ends.partitionEnds(topics)),
    committedOffsetsOf: (groupId, partitions) => retryingTransient(() => ends.committedOffsets(groupId, partitions)),
    async commitOffsets(groupId, commits) {
      const list = commits.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: p.offset, metadata: p.metadata })) }));
      await retryingTransient(() => ends.commitOffsets(groupId, list));
    },
    async deleteGroups(groupIds) {
      if (groupIds.length === 0) return;
      await admin.deleteGroups({ groups: [...groupIds] });
    },
  };
}

/** The broker refused to show or change a group to this principal (no ACL on it). */
export function isGroupNotAuthorized(error: unknown): boolean {
  return errorTypes(error).includes('GROUP_AUTHORIZATION_FAILED');
}

/** The broker refused a commit because the group has members (or is rebalancing): someone runs in it. */
export function isGroupInUse(error: unknown): boolean {
  return errorTypes(error).some((type) => type === 'UNKNOWN_MEMBER_ID' || type === 'ILLEGAL_GENERATION' || type === 'REBALANCE_IN_PROGRESS');
}

const TRANSIENT_TRIES = 5;

/**
 * `call`, again (up to five tries, 0.2 s, 0.4 s … apart) while its error is retriable.
 * NOTE: a coordinator moving (`switchyard dlq list`), or a partition made a moment ago (its
 * ListOffsets NOT_LEADER_OR_FOLLOWER: `npm start`), failed where a next try answered.
 */
export async function retryingTransient<T>(call: () => Promise<T>, sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (attempt >= TRANSIENT_TRIES || !isRetriable(error)) throw error;
      await sleep(200 * attempt);
    }
  }
}
