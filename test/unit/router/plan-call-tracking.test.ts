// A source's tracking plan in the router's planning (docs/tracking-plans.md#modes): the
// decisions and the bytes each mode gives, and the records a violating call adds
// (plan-records.ts).
import { describe, expect, it } from 'vitest';
import { planCall } from '../../../src/router/plan-call.js';
import type { CallOutcome, RoutedCall } from '../../../src/router/plan-call.js';
import { blockedRecord, violationEventLabel, violationRecord } from '../../../src/router/plan-records.js';
import { recordMessageId } from '../../../src/router/record-ids.js';
import { BASE_CONFIG, NAMES, loadConfig, record } from './fixtures.js';
import { compileRoutingTable } from '../../../src/router/routing-table.js';

const NOW = Date.UTC(2026, 4, 1, 12, 0, 5);
const PLAN = {
  id: 'web-plan',
  events: { 'Order Completed': { type: 'object', required: ['total'], properties: { total: { type: 'number' } }, additionalProperties: false } },
  unplannedEvents: 'violate',
};

function tableFor(mode: string) {
  const sources = BASE_CONFIG.sources.map((s) => (s.id === 'web' ? { ...s, trackingPlan: { id: 'web-plan', mode } } : s));
  return compileRoutingTable(loadConfig({ ...BASE_CONFIG, sources, trackingPlans: [PLAN] }), NAMES);
}

function routed(outcome: CallOutcome): RoutedCall {
  if (outcome.kind !== 'routed') throw new Error(`expected a routed call, got ${outcome.reason}: ${outcome.error}`);
  return outcome;
}
const reasons = (r: RoutedCall) => r.decisions.map((d) => `${d.target.id}:${d.routed ? 'routed' : d.reason}`);

const BAD = '{"type":"track","userId":"u-1","messageId":"m-1","event":"Order Completed","properties":{"total":"9","coupon":"X"}}';
const GOOD = '{"type":"track","userId":"u-1","messageId":"m-1","event":"Order Completed","properties":{"total":9}}';
const web = { headers: { 'source-id': 'web' } };
const plan = (mode: string, json: string, options = web) => routed(planCall(record(json, options), tableFor(mode), () => NOW));

describe('planCall with a tracking plan', () => {
  it('a call that follows the plan: no verdict, routed as without a plan', () => {
    const r = plan('block', GOOD);
    expect(r.tracking).toBeUndefined();
    expect(reasons(r)).toEqual(['main:routed', 'other:routed', 'off:disabled']);
  });

  it('observe: routed with the bytes as sent, the violations beside', () => {
    const r = plan('observe', BAD);
    expect(reasons(r)).toEqual(['main:routed', 'other:routed', 'off:disabled']);
    expect(r.body?.toString()).toBe('{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":"9","coupon":"X"}}');
    expect(r.tracking).toMatchObject({ mode: 'observe', blocked: false });
    expect(r.tracking!.violations.map((v) => v.type)).toEqual(['additional_property', 'type_mismatch']);
  });

  it('omit: routed without the offending properties', () => {
    const r = plan('omit', BAD);
    expect(reasons(r)).toEqual(['main:routed', 'other:routed', 'off:disabled']);
    expect(r.body?.toString()).toBe('{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{}}');
    expect(r.call.properties).toEqual({});
  });

  it('block: every destination the rules let through says tracking_plan; nothing rendered', () => {
    const r = plan('block', BAD);
    expect(reasons(r)).toEqual(['main:tracking_plan', 'other:tracking_plan', 'off:disabled']);
    expect(r.body).toBeNull();
  });

  it('omit blocks an unplanned event (unplannedEvents: violate); a call the track filter drops is not checked', () => {
    const unplanned = plan('omit', '{"type":"track","userId":"u-1","event":"Signed Up"}');
    expect(reasons(unplanned)).toEqual(['main:tracking_plan', 'other:tracking_plan', 'off:disabled']);
    expect(violationEventLabel(unplanned)).toBe('(unplanned)');
    const dropped = plan('block', '{"type":"track","userId":"u-1","event":"Debug Ping"}');
    expect(dropped.tracking).toBeUndefined();
    expect(reasons(dropped)).toEqual(['main:track_filter', 'other:track_filter', 'off:disabled']);
  });

  it('a source without a plan is not checked', () => {
    const r = plan('block', '{"type":"track","userId":"u-1","event":"Unplanned"}', { headers: { 'source-id': 'app' } });
    expect(r.tracking).toBeUndefined();
  });
});

describe('the records of a violating call', () => {
  it('violations: one JSON record keyed by the user', () => {
    const r = plan('observe', BAD);
    const out = violationRecord(r);
    expect(out.key?.toString()).toBe('u-1');
    expect(out.value).toBe(
      '{"messageId":"m-1","source":"web","type":"track","event":"Order Completed","plan":"web-plan","mode":"observe","action":"delivered","receivedAt":"2026-05-01T12:00:00.000Z","violations":[{"type":"additional_property","pointer":"/properties/coupon","expected":"absent","actual":"string"},{"type":"type_mismatch","pointer":"/properties/total","expected":"number","actual":"string"}]}',
    );
    expect(violationEventLabel(r)).toBe('Order Completed');
  });

  it('calls.blocked: the record as received, with source-id, message-id and violations headers; its replay keeps the id', () => {
    const json = '{"type":"track","writeKey":"wk-web-1234","userId":"u-1","event":"Order Completed"}';
    const inbound = record(json, { headers: { traceparent: 'tp' } });
    const r = routed(planCall(inbound, tableFor('block'), () => NOW));
    const derived = recordMessageId(NAMES.calls, 3, '41', inbound.timestamp);
    expect(r.messageId).toBe(derived);
    const out = blockedRecord(inbound, r);
    expect(out.value).toBe(inbound.value);
    expect(out.key).toBe(inbound.key);
    expect(out.timestamp).toBe(inbound.timestamp);
    expect(Object.fromEntries(Object.entries(out.headers!).map(([k, v]) => [k, String(v)]))).toEqual({
      traceparent: 'tp',
      'source-id': 'web',
      'message-id': derived,
      violations: '[{"type":"required_missing","pointer":"/properties/total","expected":"number","actual":"missing"}]',
    });
    // Read back from calls.blocked: a replay plans it with the id it was given.
    const again = { ...inbound, topic: NAMES.callsBlocked, offset: '7', headers: out.headers };
    expect(routed(planCall(again, tableFor('block'), () => NOW, { messageIdHeader: true })).messageId).toBe(derived);
    expect(routed(planCall(again, tableFor('block'), () => NOW)).messageId).not.toBe(derived);
  });
});
