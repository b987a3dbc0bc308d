// The log ends (high and low watermarks) of many topics in a few requests. kafkajs's
// admin asks per topic (`fetchTopicOffsets`), two requests each plus a metadata refresh
// per topic it has not seen: at 1,000 destinations the deliverer's 5,000 topics made
// every lag sample 10,000 requests. Its cluster asks per broker for any number of
// topics; this module is the one place that reaches for it.
import type { Kafka } from 'kafkajs';
import type { PartitionEnds } from '../observability/consumer-lag.js';

interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number }[];
  fetchTopicsOffset(
    topics: { topic: string; fromBeginning: boolean; partitions: { partition: number }[] }[],
  ): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

export interface TopicEnds {
  /** Every partition's ends of each topic (topics that do not exist are left out). */
  partitionEnds(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
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
      const [high, low] = await Promise.all([c.fetchTopicsOffset(request(false)), c.fetchTopicsOffset(request(true))]);
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
    async disconnect() {
      connecting = undefined;
      const c = cluster;
      cluster = undefined;
      await c?.disconnect();
    },
  };
}

function safePartitions(cluster: KafkajsCluster, topic: string): { partitionId: number }[] {
  try {
    return cluster.findTopicPartitionMetadata(topic);
  } catch {
    return []; // not known to the cluster (deleted, or not created yet)
  }
}
