// The partition a trace reads for a user is the one every producer wrote the user's
// records to: checked against kafkajs's own default partitioner (murmur2, as the Java client).
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { partitionOfKey } from '../../../src/kafka/index.js';

const kafkajsPartition = Partitioners.DefaultPartitioner();

function kafkajsOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 }));
  return kafkajsPartition({ topic: 't', partitionMetadata, message: { key, value: null } });
}

describe('partitionOfKey', () => {
  const keys = ['u-1', 'u-2', 'anon-7', '', 'ü-ñ-ø', 'a'.repeat(300), '42', 'user@example.com', ...Array.from({ length: 200 }, (_, i) => `user-${i}`)];

  it.each([1, 2, 3, 12, 50, 101])('puts every key where kafkajs (and the Java client) do, in a topic of %i partitions', (partitions) => {
    const ours = keys.map((key) => partitionOfKey(Buffer.from(key, 'utf8'), partitions));
    expect(ours).toEqual(keys.map((key) => kafkajsOf(key, partitions)));
    if (partitions > 1) expect(new Set(ours).size).toBeGreaterThan(1);
  });
});
