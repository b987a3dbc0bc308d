import { describe, expect, it } from 'vitest';
import { consumedTopics, destinationTopics } from '../../../src/delivery/destination-topics.js';
import { topicNames } from '../../../src/kafka/topics.js';

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
});
