// NOTE: kafkajs 2.2.4 (pinned) finds a topic's metadata by scanning the list of every
// topic it knows (`topicMetadata.find`), and each fetch of a consumer does so once per
// subscribed topic, several times over (the stale-assignment check, the leaders, the
// metadata freshness check with `every` over `some`): a fetch costs the square of the
// topics. The deliverer at 1,000 destinations subscribes to thousands of topics, and
// this was most of its CPU while idle. The same two methods, with the scan replaced
// by a map built once per metadata answer (kafkajs replaces the metadata object on each
// refresh and never changes one in place). Same results, same errors.
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

/** Replaces kafkajs's Cluster.findTopicPartitionMetadata and BrokerPool.refreshMetadataIfNecessary; once per process, only where they have the shape this fix knows. */
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
  if (typeof brokerPool?.refreshMetadataIfNecessary === 'function' && typeof brokerPool.refreshMetadata === 'function') {
    brokerPool.refreshMetadataIfNecessary = async function refreshMetadataIfNecessary(this: BrokerPoolInternals, topics: string[]): Promise<void> {
      const list = this.metadata?.topicMetadata;
      const stale =
        list === undefined || this.metadataExpireAt == null || Date.now() > this.metadataExpireAt || !topics.every((topic) => indexOf(list).has(topic));
      if (stale) return this.refreshMetadata(topics);
    };
  }
}
