// The config file of a test that runs `switchyard deliverer` alone (test/support/daemon.ts).
import { writeConfigFile } from './daemon.js';
import { testBrokers } from './kafka.js';

export interface DelivererConfig {
  clientId: string;
  topicPrefix: string;
  partitions: number;
  /** The config's `delivery` section, durations as strings ('5s'). */
  delivery: Record<string, unknown>;
  /** Destination id → its one webhook URL (or the URL and more settings: batch, ordering, sharedSecret), in the config's order. */
  destinations: Record<string, string | ({ url: string } & Record<string, unknown>)>;
}

/**
 * Writes a deliverer's config: the test broker, an admin port the OS picks, `delivery`,
 * the destinations, and the one source a config needs (nothing is routed). Returns its
 * path; with `file`, rewrites that one (a config reload).
 */
export function writeDelivererConfig(config: DelivererConfig, file?: string): string {
  return writeConfigFile(
    {
      kafka: { brokers: testBrokers(), clientId: config.clientId, topicPrefix: config.topicPrefix, partitions: config.partitions },
      admin: { port: 0, host: '127.0.0.1' },
      delivery: config.delivery,
      sources: [{ id: 'web' }],
      destinations: Object.entries(config.destinations).map(([id, entry]) => {
        const { url, ...more } = typeof entry === 'string' ? { url: entry } : entry;
        return { id, type: 'webhooks', settings: { webhooks: [{ url }], ...more } };
      }),
    },
    file,
  );
}
