// assignPartitions (membership.ts): the group leader's assignment.
import { describe, expect, it } from 'vitest';
import { assignPartitions } from '../../../src/kafka/membership.js';

function assign(subscriptions: Record<string, string[]>, counts: Record<string, number>): Record<string, Record<string, number[]>> {
  const plan = assignPartitions(new Map(Object.entries(subscriptions)), new Map(Object.entries(counts)));
  return Object.fromEntries([...plan].map(([member, topics]) => [member, Object.fromEntries(topics)]));
}

describe('assignPartitions', () => {
  it.each([
    ['one member takes every partition', { m1: ['a'] }, { a: 3 }, { m1: { a: [0, 1, 2] } }],
    ['two members split one topic round-robin', { m2: ['a'], m1: ['a'] }, { a: 4 }, { m1: { a: [0, 2] }, m2: { a: [1, 3] } }],
    ['uneven counts: the turn carries over from topic to topic', { m1: ['a', 'b'], m2: ['a', 'b'] }, { a: 3, b: 1 }, { m1: { a: [0, 2] }, m2: { a: [1], b: [0] } }],
    ['more members than partitions: some get none', { m1: ['a'], m2: ['a'], m3: ['a'] }, { a: 2 }, { m1: { a: [0] }, m2: { a: [1] }, m3: {} }],
    ['different subscriptions: a topic only to its readers', { m1: ['a'], m2: ['a', 'b'], m3: ['b'] }, { a: 2, b: 2 }, { m1: { a: [0] }, m2: { a: [1], b: [0] }, m3: { b: [1] } }],
    ['a topic that does not exist (no partitions) assigns nothing', { m1: ['a', 'gone'] }, { a: 1 }, { m1: { a: [0] } }],
    ['a member with no topics gets nothing', { m1: [], m2: ['a'] }, { a: 2 }, { m1: {}, m2: { a: [0, 1] } }],
  ])('%s', (_what, subscriptions, counts, expected) => {
    expect(assign(subscriptions, counts)).toEqual(expected);
  });

  it('every partition of every subscribed topic goes to exactly one of its subscribers, and members of equal subscriptions differ by at most one', () => {
    const subscriptions: Record<string, string[]> = {};
    const counts: Record<string, number> = { t0: 7, t1: 1, t2: 12, t3: 5, t4: 0 };
    const topics = Object.keys(counts);
    for (let m = 0; m < 6; m++) subscriptions[`member-${m}`] = topics.filter((_, i) => (i + m) % 3 !== 0);
    const plan = assign(subscriptions, counts);
    for (const [topic, count] of Object.entries(counts)) {
      const owners = new Map<number, string[]>();
      for (const [member, assigned] of Object.entries(plan)) {
        for (const p of assigned[topic] ?? []) owners.set(p, [...(owners.get(p) ?? []), member]);
        if (assigned[topic] !== undefined) expect(subscriptions[member]).toContain(topic);
      }
      const readers = Object.values(subscriptions).some((list) => list.includes(topic));
      expect([...owners.keys()].sort((a, b) => a - b)).toEqual(readers ? Array.from({ length: count }, (_, i) => i) : []);
      for (const list of owners.values()) expect(list).toHaveLength(1);
    }
    // All members read t0 or t2 alike in pairs (same subscriptions): their totals differ by at most one.
    const totals = new Map<string, number>();
    for (const [member, assigned] of Object.entries(plan)) totals.set(member, Object.values(assigned).reduce((n, list) => n + list.length, 0));
    const bySubscription = new Map<string, number[]>();
    for (const [member, list] of Object.entries(subscriptions)) bySubscription.set(list.join(), [...(bySubscription.get(list.join()) ?? []), totals.get(member)!]);
    for (const group of bySubscription.values()) expect(Math.max(...group) - Math.min(...group)).toBeLessThanOrEqual(1);
  });

  it('is the same whatever order the members come in', () => {
    const a = assign({ x: ['a', 'b'], y: ['a'], z: ['b'] }, { a: 5, b: 3 });
    const b = assign({ z: ['b'], y: ['a'], x: ['a', 'b'] }, { a: 5, b: 3 });
    expect(a).toEqual(b);
  });
});
