// Configs and role dependencies for tests that run roles in this process.
import { parseConfigText } from '../../src/config/load.js';
import type { Config } from '../../src/config/schema.js';
import { staticConfigStore, type ConfigListener, type ConfigStore } from '../../src/config/store.js';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import type { RoleDeps } from '../../src/runtime/deps.js';

/**
 * A config from its YAML shape (durations as strings such as '5s'), through the
 * daemon's own loader; throws with every problem it reports. `file` names the config
 * in those messages.
 */
export function testConfig(shape: unknown, file = 'test.yaml'): Config {
  // JSON is YAML: no second serializer needed.
  const loaded = parseConfigText(JSON.stringify(shape), file, {});
  if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
  return loaded.config;
}

/**
 * What `switchyard` hands a role, for a test: the config (never reloaded), a Kafka
 * client for its brokers, fresh metrics and a silent logger, unless given.
 */
export function testRoleDeps(config: Config, given: Partial<RoleDeps> = {}): RoleDeps {
  const logger = given.logger ?? silentLogger();
  return {
    config: given.config ?? staticConfigStore(config),
    kafka: given.kafka ?? createKafka(config.kafka, logger),
    metrics: given.metrics ?? createMetrics({ defaultMetrics: false }),
    logger,
  };
}

/** A config store a test changes by hand, telling its listeners as a file reload would. */
export function mutableStore(initial: Config): ConfigStore & { set(next: Config): void } {
  let config = initial;
  const listeners = new Set<ConfigListener>();
  return {
    current: () => config,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: () => undefined,
    set(next) {
      const previous = config;
      config = next;
      for (const listener of listeners) listener(next, previous);
    },
  };
}
