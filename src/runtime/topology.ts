// Every topic of every role, named and created here: roles ask the topology for the
// topics they read and write, and a `TopicEnsurer` creates the missing ones.
import { retryPolicyOf } from '../config/retry-policy.js';
import type { Config, RetryTier } from '../config/schema.js';
import type { KafkaAdmin, TopicSpec } from '../kafka/index.js';
import { audienceTopicNames, topicNames } from './topics.js';
import type { AudienceTopicNames, TopicNames } from './topics.js';

export interface Topology {
  names: TopicNames;
  audiences: AudienceTopicNames;
  /** What the gateway writes: `calls` and `calls.invalid`. */
  gateway(): TopicSpec[];
  /**
   * Every topic the router reads or writes for this config: `calls`, `calls.invalid`,
   * `calls.blocked`, `violations`, `deletions`, and per destination (enabled or not, so that enabling one later needs
   * no new topics) its delivery topic, one retry topic per tier of its retry policy
   * (its own `settings.retry.tiers` or `delivery.retryTiers`) and its dead letters.
   */
  router(config: Config): TopicSpec[];
  /** One destination's delivery topic, a retry topic per configured tier, its dead letters. */
  destination(destinationId: string, tiers: readonly RetryTier[]): TopicSpec[];
  /** The audience processor's own topics: `audience.events`, and the compacted `audience.profiles` and `user.sources`. */
  audienceState(): TopicSpec[];
  /** The delivery topics the audience processor writes to: every destination of an audience or a source. */
  audienceDeliveries(config: Config): TopicSpec[];
}

export function createTopology(prefix: string): Topology {
  const names = topicNames(prefix);
  const audiences = audienceTopicNames(prefix);
  const destination = (id: string, tiers: readonly RetryTier[]): TopicSpec[] => [
    { topic: names.deliveries(id) },
    ...tiers.map((tier) => ({ topic: names.retry(id, tier.name) })),
    { topic: names.dlq(id) },
  ];
  return {
    names,
    audiences,
    gateway: () => [{ topic: names.calls }, { topic: names.callsInvalid }],
    router: (config) => [
      { topic: names.calls },
      { topic: names.callsInvalid },
      { topic: names.callsBlocked },
      { topic: names.violations },
      { topic: names.deletions },
      ...config.destinations.flatMap((d) => destination(d.id, retryPolicyOf(config, d).tiers)),
    ],
    destination,
    audienceState: () => [{ topic: audiences.events }, { topic: audiences.profiles, compacted: true }, { topic: audiences.userSources, compacted: true }],
    audienceDeliveries: (config) =>
      [...new Set([...config.audiences.flatMap((a) => a.destinations), ...config.sources.flatMap((s) => s.destinations)])].map((id) => ({
        topic: names.deliveries(id),
      })),
  };
}

/**
 * Creates what `specs` names and this process has not ensured yet, serialized, with
 * the config's partitions and replication factor. Remembers what it ensured, so each
 * config reload asks the broker only about new topics.
 */
export class TopicEnsurer {
  private readonly ensured = new Set<string>();
  private ensuring: Promise<unknown> = Promise.resolve();

  constructor(private readonly admin: KafkaAdmin) {}

  /** Resolves with the topics it created. */
  ensure(specs: readonly TopicSpec[], config: Config): Promise<string[]> {
    const run = this.ensuring.then(async () => {
      const missing = specs.filter((spec) => !this.ensured.has(spec.topic));
      if (missing.length === 0) return [];
      const created = await this.admin.ensureTopics(missing, config.kafka);
      for (const spec of missing) this.ensured.add(spec.topic);
      return created;
    });
    this.ensuring = run.catch(() => undefined);
    return run;
  }
}
