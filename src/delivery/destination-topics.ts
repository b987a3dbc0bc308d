import type { RetryTier } from '../config/schema.js';
import { parseDuration } from '../config/duration.js';
import type { TopicNames } from '../runtime/topics.js';

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
 * `existing` is the broker's topic list, not changed once given (it is indexed once:
 * retryTopicsOf); `taken` holds topics that belong to other destinations (an id such as
 * `a.retry.1m` would otherwise look like a tier of `a`).
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
  const leftovers = retryTopicsOf(existing, prefix)
    .filter((topic) => !configured.has(topic) && !taken.has(topic))
    .flatMap((topic) => {
      const name = topic.slice(prefix.length);
      const ms = parseDuration(name);
      return ms === undefined ? [] : [{ tier: { name, ms }, topic, leftover: true }];
    })
    .sort((a, b) => a.tier.ms - b.tier.ms);
  return { main: names.deliveries(destinationId), retries: [...retries, ...leftovers], dlq: names.dlq(destinationId) };
}

const RETRY = '.retry.';
/** The retry topics of each broker topic list by their stem (see retryTopicsOf), built once per list. */
const retryTopicsByStem = new WeakMap<readonly string[], Map<string, string[]>>();

/**
 * The topics of `existing` named `<stem><name>` where `<name>` holds no `.retry.`: a
 * destination's retry topics when `stem` is its `names.retry(id, '')`. A topic that
 * starts with the stem and has `.retry.` further on is another destination's (an id
 * such as `a.retry.1m`), and no tier name is a duration then anyway.
 * NOTE: found in one index per list, not a scan of the list per destination: at 1,000
 * destinations the scans took over a second, at each deliverer start and each
 * GET /v1/destinations (figures: docs/benchmarks.md#figures-behind-the-code).
 */
function retryTopicsOf(existing: readonly string[], stem: string): readonly string[] {
  let index = retryTopicsByStem.get(existing);
  if (index === undefined) {
    index = new Map();
    for (const topic of existing) {
      const at = topic.lastIndexOf(RETRY);
      if (at < 0) continue;
      const key = topic.slice(0, at + RETRY.length);
      const list = index.get(key);
      if (list === undefined) index.set(key, [topic]);
      else list.push(topic);
    }
    retryTopicsByStem.set(existing, index);
  }
  return index.get(stem) ?? [];
}

/** Every topic the destination's lane reads (the deliverer's consumer subscribes to them). */
export function consumedTopics(topics: DestinationTopics): string[] {
  return [topics.main, ...topics.retries.map((r) => r.topic)];
}
