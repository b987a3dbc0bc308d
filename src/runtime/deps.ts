import type { Logger } from 'pino';
import type { ConfigStore } from '../config/store.js';
import type { Kafka } from '../kafka/client.js';
import type { Metrics } from '../observability/metrics.js';

/** What the composition root hands every role. */
export interface RoleDeps {
  config: ConfigStore;
  kafka: Kafka;
  metrics: Metrics;
  logger: Logger;
}
