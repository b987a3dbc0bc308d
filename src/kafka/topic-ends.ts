// The log ends (high and low watermarks) of many topics in a few requests. kafkajs's
// admin asks per topic (`fetchTopicOffsets`), two requests each plus a metadata refresh
// per topic it has not seen: at 1,000 destinations the deliverer's 5,000 topics made
// every lag sample 10,000 requests. Here each partition leader is asked once per end
// for all of its partitions, through kafkajs's cluster and brokers: this module is the
// one place that reaches for them. The same holds for a
// group's commits: kafkajs's admin.fetchOffsets refreshes the metadata once per topic,
// each under one lock (3,000 topics timed out on it, KafkaJSLockTimeout); the partitions
// a member was assigned are known already and go to the coordinator in one request.
import type { Kafka } from 'kafkajs';
import type { PartitionEnds } from '../observability/consumer-lag.js';

interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  isolationLevel: number;
  findTopicPartitionMetadata(topic: string): PartitionMetadata[];
  findBroker(options: { nodeId: number }): Promise<{
    listOffsets(request: { isolationLevel: number; topics: { topic: string; partitions: { partition: number; timestamp: number }[] }[] }): Promise<{
      responses: { topic: string; partitions: { partition: number; offset: string }[] }[];
    }>;
  }>;
  findGroupCoordinator(options: { groupId: string }): Promise<{
    offsetFetch(request: { groupId: string; topics: { topic: string; partitions: { partition: number }[] }[] }): Promise<{
      responses: { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];
    }>;
    offsetCommit(request: {
      groupId: string;
      groupGenerationId: number;
      memberId: string;
      topics: { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];
    }): Promise<unknown>;
  }>;
}

interface PartitionMetadata {
  partitionId: number;
  leader?: number | null;
}

export type GroupCommits = { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];

/** Partitions per OffsetFetch request: far below any request size limit, few requests at 1,000 destinations. */
const PARTITIONS_PER_OFFSET_FETCH = 2_000;

/** ListOffsets timestamps: the next offset to be written (the high watermark), and the log's start. */
const LATEST = -1;
const EARLIEST = -2;

export interface TopicEnds {
  /**
   * Every partition's ends of each topic. NOTE: a topic the broker does not know fails
   * the whole call (kafkajs's metadata request refuses it): callers sample topics they made.
   */
  partitionEnds(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
  /** The group's commits (offset, metadata) of exactly these partitions, with no metadata request. */
  committedOffsets(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<GroupCommits>;
  /**
   * Commits offsets and metadata for a group that has no member (generation -1, no
   * member id: what Kafka calls a simple consumer's commit). The broker refuses it while
   * the group has members (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS).
   */
  commitOffsets(groupId: string, commits: GroupCommits): Promise<void>;
  disconnect(): Promise<void>;
}

/**
 * kafkajs's own cluster factory (brokers, metadata, leaders: what its admin and consumers
 * are built on), or undefined in another kafkajs than the pinned 2.2.4, which keeps it
 * behind a private symbol. Used here and by the key reads of key-scan.ts.
 */
export function clusterFactoryOf(kafka: Kafka): (<C>(options: { allowAutoTopicCreation: boolean; metadataMaxAge: number }) => C) | undefined {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  if (symbol === undefined) return undefined;
  const createCluster = (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof createCluster !== 'function') return undefined;
  return <C>(options: { allowAutoTopicCreation: boolean; metadataMaxAge: number }) => (createCluster as (options: object) => C)(options);
}

/**
 * NOTE: kafkajs (2.2.4, pinned) keeps its cluster factory behind a private symbol.
 * When it is not there (another kafkajs), `undefined`: callers fall back to the
 * admin's per-topic requests.
 */
export function createTopicEnds(kafka: Kafka): TopicEnds | undefined {
  const createCluster = clusterFactoryOf(kafka);
  if (createCluster === undefined) return undefined;
  let cluster: KafkajsCluster | undefined;
  let connecting: Promise<KafkajsCluster> | undefined;
  const connected = (): Promise<KafkajsCluster> => {
    connecting ??= (async () => {
      const made = createCluster<KafkajsCluster>({ allowAutoTopicCreation: false, metadataMaxAge: 60_000 });
      await made.connect();
      cluster = made;
      return made;
    })().catch((error: unknown) => {
      connecting = undefined;
      throw error;
    });
    return connecting;
  };
  return {
    async partitionEnds(topics) {
      const c = await connected();
      await c.addMultipleTargetTopics([...topics]);
      const ends = new Map<string, PartitionEnds[]>();
      const asks = [...partitionsByLeader(c, topics)].map(async ([nodeId, asked]) => {
        const broker = await c.findBroker({ nodeId });
        const ask = (timestamp: number) =>
          broker.listOffsets({
            isolationLevel: c.isolationLevel,
            topics: asked.map(({ topic, partitions }) => ({ topic, partitions: partitions.map((partition) => ({ partition, timestamp })) })),
          });
        const [high, low] = await Promise.all([ask(LATEST), ask(EARLIEST)]);
        const lows = new Map(low.responses.map((t) => [t.topic, new Map(t.partitions.map((p) => [p.partition, p.offset]))]));
        for (const t of high.responses) {
          const lowOf = lows.get(t.topic);
          const list = ends.get(t.topic) ?? [];
          for (const p of t.partitions) list.push({ partition: p.partition, high: p.offset, low: lowOf?.get(p.partition) ?? '0' });
          ends.set(t.topic, list);
        }
      });
      await Promise.all(asks);
      return ends;
    },
    async committedOffsets(groupId, partitions) {
      const c = await connected();
      const coordinator = await c.findGroupCoordinator({ groupId });
      const commits: GroupCommits = [];
      let chunk: { topic: string; partitions: { partition: number }[] }[] = [];
      let size = 0;
      const send = async () => {
        if (chunk.length === 0) return;
        const { responses } = await coordinator.offsetFetch({ groupId, topics: chunk });
        for (const t of responses) commits.push({ topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: p.offset, metadata: p.metadata || null })) });
        chunk = [];
        size = 0;
      };
      for (const { topic, partitions: ps } of partitions) {
        if (ps.length === 0) continue;
        chunk.push({ topic, partitions: ps.map((partition) => ({ partition })) });
        size += ps.length;
        if (size >= PARTITIONS_PER_OFFSET_FETCH) await send();
      }
      await send();
      return commits;
    },
    async commitOffsets(groupId, commits) {
      const c = await connected();
      const coordinator = await c.findGroupCoordinator({ groupId });
      const topics = commits.filter((t) => t.partitions.length > 0);
      if (topics.length === 0) return;
      await coordinator.offsetCommit({ groupId, groupGenerationId: -1, memberId: '', topics });
    },
    async disconnect() {
      connecting = undefined;
      const c = cluster;
      cluster = undefined;
      await c?.disconnect();
    },
  };
}

/**
 * Each leader's share of `topics`, so that one ListOffsets request per leader and end
 * asks for all of them. NOTE: not the cluster's fetchTopicsOffset: it merges its answers
 * by copying an object once per topic, a cost that grows with the square of the topics
 * (at 1,000 destinations most of a lag sample, even in slices of 50 topics).
 */
function partitionsByLeader(cluster: KafkajsCluster, topics: readonly string[]): Map<number, { topic: string; partitions: number[] }[]> {
  const byLeader = new Map<number, { topic: string; partitions: number[] }[]>();
  for (const topic of topics) {
    const perLeader = new Map<number, number[]>();
    for (const { partitionId, leader } of safePartitions(cluster, topic)) {
      if (leader === null || leader === undefined || leader < 0) throw new Error(`partition ${partitionId} of topic "${topic}" has no leader right now; its log ends are asked again at the next sample`);
      perLeader.set(leader, [...(perLeader.get(leader) ?? []), partitionId]);
    }
    for (const [leader, partitions] of perLeader) {
      const list = byLeader.get(leader) ?? [];
      list.push({ topic, partitions });
      byLeader.set(leader, list);
    }
  }
  return byLeader;
}

function safePartitions(cluster: KafkajsCluster, topic: string): PartitionMetadata[] {
  try {
    return cluster.findTopicPartitionMetadata(topic);
  } catch {
    return []; // not known to the cluster (deleted, or not created yet)
  }
}
