import type { Logger } from 'pino';
import type { ConfigStore } from '../config/store.js';
import type { KafkaClient } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';
import type { DestinationStates } from '../lifecycle/state-follower.js';

/** What the composition root hands every role. */
export interface RoleDeps {
  config: ConfigStore;
  kafka: KafkaClient;
  metrics: Metrics;
  logger: Logger;
  /** `destinations.state` as this process follows it (src/lifecycle/state-follower.ts); started by the composition root. */
  destinationStates?: DestinationStates;
}
