// A destination's effective retry policy: its `settings.retry` over `delivery.retryTiers`
// and `delivery.maxRetryWindow` (docs/webhooks.md#retry-policy-per-destination). Every
// place that names a destination's retry tier topics (the router's and the deliverer's
// topic creation, the lanes, trace, the destinations view) resolves them here, so that
// they all agree on which tiers a destination has.
import type { Config, DestinationConfig, RetryTier } from './schema.js';

export interface RetryPolicy {
  /** In order; the last one repeats until the window ends. Each is a topic `deliveries.<id>.retry.<tier>`. */
  tiers: readonly RetryTier[];
  maxRetryWindowMs: number;
  /** Statuses made permanent at once for this destination; empty: Segment's rules (classify.ts). */
  stopOn: readonly number[];
}

/**
 * The policy of `destination` (absent: one not in the config, e.g. traced after its
 * removal): each key of `settings.retry` it sets, the delivery defaults for the others.
 */
export function retryPolicyOf(config: Pick<Config, 'delivery'>, destination: Pick<DestinationConfig, 'settings'> | undefined): RetryPolicy {
  const own = destination?.settings.retry;
  return {
    tiers: own?.tiers ?? config.delivery.retryTiers,
    maxRetryWindowMs: own?.maxWindowMs ?? config.delivery.maxRetryWindowMs,
    stopOn: own?.stopOn ?? [],
  };
}

/** The policy of the destination with this id in `config` (the defaults for an id the config does not hold). */
export function retryPolicyOfId(config: Pick<Config, 'delivery' | 'destinations'>, destinationId: string): RetryPolicy {
  return retryPolicyOf(config, config.destinations.find((d) => d.id === destinationId));
}
