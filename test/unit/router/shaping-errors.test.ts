import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import type { RouteDecision } from '../../../src/router/routing-rules.js';
import { compileRoutingTable } from '../../../src/router/routing-table.js';
import { ShapingErrorLog } from '../../../src/router/shaping-errors.js';
import { loadConfig, NAMES } from './fixtures.js';

function logged(): { lines: Record<string, unknown>[]; log: (now: () => number) => ShapingErrorLog } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) } });
  return { lines, log: (now) => new ShapingErrorLog(logger, now) };
}

const table = compileRoutingTable(
  loadConfig({
    kafka: { topicPrefix: 'unit.' },
    sources: [{ id: 'web', destinations: ['a', 'b'] }],
    destinations: ['a', 'b'].map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }], filter: 'properties.x * 2', transform: '$' } })),
  }),
  NAMES,
);
const failure = (id: string, stage: 'filter' | 'transform'): Extract<RouteDecision, { routed: false }> => ({
  target: table.destinationsById.get(id)!,
  routed: false,
  reason: 'transform_error',
  error: `${stage} failed: The left side of the "*" operator must evaluate to a number (JSONata T2001, at character 14)`,
});
const at = (offset: number) => ({ topic: NAMES.calls, partition: 1, offset: String(offset) });

describe('ShapingErrorLog: once per expression per minute', () => {
  it('logs the first failure at once, then one line a minute with the count since', () => {
    let now = 0;
    const { lines, log } = logged();
    const errors = log(() => now);
    errors.failed('web', failure('a', 'filter'), at(1));
    for (let i = 2; i <= 5; i++) {
      now += 10_000;
      errors.failed('web', failure('a', 'filter'), at(i));
    }
    expect(lines).toHaveLength(1);
    now = 60_000;
    errors.failed('web', failure('a', 'filter'), at(6));
    expect(lines).toHaveLength(2);
    expect(lines.map((l) => l.failures)).toEqual([1, 5]);
    expect(lines[1]).toMatchObject({
      level: 40,
      destination: 'a',
      source: 'web',
      stage: 'filter',
      expression: 'properties.x * 2',
      topic: NAMES.calls,
      partition: 1,
      offset: '6',
      msg: expect.stringMatching(/^destination a: its filter failed on 5 call\(s\) since it was last logged, so they were not sent there .*transform_error.*the latest, at unit\.calls partition 1 offset 6: filter failed: The left side/),
    });
  });

  it('keeps expressions apart: another destination, or the transform, logs on its own', () => {
    const { lines, log } = logged();
    const errors = log(() => 0);
    errors.failed('web', failure('a', 'filter'), at(1));
    errors.failed('web', failure('a', 'transform'), at(2));
    errors.failed('web', failure('b', 'filter'), at(3));
    errors.failed('web', failure('b', 'filter'), at(4));
    expect(lines.map((l) => `${String(l.destination)}/${String(l.stage)}/${String(l.expression)}`)).toEqual(['a/filter/properties.x * 2', 'a/transform/$', 'b/filter/properties.x * 2']);
  });
});
