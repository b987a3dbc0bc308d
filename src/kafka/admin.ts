// The admin side of the port: topic creation, partition counts, offsets. It is the
// consumer-lag sampler's LagSource (src/observability/consumer-lag.ts).
import type { Admin } from 'kafkajs';
import type { CommittedOffset, LagSource, PartitionEnds } from '../observability/consumer-lag.js';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import { isRetriable } from './commit.js';
import { ensureTopics } from './ensure-topics.js';
import { createTopicEnds } from './topic-ends.js';
import type { TopicSpec } from './ensure-topics.js';

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
  /**
   * Creates the topics that do not exist yet (new ones get `layout`), in requests the
   * broker accepts at any scale, and waits for their leaders; returns the created ones.
   * Throws TopicsNotCreatedError naming those it could not create (the others are made).
   */
  ensureTopics(specs: readonly TopicSpec[], layout: TopicLayout): Promise<string[]>;
  /** How many partitions each topic has (0 for a topic that does not exist). */
  partitionCounts(topics: readonly string[]): Promise<Map<string, number>>;
  /** The names of the topics that exist. */
  listTopics(): Promise<string[]>;
  committedOffsets(groupId: string, topics: readonly string[]): Promise<{ topic: string; partitions: GroupOffset[] }[]>;
  /**
   * The group's commits of exactly these partitions, one request per 2,000 partitions and
   * no metadata requests (what a member reads at each join: thousands of partitions).
   * Without it (another kafkajs), read per topic with `committedOffsets`.
   */
  committedOffsetsOf?(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: GroupOffset[] }[]>;
  /**
   * Commits offsets with their metadata for a group nobody is a member of (the upgrade
   * from older group names, group-upgrade.ts). The broker refuses it while the group
   * has members: the error's `type` says so (isGroupInUse).
   */
  commitOffsets(groupId: string, commits: readonly { topic: string; partitions: readonly GroupOffset[] }[]): Promise<void>;
  /** Removes consumer groups (their commits); a group still in use is refused by the broker. */
  deleteGroups(groupIds: readonly string[]): Promise<void>;
}

export function createAdmin(client: KafkaClient): KafkaAdmin {
  const admin: Admin = kafkajsOf(client).admin();
  const ends = createTopicEnds(kafkajsOf(client));
  return {
    connect: () => admin.connect(),
    async disconnect() {
      await ends?.disconnect();
      await admin.disconnect();
    },
    ensureTopics: (specs, layout) =>
      ensureTopics(admin, [...specs], {
        partitions: layout.partitions,
        replicationFactor: layout.replicationFactor,
        ...(ends === undefined ? {} : { partitionEnds: (topics: string[]) => ends.partitionEnds(topics) }),
      }),
    async partitionCounts(topics) {
      const metadata = await admin.fetchTopicMetadata({ topics: [...topics] });
      const counts = new Map(topics.map((topic) => [topic, 0]));
      for (const t of metadata.topics) counts.set(t.name, t.partitions.length);
      return counts;
    },
    listTopics: () => admin.listTopics(),
    async committedOffsets(groupId, topics) {
      const found = await retryingTransient(() => admin.fetchOffsets({ groupId, topics: [...topics] }));
      return found.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: p.offset, metadata: p.metadata })) }));
    },
    async partitionEnds(topic) {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.map((o): PartitionEnds => ({ partition: o.partition, high: o.high, low: o.low }));
    },
    ...(ends === undefined
      ? {}
      : {
          partitionEndsOf: (topics: readonly string[]) => ends.partitionEnds(topics),
          committedOffsetsOf: (groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]) => ends.committedOffsets(groupId, partitions),
        }),
    async commitOffsets(groupId, commits) {
      const list = commits.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: p.offset, metadata: p.metadata })) }));
      if (ends !== undefined) {
        await retryingTransient(() => ends.commitOffsets(groupId, list));
        return;
      }
      // NOTE: another kafkajs than the pinned one (no cluster to reach): its admin commits
      // the offsets without their metadata, so a takeover may redo the finished records
      // the metadata listed (duplicates, never a loss).
      for (const { topic, partitions } of list) {
        if (partitions.length > 0) await admin.setOffsets({ groupId, topic, partitions: partitions.map((p) => ({ partition: p.partition, offset: p.offset })) });
      }
    },
    async deleteGroups(groupIds) {
      await admin.deleteGroups([...groupIds]);
    },
  };
}

/** The broker refused to show or change a group to this principal (no ACL on it). */
export function isGroupNotAuthorized(error: unknown): boolean {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return type === 'GROUP_AUTHORIZATION_FAILED';
}

/** The broker refused a commit because the group has members (or is rebalancing): someone runs in it. */
export function isGroupInUse(error: unknown): boolean {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return type === 'UNKNOWN_MEMBER_ID' || type === 'ILLEGAL_GENERATION' || type === 'REBALANCE_IN_PROGRESS';
}

const TRANSIENT_TRIES = 5;

/**
 * `call`, again (up to five tries, 0.2 s, 0.4 s … apart) while it fails with an error a
 * second try may not have (isRetriable).
 * NOTE: kafkajs's admin sends a group's offset request once: a coordinator that moved or
 * was still loading on a busy broker ("This is not the correct coordinator for this
 * group") failed `switchyard dlq list` where the next try would have answered.
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

/** A kafkajs admin client as a LagSource (for src/delivery/ until it moves onto KafkaAdmin; see index.ts). */
export function lagSourceOf(admin: Admin): LagSource {
  return {
    committedOffsets: (groupId, topics) => admin.fetchOffsets({ groupId, topics: [...topics] }),
    partitionEnds: (topic) => admin.fetchTopicOffsets(topic),
  };
}
