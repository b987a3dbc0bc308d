import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { applyTopicLookupFix } from '../../../src/kafka/topic-lookup-fix.js';

const require = createRequire(import.meta.url);
type Method = (this: unknown, ...args: unknown[]) => unknown;
const cluster = (require('kafkajs/src/cluster/index.js') as { prototype: Record<string, Method> }).prototype;
const brokerPool = (require('kafkajs/src/cluster/brokerPool.js') as { prototype: Record<string, Method> }).prototype;
const originalFind = cluster.findTopicPartitionMetadata!;
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
});
