import { describe, expect, it } from 'vitest';
import { consumedTopics, destinationTopics } from '../../../src/delivery/destination-topics.js';
import { topicNames } from '../../../src/runtime/topics.js';

const names = topicNames('sy.');
const tiers = [
  { name: '10s', ms: 10_000 },
  { name: '1m', ms: 60_000 },
];

describe('destinationTopics', () => {
  it('names the main, tier and dead-letter topics', () => {
    const topics = destinationTopics(names, 'hooks', tiers, [], new Set());
    expect(topics).toEqual({
      main: 'sy.deliveries.hooks',
      retries: [
        { tier: tiers[0], topic: 'sy.deliveries.hooks.retry.10s', leftover: false },
        { tier: tiers[1], topic: 'sy.deliveries.hooks.retry.1m', leftover: false },
      ],
      dlq: 'sy.deliveries.hooks.dlq',
    });
    expect(consumedTopics(topics)).toEqual(['sy.deliveries.hooks', 'sy.deliveries.hooks.retry.10s', 'sy.deliveries.hooks.retry.1m']);
  });

  it('also reads tier topics left from an earlier config, shortest first', () => {
    const existing = [
      'sy.deliveries.hooks.retry.1h',
      'sy.deliveries.hooks.retry.10s',
      'sy.deliveries.hooks.retry.30s',
      'sy.deliveries.hooks.dlq',
      'sy.deliveries.hooks.retry.x.dlq', // not a duration: another destination's topic
      'sy.deliveries.hooks.retry.5m', // taken by another destination below
      'sy.deliveries.other.retry.1m',
      'other.deliveries.hooks.retry.2m',
    ];
    const topics = destinationTopics(names, 'hooks', tiers, existing, new Set(['sy.deliveries.hooks.retry.5m']));
    expect(topics.retries.map((r) => [r.topic, r.leftover])).toEqual([
      ['sy.deliveries.hooks.retry.10s', false],
      ['sy.deliveries.hooks.retry.1m', false],
      ['sy.deliveries.hooks.retry.30s', true],
      ['sy.deliveries.hooks.retry.1h', true],
    ]);
  });

  it('finds each destination its own leftovers in one broker list, an id holding .retry. included', () => {
    // One list for every destination, as the deliverer and the admin API pass it.
    const existing = [
      'sy.deliveries.a.retry.5m',
      'sy.deliveries.a.retry.1m', // the delivery topic of destination `a.retry.1m`: taken
      'sy.deliveries.a.retry.1m.retry.2h', // a leftover tier of `a.retry.1m`, not of `a`
      'sy.deliveries.a.retry.1m.retry.10s',
      'sy.deliveries.ab.retry.3m',
    ];
    const taken = new Set(['sy.deliveries.a', 'sy.deliveries.a.dlq', 'sy.deliveries.a.retry.1m', 'sy.deliveries.a.retry.1m.dlq', 'sy.deliveries.ab', 'sy.deliveries.ab.dlq']);
    const leftovers = (id: string) =>
      destinationTopics(names, id, tiers, existing, taken)
        .retries.filter((r) => r.leftover)
        .map((r) => r.topic);
    expect(leftovers('a')).toEqual(['sy.deliveries.a.retry.5m']);
    expect(leftovers('a.retry.1m')).toEqual(['sy.deliveries.a.retry.1m.retry.2h']);
    expect(leftovers('ab')).toEqual(['sy.deliveries.ab.retry.3m']);
    expect(leftovers('b')).toEqual([]);
  });
});
