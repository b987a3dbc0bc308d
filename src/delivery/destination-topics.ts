import type { RetryTier } from '../config/schema.js';
import { parseDuration } from '../config/duration.js';
import type { TopicNames } from '../kafka/index.js';

export interface DestinationTopics {
  main: string;
  /** Retry topic per tier: the configured tiers in order, then leftovers. */
  retries: { tier: RetryTier; topic: string; leftover: boolean }[];
  dlq: string;
}

/**
 * The topics one destination's lane reads and writes. Besides the configured tiers it
 * reads every existing retry topic of the destination (`leftover`): after the tiers in
 * the config change, events still wait in the old tier topics, and they must be
 * delivered all the same. New retries go only to configured tiers.
 *
 * `existing` is the broker's topic list; `taken` holds topics that belong to other
 * destinations (an id such as `a.retry.1m` would otherwise look like a tier of `a`).
 */
export function destinationTopics(
  names: TopicNames,
  destinationId: string,
  tiers: readonly RetryTier[],
  existing: readonly string[],
  taken: ReadonlySet<string>,
): DestinationTopics {
  const retries = tiers.map((tier) => ({ tier, topic: names.retry(destinationId, tier.name), leftover: false }));
  const configured = new Set(retries.map((r) => r.topic));
  const prefix = names.retry(destinationId, '');
  const leftovers = existing
    .filter((topic) => topic.startsWith(prefix) && !configured.has(topic) && !taken.has(topic))
    .flatMap((topic) => {
      const name = topic.slice(prefix.length);
      const ms = parseDuration(name);
      return ms === undefined ? [] : [{ tier: { name, ms }, topic, leftover: true }];
    })
    .sort((a, b) => a.tier.ms - b.tier.ms);
  return { main: names.deliveries(destinationId), retries: [...retries, ...leftovers], dlq: names.dlq(destinationId) };
}

/** Every topic the destination's lane reads (the deliverer's consumer subscribes to them). */
export function consumedTopics(topics: DestinationTopics): string[] {
  return [topics.main, ...topics.retries.map((r) => r.topic)];
}
