// Config objects for the router's unit tests, in YAML shape and loaded through the
// real loader, so the tests see exactly what the daemon would.
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import type { InboundRecord } from '../../../src/router/invalid-records.js';
import { compileRoutingTable } from '../../../src/router/routing-table.js';
import type { RoutingTable } from '../../../src/router/routing-table.js';
import { topicNames } from '../../../src/runtime/topics.js';

export const PREFIX = 'unit.';
export const NAMES = topicNames(PREFIX);

export function loadConfig(yamlShape: Record<string, unknown>): Config {
  const result = parseConfigText(stringify(yamlShape), 'unit.yaml', {});
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

const hook = (name: string) => ({ type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${name}` }] } });

/** web → [main, other, off(disabled)], blocking "Debug Ping"; app → [main], allowing only "Order Completed"; bare → []. */
export const BASE_CONFIG = {
  kafka: { topicPrefix: PREFIX },
  sources: [
    { id: 'web', writeKey: 'wk-web-1234', destinations: ['main', 'other', 'off'], trackFilter: { blockEvents: ['Debug Ping'] } },
    { id: 'app', writeKey: 'wk-app-5678', destinations: ['main'], trackFilter: { allowEvents: ['Order Completed'] } },
    { id: 'bare', destinations: [] },
  ],
  destinations: [
    { id: 'main', ...hook('main') },
    { id: 'other', ...hook('other') },
    { id: 'off', enabled: false, ...hook('off') },
  ],
};

export function baseTable(overrides: Record<string, unknown> = {}): RoutingTable {
  return compileRoutingTable(loadConfig({ ...BASE_CONFIG, ...overrides }), NAMES);
}

export function record(
  value: string | Buffer | null,
  options: { headers?: Record<string, string | Buffer>; key?: string | null; offset?: string; partition?: number; timestamp?: string; topic?: string } = {},
): InboundRecord {
  return {
    topic: options.topic ?? NAMES.calls,
    partition: options.partition ?? 3,
    offset: options.offset ?? '41',
    timestamp: options.timestamp ?? String(Date.UTC(2026, 4, 1, 12, 0, 0)),
    key: options.key === null ? null : Buffer.from(options.key ?? 'u-1'),
    value: typeof value === 'string' ? Buffer.from(value) : value,
    headers: options.headers ?? {},
  };
}
