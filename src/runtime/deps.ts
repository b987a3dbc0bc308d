import type { Logger } from 'pino';
import type { ConfigStore } from '../config/store.js';
import type { KafkaClient } from '../kafka/index.js';
import type { Metrics } from '../observability/metrics.js';

/** What the composition root hands every role. */
export interface RoleDeps {
  config: ConfigStore;
  kafka: KafkaClient;
  metrics: Metrics;
  logger: Logger;
}
