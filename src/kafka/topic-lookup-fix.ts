// NOTE: kafkajs 2.2.4 (pinned) finds a topic's metadata by scanning the list of every
// topic it knows (`topicMetadata.find`), and each fetch of a consumer does so once per
// subscribed topic, several times over (the stale-assignment check, the leaders, the
// metadata freshness check with `every` over `some`): a fetch costs the square of the
// topics. The deliverer at 1,000 destinations subscribes to thousands of topics, and
// this was most of its CPU while idle. The same two methods, with the scan replaced
// by a map built once per metadata answer (kafkajs replaces the metadata object on each
// refresh and never changes one in place). Same results, same errors. And a third,
// fetchTopicsOffset, whose merge of the answers also cost the square of the topics.
import { createRequire } from 'node:module';

interface TopicMetadata {
  topic: string;
  partitionMetadata: unknown[];
}

interface Metadata {
  topicMetadata?: TopicMetadata[];
}

interface BrokerPoolInternals {
  metadata: Metadata | null;
  metadataExpireAt: number | null;
  refreshMetadata(topics: string[]): Promise<void>;
}

interface ClusterInternals {
  brokerPool: BrokerPoolInternals;
  isolationLevel: number;
  findLeaderForPartitions(topic: string, partitions: number[]): Record<string, number[]>;
  defaultOffset(options: { fromBeginning?: boolean }): number;
  /** NOTE: kafkajs passes the node id here as the string key it grouped by. */
  findBroker(options: { nodeId: number | string }): Promise<{
    listOffsets(request: { isolationLevel: number; topics: { topic: string; partitions: object[] }[] }): Promise<{
      responses: { topic: string; partitions: { partition: number; offset: string }[] }[];
    }>;
  }>;
}

/** What kafkajs's consumer asks fetchTopicsOffset for: the log offset at a time (or an end) of each partition. */
interface TopicOffsetQuery {
  topic: string;
  partitions: { partition: number }[];
  fromBeginning?: boolean;
  fromTimestamp?: number | null;
}

/**
 * kafkajs's Cluster.fetchTopicsOffset with its answers merged by a map, not by copying
 * the whole result once per topic (`reduce` over object spreads): the square of the
 * topics. NOTE: a consumer asks it at its join for every partition without a commit: a
 * new deliverer at 1,000 destinations, 2,000 topics, spent about 1.5 s of its start-up
 * in that merge alone (destinations bench, CPU profile). Same requests, same answers.
 */
async function fetchTopicsOffset(this: ClusterInternals, topics: TopicOffsetQuery[]): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]> {
  const perBroker = new Map<string, Map<string, { partition: number; timestamp: number }[]>>();
  for (const { topic, partitions, fromBeginning, fromTimestamp } of topics) {
    const perLeader = this.findLeaderForPartitions(
      topic,
      partitions.map((p) => p.partition),
    );
    const timestamp = fromTimestamp != null ? fromTimestamp : this.defaultOffset({ fromBeginning });
    for (const [nodeId, led] of Object.entries(perLeader)) {
      let ofBroker = perBroker.get(nodeId);
      if (ofBroker === undefined) perBroker.set(nodeId, (ofBroker = new Map()));
      ofBroker.set(
        topic,
        partitions.filter((p) => led.includes(p.partition)).map((p) => ({ ...p, timestamp })),
      );
    }
  }
  const answers = await Promise.all(
    [...perBroker].map(async ([nodeId, ofBroker]) => {
      const broker = await this.findBroker({ nodeId });
      const { responses } = await broker.listOffsets({ isolationLevel: this.isolationLevel, topics: [...ofBroker].map(([topic, partitions]) => ({ topic, partitions })) });
      return responses;
    }),
  );
  const perTopic = new Map<string, { partition: number; offset: string }[]>();
  for (const { topic, partitions } of answers.flat()) {
    let merged = perTopic.get(topic);
    if (merged === undefined) perTopic.set(topic, (merged = []));
    for (const { partition, offset } of partitions) merged.push({ partition, offset });
  }
  return [...perTopic].map(([topic, partitions]) => ({ topic, partitions }));
}

type Prototype = Record<string, unknown>;

/** Each metadata answer's topics by name (the first entry of a name, as `find` returns). */
const indexes = new WeakMap<TopicMetadata[], Map<string, TopicMetadata>>();

function indexOf(list: TopicMetadata[]): Map<string, TopicMetadata> {
  let index = indexes.get(list);
  if (index === undefined) {
    index = new Map();
    for (const entry of list) if (!index.has(entry.topic)) index.set(entry.topic, entry);
    indexes.set(list, index);
  }
  return index;
}

let applied = false;

/** Replaces kafkajs's Cluster.findTopicPartitionMetadata and fetchTopicsOffset, and BrokerPool.refreshMetadataIfNecessary; once per process, only where they have the shape this fix knows. */
export function applyTopicLookupFix(): void {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  let cluster: Prototype | undefined;
  let brokerPool: Prototype | undefined;
  try {
    cluster = (require('kafkajs/src/cluster/index.js') as { prototype?: Prototype }).prototype;
    brokerPool = (require('kafkajs/src/cluster/brokerPool.js') as { prototype?: Prototype }).prototype;
  } catch {
    return; // another kafkajs layout: left as it is
  }
  const findOriginal = cluster?.findTopicPartitionMetadata;
  if (typeof findOriginal === 'function' && findOriginal.length === 1) {
    cluster!.findTopicPartitionMetadata = function findTopicPartitionMetadata(this: ClusterInternals, topic: string): unknown[] {
      const list = this.brokerPool.metadata?.topicMetadata;
      if (list === undefined) return (findOriginal as (topic: string) => unknown[]).call(this, topic); // throws "not loaded"
      return indexOf(list).get(topic)?.partitionMetadata ?? [];
    };
  }
  const knowsOffsets = ['fetchTopicsOffset', 'findLeaderForPartitions', 'defaultOffset', 'findBroker'].every((name) => typeof cluster?.[name] === 'function');
  if (knowsOffsets && (cluster!.fetchTopicsOffset as (...args: unknown[]) => unknown).length === 1) cluster!.fetchTopicsOffset = fetchTopicsOffset;
  if (typeof brokerPool?.refreshMetadataIfNecessary === 'function' && typeof brokerPool.refreshMetadata === 'function') {
    brokerPool.refreshMetadataIfNecessary = async function refreshMetadataIfNecessary(this: BrokerPoolInternals, topics: string[]): Promise<void> {
      const list = this.metadata?.topicMetadata;
      const stale =
        list === undefined || this.metadataExpireAt == null || Date.now() > this.metadataExpireAt || !topics.every((topic) => indexOf(list).has(topic));
      if (stale) return this.refreshMetadata(topics);
    };
  }
}
