// The partition a trace reads for a user is the one every producer wrote the user's
// records to: checked against the Java client's default partitioner (murmur2, the sign
// bit masked; kafkajs's is the same), written out in test/support/java-partitioner.ts.
import { describe, expect, it } from 'vitest';
import { partitionOfKey } from '../../../src/kafka/index.js';
import { javaMurmur2, javaPartition } from '../../support/java-partitioner.js';

describe('the oracle', () => {
  // Kafka's own vectors (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2).
  it.each([
    ['21', -973932308],
    ['foobar', -790332482],
    ['a-little-bit-long-string', -985981536],
    ['a-little-bit-longer-string', -1486304829],
    ['lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8', -58897971],
    ['abc', 479470107],
  ])('murmur2(%j) is %i, as in the Java client', (text, hash) => {
    expect(javaMurmur2(Buffer.from(text, 'utf8'))).toBe(hash);
  });
});

describe('partitionOfKey', () => {
  const keys = ['u-1', 'u-2', 'anon-7', '', 'ü-ñ-ø', 'a'.repeat(300), '42', 'user@example.com', ...Array.from({ length: 200 }, (_, i) => `user-${i}`)];

  it.each([1, 2, 3, 12, 50, 101])('puts every key where the Java client (and kafkajs) do, in a topic of %i partitions', (partitions) => {
    const ours = keys.map((key) => partitionOfKey(Buffer.from(key, 'utf8'), partitions));
    expect(ours).toEqual(keys.map((key) => javaPartition(Buffer.from(key, 'utf8'), partitions)));
    if (partitions > 1) expect(new Set(ours).size).toBeGreaterThan(1);
  });
});
