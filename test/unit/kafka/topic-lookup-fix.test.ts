import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { applyTopicLookupFix } from '../../../src/kafka/topic-lookup-fix.js';

const require = createRequire(import.meta.url);
type Method = (this: unknown, ...args: unknown[]) => unknown;
const cluster = (require('kafkajs/src/cluster/index.js') as { prototype: Record<string, Method> }).prototype;
const brokerPool = (require('kafkajs/src/cluster/brokerPool.js') as { prototype: Record<string, Method> }).prototype;
const originalFind = cluster.findTopicPartitionMetadata!;
const originalFetchTopicsOffset = cluster.fetchTopicsOffset!;
applyTopicLookupFix();
const find = cluster.findTopicPartitionMetadata!;
const refreshIfNecessary = brokerPool.refreshMetadataIfNecessary!;

const topicMetadata = [
  { topic: 'a', partitionMetadata: [{ partitionId: 0, leader: 1 }] },
  { topic: 'b', partitionMetadata: [{ partitionId: 0, leader: 1 }, { partitionId: 1, leader: 2 }] },
  { topic: 'b', partitionMetadata: [{ partitionId: 9, leader: 9 }] },
];

describe("kafkajs's topic metadata lookups, by name instead of by scan", () => {
  it('replaced the method and answers as kafkajs did: the first entry of a topic, [] for an unknown one', () => {
    expect(find).not.toBe(originalFind);
    const self = { brokerPool: { metadata: { topicMetadata } } };
    for (const topic of ['a', 'b', 'nope']) expect(find.call(self, topic)).toEqual(originalFind.call(self, topic));
    expect(find.call(self, 'b')).toBe(topicMetadata[1]!.partitionMetadata);
  });

  it('sees a new metadata answer (kafkajs replaces the object on each refresh)', () => {
    const self = { brokerPool: { metadata: { topicMetadata } } };
    expect(find.call(self, 'c')).toEqual([]);
    self.brokerPool.metadata = { topicMetadata: [...topicMetadata, { topic: 'c', partitionMetadata: [{ partitionId: 3, leader: 1 }] }] };
    expect(find.call(self, 'c')).toEqual([{ partitionId: 3, leader: 1 }]);
  });

  it('still throws when no metadata was loaded', () => {
    expect(() => find.call({ brokerPool: { metadata: null } }, 'a')).toThrow(/not loaded/);
  });

  it('refreshes the metadata when it is missing, expired, or lacks a topic asked for, and only then', async () => {
    const refreshed: string[][] = [];
    const pool = (metadata: unknown, metadataExpireAt: number | null) => ({
      metadata,
      metadataExpireAt,
      refreshMetadata: async (topics: string[]) => {
        refreshed.push(topics);
      },
    });
    const later = Date.now() + 60_000;
    await refreshIfNecessary.call(pool({ topicMetadata }, later), ['a', 'b']);
    expect(refreshed).toEqual([]);
    await refreshIfNecessary.call(pool(null, later), ['a']);
    await refreshIfNecessary.call(pool({ topicMetadata }, null), ['b']);
    await refreshIfNecessary.call(pool({ topicMetadata }, Date.now() - 1), ['a']);
    await refreshIfNecessary.call(pool({ topicMetadata }, later), ['a', 'c']);
    expect(refreshed).toEqual([['a'], ['b'], ['a'], ['a', 'c']]);
  });

  it('asks each leader for the offsets of its partitions and merges the answers as kafkajs did, by a map', async () => {
    expect(cluster.fetchTopicsOffset).not.toBe(originalFetchTopicsOffset);
    // Three topics over two leaders; t2 has a partition on each.
    const metadata = {
      topicMetadata: [
        { topic: 't1', partitionMetadata: [{ partitionId: 0, leader: 1 }] },
        { topic: 't2', partitionMetadata: [{ partitionId: 0, leader: 1 }, { partitionId: 1, leader: 2 }] },
        { topic: 't3', partitionMetadata: [{ partitionId: 0, leader: 2 }] },
      ],
    };
    const fakeCluster = () => {
      const requests: unknown[] = [];
      const self = {
        brokerPool: { metadata },
        isolationLevel: 1,
        findTopicPartitionMetadata: cluster.findTopicPartitionMetadata,
        findLeaderForPartitions: cluster.findLeaderForPartitions,
        defaultOffset: cluster.defaultOffset,
        findBroker: async ({ nodeId }: { nodeId: number }) => ({
          listOffsets: async (request: { topics: { topic: string; partitions: { partition: number; timestamp: number }[] }[] }) => {
            requests.push({ nodeId, request });
            return { responses: request.topics.map(({ topic, partitions }) => ({ topic, partitions: partitions.map(({ partition, timestamp }) => ({ partition, offset: `${nodeId}:${partition}:${timestamp}`, errorCode: 0 })) })) };
          },
        }),
      };
      return { self, requests };
    };
    const query = [
      { topic: 't1', partitions: [{ partition: 0 }], fromBeginning: true },
      { topic: 't2', partitions: [{ partition: 0 }, { partition: 1 }], fromBeginning: false },
      { topic: 't3', partitions: [{ partition: 0 }], fromTimestamp: 1234 },
    ];
    const theirs = fakeCluster();
    const ours = fakeCluster();
    const expected = await originalFetchTopicsOffset.call(theirs.self, query);
    const got = await cluster.fetchTopicsOffset!.call(ours.self, query);
    expect(got).toEqual(expected);
    expect(ours.requests).toEqual(theirs.requests);
    // What the answer says, spelled out: t2's partitions from both leaders, each with its own timestamp.
    expect(got).toEqual([
      { topic: 't1', partitions: [{ partition: 0, offset: '1:0:-2' }] },
      { topic: 't2', partitions: [{ partition: 0, offset: '1:0:-1' }, { partition: 1, offset: '2:1:-1' }] },
      { topic: 't3', partitions: [{ partition: 0, offset: '2:0:1234' }] },
    ]);
  });
});
