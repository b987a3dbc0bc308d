import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { applyJoinFix, requestOf, rewriteConsumerGroup } from '../../../src/kafka/join-fix.js';

const require = createRequire(import.meta.url);
const consumerGroupFile = require.resolve('kafkajs/src/consumer/consumerGroup.js');

interface SubscriptionStateLike {
  assign(topicPartitions: { topic: string; partitions?: number[] }[]): void;
  assigned(): { topic: string; partitions: number[] }[];
  assignedPartitionsByTopic: Record<string, unknown>;
}
const SubscriptionState = require('kafkajs/src/consumer/subscriptionState.js') as new () => SubscriptionStateLike;
const ConsumerGroup = require(consumerGroupFile) as { prototype: Record<PropertyKey, unknown> };

/** What kafkajs 2.2.4's assign built (its reducer, as written in subscriptionState.js). */
function spreadAssign(topicPartitions: { topic: string; partitions?: number[] }[]): Record<string, unknown> {
  return topicPartitions.reduce<Record<string, unknown>>((assigned, { topic, partitions = [] }) => ({ ...assigned, [topic]: { topic, partitions } }), {});
}

describe('the join fix for kafkajs', () => {
  it('finds both spread reducers of the pinned consumerGroup.js and leaves none behind', () => {
    const source = readFileSync(consumerGroupFile, 'utf8');
    const { source: rewritten, replaced, lookups } = rewriteConsumerGroup(source);
    expect(replaced).toBe(2);
    expect(lookups).toBe(1);
    expect(rewritten).not.toContain('requests.find(');
    expect(rewritten.match(/__switchyardRequestOf\(requests, topicName\)/g)).toHaveLength(1);
    // (a third spread, by broker node id, has a handful of keys: left as it is)
    expect(rewritten).not.toMatch(/\.\.\.\w+,\s*\[topic\]/);
    expect(source).toMatch(/\.\.\.\w+,\s*\[topic\]/);
    expect(rewritten.match(/\.reduce\(\s*__switchyardByTopic,\s*\{\}\s*\)/g)).toHaveLength(2);
    // Nothing else changed: the rest of the file, byte for byte.
    expect(rewritten.replace(/__switchyardByTopic/g, '').replace('__switchyardRequestOf(requests, topicName)', '')).toBe(
      source.replace(/\(\s*(\w+),\s*\{\s*topic,\s*partitions\s*\}\s*\)\s*=>\s*\(\{\s*\.\.\.\1,\s*\[topic\]:\s*partitions,?\s*\}\)/g, '').replace('requests.find(({ topic }) => topic === topicName)', ''),
    );
  });

  it('builds the same assignment map as kafkajs, key order, repeated topics and a topic named __proto__ included', () => {
    applyJoinFix();
    const input = [
      { topic: 'deliveries.b', partitions: [1, 0] },
      { topic: '__proto__', partitions: [0] },
      { topic: 'deliveries.a' },
      { topic: 'deliveries.b', partitions: [2] },
    ];
    const state = new SubscriptionState();
    state.assign(input);
    expect(state.assignedPartitionsByTopic).toEqual(spreadAssign(input));
    expect(Object.keys(state.assignedPartitionsByTopic)).toEqual(['deliveries.b', '__proto__', 'deliveries.a']);
    expect(Object.getPrototypeOf(state.assignedPartitionsByTopic)).toBe(Object.prototype);
    expect(state.assigned()).toEqual([
      { topic: 'deliveries.b', partitions: [2] },
      { topic: '__proto__', partitions: [0] },
      { topic: 'deliveries.a', partitions: [] },
    ]);
  });

  it('gives the consumer group a joinAndSync whose join and sync build their maps in one pass', () => {
    applyJoinFix();
    const joinAndSync = ConsumerGroup.prototype.joinAndSync as () => unknown;
    expect(joinAndSync.toString()).toContain('__switchyardByTopic');
    const symbols = Object.getOwnPropertySymbols(ConsumerGroup.prototype).map((s) => s.description);
    // kafkajs's own join and sync stay beside the rewritten pair that joinAndSync now calls.
    expect(symbols.filter((d) => d === 'private:ConsumerGroup:sync')).toHaveLength(2);
    expect(symbols.filter((d) => d === 'private:ConsumerGroup:join')).toHaveLength(2);
    const sync = Object.getOwnPropertySymbols(ConsumerGroup.prototype)
      .filter((s) => s.description === 'private:ConsumerGroup:sync')
      .map((s) => (ConsumerGroup.prototype[s] as () => unknown).toString());
    expect(sync.filter((text) => text.includes('__switchyardByTopic'))).toHaveLength(1);
  });

  it('finds the first request of a topic, as the scan did, and gives the consumer group a fetch that looks it up', () => {
    applyJoinFix();
    const requests = [
      { topic: 'deliveries.a', partitions: [0] },
      { topic: 'deliveries.b', partitions: [0] },
      { topic: 'deliveries.a', partitions: [1] },
      { topic: '__proto__', partitions: [0] },
    ];
    for (const topic of ['deliveries.a', 'deliveries.b', '__proto__', 'deliveries.c', 'constructor']) {
      expect(requestOf(requests, topic)).toBe(requests.find((request) => request.topic === topic));
    }
    // A new list is a new fetch's: its own index.
    const next = [{ topic: 'deliveries.c', partitions: [0] }];
    expect(requestOf(next, 'deliveries.c')).toBe(next[0]);
    expect(requestOf(next, 'deliveries.a')).toBeUndefined();
    expect((ConsumerGroup.prototype.fetch as () => unknown).toString()).toContain('__switchyardRequestOf(requests, topicName)');
  });
});
