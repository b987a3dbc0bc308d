// The router's planning with destination shaping (docs/webhooks.md#shaping): the
// decisions the router writes and the trace reports.
import { describe, expect, it } from 'vitest';
import { planCall, planShapedCall } from '../../../src/router/plan-call.js';
import type { CallOutcome, RoutedCall } from '../../../src/router/plan-call.js';
import type { RouteDecision } from '../../../src/router/routing-rules.js';
import { compileRoutingTable } from '../../../src/router/routing-table.js';
import { samplePoint } from '../../../src/shaping/sample.js';
import { loadConfig, NAMES, record } from './fixtures.js';

const hook = (id: string, settings: Record<string, unknown> = {}) => ({
  id,
  type: 'webhooks',
  settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }], ...settings },
});

const table = compileRoutingTable(
  loadConfig({
    kafka: { topicPrefix: 'unit.' },
    sources: [{ id: 'web', destinations: ['plain', 'shaped', 'filtered', 'sampled', 'broken', 'slow'] }],
    destinations: [
      hook('plain'),
      hook('shaped', { transform: '{"user": userId, "name": event, "total": properties.total}' }),
      hook('filtered', { filter: 'type = "track" and properties.total > 100' }),
      hook('sampled', { sample: 0.5 }),
      hook('broken', { filter: 'properties.currency * 2 > 1' }),
      // Outside the fast path: JSONata's own (asynchronous) evaluation.
      hook('slow', { transform: '{"count": $count(properties.*)}' }),
    ],
  }),
  NAMES,
);

const call = (messageId: string, total: number) =>
  record(`{"type":"track","userId":"u0","messageId":"${messageId}","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":${total},"currency":"EUR"}}`, {
    headers: { 'source-id': 'web' },
  });

function routed(outcome: CallOutcome): RoutedCall {
  if (outcome.kind !== 'routed') throw new Error(`expected a routed call, got ${outcome.kind}`);
  return outcome;
}

const summary = (d: RouteDecision) =>
  d.routed ? `${d.target.id}:${d.body === undefined ? 'shared' : d.body.toString('utf8')}` : `${d.target.id}:${d.reason}${d.error !== undefined ? ` (${d.error})` : ''}`;

/** A messageId the sample at 0.5 keeps, and one it drops. */
const KEPT = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'].find((id) => samplePoint(id) < 0.5)!;
const DROPPED = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'].find((id) => samplePoint(id) >= 0.5)!;

describe('planShapedCall', () => {
  it('gives each destination what its shaping makes of the call, the others the shared body', async () => {
    const r = routed(await planShapedCall(call(KEPT, 42), table));
    expect(r.decisions.map(summary)).toEqual([
      'plain:shared',
      'shaped:{"user":"u0","name":"Order Completed","total":42}',
      'filtered:destination_filter',
      'sampled:shared',
      'broken:transform_error (filter failed: The left side of the "*" operator must evaluate to a number (JSONata T2001, at character 21))',
      'slow:{"count":2}',
    ]);
    expect(r.body?.toString()).toBe('{"version":1,"type":"track","userId":"u0","messageId":"' + KEPT + '","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR"}}');
  });

  it('lets a matching call through the filter, and samples by messageId', async () => {
    const r = routed(await planShapedCall(call(DROPPED, 150), table));
    expect(r.decisions.map(summary).filter((s) => s.startsWith('filtered') || s.startsWith('sampled'))).toEqual(['filtered:shared', 'sampled:sample']);
  });

  it('is synchronous when every expression stays in the fast path', () => {
    const fastOnly = compileRoutingTable(
      loadConfig({
        kafka: { topicPrefix: 'unit.' },
        sources: [{ id: 'web', destinations: ['shaped', 'filtered'] }],
        destinations: [hook('shaped', { transform: '{"user": userId}', dropProperties: ['context.ip'] }), hook('filtered', { filter: 'properties.total > 100' })],
      }),
      NAMES,
    );
    const outcome = planShapedCall(call('m-1', 42), fastOnly);
    expect(outcome).not.toBeInstanceOf(Promise);
    expect(routed(outcome as CallOutcome).decisions.map(summary)).toEqual(['shaped:{"user":"u0"}', 'filtered:destination_filter']);
  });

  it('renders no shared body when every destination that gets the call makes its own', () => {
    const ownOnly = compileRoutingTable(
      loadConfig({ kafka: { topicPrefix: 'unit.' }, sources: [{ id: 'web', destinations: ['shaped'] }], destinations: [hook('shaped', { transform: '{"user": userId}' })] }),
      NAMES,
    );
    const r = routed(planShapedCall(call('m-1', 42), ownOnly) as CallOutcome);
    expect(r.body).toBeNull();
    expect(r.decisions.map(summary)).toEqual(['shaped:{"user":"u0"}']);
  });

  it('leaves planCall as it was: the routing rules only, the shaping still to apply', () => {
    const r = routed(planCall(call(KEPT, 42), table));
    expect(r.decisions.every((d) => d.routed && d.body === undefined)).toBe(true);
  });

  it('shapes nothing of a call a routing rule already filtered', async () => {
    const off = compileRoutingTable(
      loadConfig({ kafka: { topicPrefix: 'unit.' }, sources: [{ id: 'web', destinations: ['shaped'] }], destinations: [{ ...hook('shaped', { transform: '$x.y.z' }), enabled: false }] }),
      NAMES,
    );
    expect(routed(await planShapedCall(call('m-1', 42), off)).decisions.map(summary)).toEqual(['shaped:disabled']);
  });
});
