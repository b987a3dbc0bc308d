/** Topic names of DESIGN §4, after the configured prefix. */
export interface TopicNames {
  calls: string;
  callsInvalid: string;
  deletions: string;
  deliveries(destinationId: string): string;
  retry(destinationId: string, tierName: string): string;
  dlq(destinationId: string): string;
}

export function topicNames(prefix: string): TopicNames {
  return {
    calls: `${prefix}calls`,
    callsInvalid: `${prefix}calls.invalid`,
    deletions: `${prefix}deletions`,
    deliveries: (id) => `${prefix}deliveries.${id}`,
    retry: (id, tier) => `${prefix}deliveries.${id}.retry.${tier}`,
    dlq: (id) => `${prefix}deliveries.${id}.dlq`,
  };
}
