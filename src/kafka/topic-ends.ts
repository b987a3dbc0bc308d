// The log ends (high and low watermarks) of many topics in a few requests. kafkajs's
// admin asks per topic (`fetchTopicOffsets`), two requests each plus a metadata refresh
// per topic it has not seen: at 1,000 destinations the deliverer's 5,000 topics made
// every lag sample 10,000 requests. Its cluster asks per broker for any number of
// topics; this module is the one place that reaches for it. The same holds for a
// group's commits: kafkajs's admin.fetchOffsets refreshes the metadata once per topic,
// each under one lock (3,000 topics timed out on it, KafkaJSLockTimeout); the partitions
// a member was assigned are known already and go to the coordinator in one request.
import type { Kafka } from 'kafkajs';
import type { PartitionEnds } from '../observability/consumer-lag.js';

interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  findGroupCoordinator(options: { groupId: string }): Promise<{
    offsetFetch(request: { groupId: string; topics: { topic: string; partitions: { partition: number }[] }[] }): Promise<{
      responses: { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];
    }>;
  }>;
  fetchTopicsOffset(
    topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

export type GroupCommits = { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];

/** Partitions per OffsetFetch request: far below any request size limit, few requests at 1,000 destinations. */
const PARTITIONS_PER_OFFSET_FETCH = 2_000;

/**
 * Topics per call of the cluster's fetchTopicsOffset. NOTE: kafkajs merges the answers
 * by copying an object once per topic (`reduce` with a spread), so one call's cost
 * grows with the square of its topics: 2,000 topics took a fifth of a core every lag
 * sample. 50 at a time keeps that small and the requests few.
 */
const TOPICS_PER_LIST_OFFSETS = 50;

export interface TopicEnds {
  /**
   * Every partition's ends of each topic. NOTE: a topic the broker does not know fails
   * the whole call (kafkajs's metadata request refuses it): callers sample topics they made.
   */
  partitionEnds(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
  /** The group's commits (offset, metadata) of exactly these partitions, with no metadata request. */
  committedOffsets(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<GroupCommits>;
  disconnect(): Promise<void>;
}

/**
 * NOTE: kafkajs (2.2.4, pinned) keeps its cluster factory behind a private symbol.
 * When it is not there (another kafkajs), `undefined`: callers fall back to the
 * admin's per-topic requests.
 */
export function createTopicEnds(kafka: Kafka): TopicEnds | undefined {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  if (symbol === undefined) return undefined;
  const createCluster = (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof createCluster !== 'function') return undefined;
  let cluster: KafkajsCluster | undefined;
  let connecting: Promise<KafkajsCluster> | undefined;
  const connected = (): Promise<KafkajsCluster> => {
    connecting ??= (async () => {
      const made = (createCluster as (options: object) => KafkajsCluster)({ allowAutoTopicCreation: false, metadataMaxAge: 60_000 });
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
      const request = (fromBeginning: boolean) =>
        topics.flatMap((topic) => {
          const partitions = safePartitions(c, topic);
          return partitions.length === 0 ? [] : [{ topic, fromBeginning, partitions: partitions.map((p) => ({ partition: p.partitionId })) }];
        });
      const [high, low] = await Promise.all([listOffsets(c, request(false)), listOffsets(c, request(true))]);
      const lows = new Map(low.map((t) => [t.topic, new Map(t.partitions.map((p) => [p.partition, p.offset]))]));
      const ends = new Map<string, PartitionEnds[]>();
      for (const t of high) {
        const lowOf = lows.get(t.topic);
        ends.set(
          t.topic,
          t.partitions.map((p) => ({ partition: p.partition, high: p.offset, low: lowOf?.get(p.partition) ?? '0' })),
        );
      }
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
    async disconnect() {
      connecting = undefined;
      const c = cluster;
      cluster = undefined;
      await c?.disconnect();
    },
  };
}

type ListOffsetsRequest = Parameters<KafkajsCluster['fetchTopicsOffset']>[0];

/** The cluster's fetchTopicsOffset, a slice of the topics at a time (TOPICS_PER_LIST_OFFSETS). */
async function listOffsets(cluster: KafkajsCluster, request: ListOffsetsRequest): ReturnType<KafkajsCluster['fetchTopicsOffset']> {
  const answers: Awaited<ReturnType<KafkajsCluster['fetchTopicsOffset']>> = [];
  for (let i = 0; i < request.length; i += TOPICS_PER_LIST_OFFSETS) answers.push(...(await cluster.fetchTopicsOffset(request.slice(i, i + TOPICS_PER_LIST_OFFSETS))));
  return answers;
}

function safePartitions(cluster: KafkajsCluster, topic: string): { partitionId: number }[] {
  try {
    return cluster.findTopicPartitionMetadata(topic);
  } catch {
    return []; // not known to the cluster (deleted, or not created yet)
  }
}
