// partitionKey (partition-key.ts): the one spelling of a partition as a map key, made once
// per topic and partition and kept (a bounded number of topics).
import { describe, expect, it } from 'vitest';
import { partitionKey, splitPartitionKey } from '../../../src/kafka/partition-key.js';

describe('partitionKey', () => {
  it('spells <partition>:<topic>, and splits back exactly', () => {
    expect(partitionKey('deliveries.hooks-main.retry.10s', 0)).toBe('0:deliveries.hooks-main.retry.10s');
    expect(partitionKey('calls', 11)).toBe('11:calls');
    expect(splitPartitionKey(partitionKey('deliveries.hooks-main.retry.10s', 3))).toEqual({ topic: 'deliveries.hooks-main.retry.10s', partition: 3 });
  });

  it('gives each topic and partition its own key, asked again or not', () => {
    const keys = new Set<string>();
    for (let round = 0; round < 2; round++) {
      for (const topic of ['a', 'b', 'a.b', 'a_1']) for (let p = 0; p < 4; p++) keys.add(partitionKey(topic, p));
    }
    expect(keys.size).toBe(16);
  });

  it('stays right past the number of topics it keeps (20,000)', () => {
    for (let i = 0; i < 20_005; i++) expect(partitionKey(`t-${i}`, i % 7)).toBe(`${i % 7}:t-${i}`);
    expect(partitionKey('t-0', 0)).toBe('0:t-0');
  });
});
