/** Topic names of docs/kafka.md, after the configured prefix. */
export interface TopicNames {
  calls: string;
  callsInvalid: string;
  /** Calls a tracking plan blocked, as received, with their violations (docs/tracking-plans.md). */
  callsBlocked: string;
  /** One record per call that violates its source's tracking plan. */
  violations: string;
  deletions: string;
  deliveries(destinationId: string): string;
  retry(destinationId: string, tierName: string): string;
  dlq(destinationId: string): string;
}

export function topicNames(prefix: string): TopicNames {
  return {
    calls: `${prefix}calls`,
    callsInvalid: `${prefix}calls.invalid`,
    callsBlocked: `${prefix}calls.blocked`,
    violations: `${prefix}violations`,
    deletions: `${prefix}deletions`,
    deliveries: (id) => `${prefix}deliveries.${id}`,
    retry: (id, tier) => `${prefix}deliveries.${id}.retry.${tier}`,
    dlq: (id) => `${prefix}deliveries.${id}.dlq`,
  };
}

/** The internal topics of audiences (docs/kafka.md), after the configured prefix. */
export interface AudienceTopicNames {
  /** Calls and deletion requests, re-keyed by identity. */
  events: string;
  /** Compacted changelog of profiles; partition n holds the profiles of `events` partition n. */
  profiles: string;
  /**
   * Compacted, key userId, value the JSON list of the source ids that have sent calls
   * for the user (docs/kafka.md); partition n holds the users of `events` partition n.
   */
  userSources: string;
}

export function audienceTopicNames(prefix: string): AudienceTopicNames {
  return { events: `${prefix}audience.events`, profiles: `${prefix}audience.profiles`, userSources: `${prefix}user.sources` };
}
