// The modes (docs/tracking-plans.md#modes): observe delivers the call as it is, omit takes
// out what violates and delivers the rest, block delivers nothing; the call given is
// never changed.
import { describe, expect, it } from 'vitest';
import { renderBody, validateCall, withMessageId } from '../../../src/calls/index.js';
import type { Call } from '../../../src/calls/index.js';
import { applyPlan, compilePlan } from '../../../src/tracking-plans/index.js';
import type { TrackingPlanConfig, TrackingPlanMode } from '../../../src/tracking-plans/index.js';

const PLAN: TrackingPlanConfig = {
  id: 'web-plan',
  events: {
    'Order Completed': {
      type: 'object',
      required: ['total'],
      properties: { total: { type: 'number' }, items: { type: 'array', items: { type: 'object', properties: { price: { type: 'number' } } } }, tags: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
  },
  identify: { type: 'object', properties: { email: { type: 'string' }, address: { type: 'object', properties: { zip: { type: 'string' } } } } },
  common: { type: 'object', properties: { ip: { type: 'string' } } },
  unplannedEvents: 'violate',
};
const plan = compilePlan(PLAN);
const source = (mode: TrackingPlanMode) => ({ plan, mode });

function call(json: string): Call {
  const parsed = validateCall(JSON.parse(json));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.call;
}
const body = (c: Call) => renderBody(withMessageId(c, 'm-1'), Date.UTC(2026, 4, 1, 12));

const BAD_ORDER = '{"type":"track","userId":"u-1","event":"Order Completed","properties":{"total":"9.50","coupon":"X","__proto__":{"a":1},"items":[{"price":1},{"price":"free","sku":"s"}],"tags":["a",2]},"context":{"ip":1,"app":"web"}}';

describe('applyPlan', () => {
  it('a call without violations: no verdict, whatever the mode', () => {
    const good = call('{"type":"track","userId":"u-1","event":"Order Completed","properties":{"total":1}}');
    for (const mode of ['observe', 'omit', 'block'] as const) expect(applyPlan(source(mode), good)).toBeUndefined();
  });

  it('observe: the call as it is, with its violations', () => {
    const bad = call(BAD_ORDER);
    const verdict = applyPlan(source('observe'), bad)!;
    expect(verdict.blocked).toBe(false);
    expect(verdict.call).toBe(bad);
    expect(verdict.violations.map((v) => `${v.type} ${v.pointer}`)).toEqual([
      'additional_property /properties/coupon',
      'additional_property /properties/__proto__',
      'type_mismatch /properties/total',
      'type_mismatch /properties/items/1/price',
      'type_mismatch /properties/tags/1',
      'type_mismatch /context/ip',
    ]);
  });

  it('block: blocked, with its violations', () => {
    const verdict = applyPlan(source('block'), call(BAD_ORDER))!;
    expect(verdict).toMatchObject({ mode: 'block', blocked: true });
    expect(verdict.violations).toHaveLength(6);
  });

  it('omit: each offending value taken out (a list item takes its list), the rest delivered; the original untouched', () => {
    const bad = call(BAD_ORDER);
    const before = body(bad);
    const verdict = applyPlan(source('omit'), bad)!;
    expect(verdict.blocked).toBe(false);
    expect(body(verdict.call)).toBe(
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"items":[{"price":1},{"sku":"s"}]},"context":{"app":"web"}}',
    );
    expect(body(bad)).toBe(before);
  });

  it('omit: traits, nested; a missing required property takes nothing out', () => {
    const verdict = applyPlan(source('omit'), call('{"type":"identify","userId":"u-1","traits":{"email":"e@x.io","address":{"zip":75001,"city":"Paris"}}}'))!;
    expect(verdict.violations).toEqual([{ type: 'type_mismatch', pointer: '/traits/address/zip', expected: 'string', actual: 'integer' }]);
    expect(verdict.call.traits).toEqual({ email: 'e@x.io', address: { city: 'Paris' } });
    const missing = applyPlan(source('omit'), call('{"type":"track","userId":"u-1","event":"Order Completed","properties":{}}'))!;
    expect(missing).toMatchObject({ blocked: false, violations: [{ type: 'required_missing', pointer: '/properties/total' }] });
    expect(missing.call.properties).toEqual({});
  });

  it('omit: an unplanned event is blocked when the plan says unplannedEvents: violate', () => {
    const verdict = applyPlan(source('omit'), call('{"type":"track","userId":"u-1","event":"Debug Ping"}'))!;
    expect(verdict).toMatchObject({ mode: 'omit', blocked: true, violations: [{ type: 'unplanned_event' }] });
  });
});
