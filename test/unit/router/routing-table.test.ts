import { describe, expect, it } from 'vitest';
import { compileRoutingTable } from '../../../src/router/routing-table.js';
import { BASE_CONFIG, loadConfig, NAMES } from './fixtures.js';
import { createTopology } from '../../../src/runtime/topology.js';

describe('routing table', () => {
  const config = loadConfig({ ...BASE_CONFIG, delivery: { retryTiers: ['10s', '1m'] } });

  it('looks sources up by id and by write key, with destinations in the source\'s order', () => {
    const table = compileRoutingTable(config, NAMES);
    expect(table.sourcesByWriteKey.get('wk-app-5678')?.id).toBe('app');
    expect(table.sourcesById.get('web')?.destinations.map((d) => [d.id, d.enabled, d.topic, d.catalogName])).toEqual([
      ['main', true, 'unit.deliveries.main', 'Webhooks'],
      ['other', true, 'unit.deliveries.other', 'Webhooks'],
      ['off', false, 'unit.deliveries.off', 'Webhooks'],
    ]);
    expect(table.sourcesById.get('web')?.trackFilter).toEqual({ kind: 'block', events: new Set(['Debug Ping']) });
    expect(table.sourcesById.get('app')?.trackFilter).toEqual({ kind: 'allow', events: new Set(['Order Completed']) });
    expect(table.sourcesById.get('bare')?.trackFilter).toBeUndefined();
    expect(table.sourcesById.get('web')?.idHeader.toString()).toBe('web');
  });

  it('lists every topic the router needs, disabled destinations included', () => {
    expect(createTopology('unit.').router(config).map((s) => s.topic)).toEqual([
      'unit.calls',
      'unit.calls.invalid',
      'unit.calls.blocked',
      'unit.violations',
      'unit.deletions',
      'unit.deliveries.main',
      'unit.deliveries.main.retry.10s',
      'unit.deliveries.main.retry.1m',
      'unit.deliveries.main.dlq',
      'unit.deliveries.other',
      'unit.deliveries.other.retry.10s',
      'unit.deliveries.other.retry.1m',
      'unit.deliveries.other.dlq',
      'unit.deliveries.off',
      'unit.deliveries.off.retry.10s',
      'unit.deliveries.off.retry.1m',
      'unit.deliveries.off.dlq',
    ]);
  });
});
