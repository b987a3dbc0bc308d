// Each violation type (docs/tracking-plans.md#violations): the type, the JSON pointer into
// the call, the expected and the actual type, for every kind of call the plan checks.
import { describe, expect, it } from 'vitest';
import { validateCall } from '../../../src/calls/index.js';
import type { Call } from '../../../src/calls/index.js';
import { compilePlan, findViolations } from '../../../src/tracking-plans/index.js';
import type { TrackingPlanConfig } from '../../../src/tracking-plans/index.js';

const PLAN: TrackingPlanConfig = {
  id: 'web-plan',
  events: {
    'Order Completed': {
      type: 'object',
      required: ['total', 'currency'],
      properties: {
        total: { type: 'number', minimum: 0 },
        currency: { type: 'string' },
        'a/b~c': { type: ['string', 'null'] },
        items: { type: 'array', items: { type: 'object', properties: { price: { type: 'number' } } } },
      },
      additionalProperties: false,
    },
    'Signed Up': true,
  },
  identify: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email' } } },
  group: { type: 'object', properties: { seats: { type: 'integer' } } },
  page: { type: 'object', properties: { path: { type: 'string' } } },
  screen: { type: 'object', properties: { name: { type: 'string' } } },
  common: { type: 'object', properties: { ip: { type: 'string' } } },
  unplannedEvents: 'violate',
};

const plan = compilePlan(PLAN);

function call(fields: Record<string, unknown>): Call {
  const parsed = validateCall({ userId: 'u-1', ...fields });
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.call;
}

describe('findViolations', () => {
  it('a call that follows the plan has none', () => {
    expect(findViolations(plan, call({ type: 'track', event: 'Order Completed', properties: { total: 9.5, currency: 'EUR', items: [{ price: 1 }] } }))).toEqual([]);
    expect(findViolations(plan, call({ type: 'track', event: 'Signed Up', properties: { anything: [1] } }))).toEqual([]);
    expect(findViolations(plan, call({ type: 'alias', previousId: 'a-1' }))).toEqual([]);
  });

  it.each([
    ['unplanned_event', { type: 'track', event: 'Debug Ping' }, [{ type: 'unplanned_event', pointer: '/event', expected: 'an event of the plan', actual: 'string' }]],
    [
      'required_missing (properties absent: checked as {})',
      { type: 'track', event: 'Order Completed' },
      [
        { type: 'required_missing', pointer: '/properties/total', expected: 'number', actual: 'missing' },
        { type: 'required_missing', pointer: '/properties/currency', expected: 'string', actual: 'missing' },
      ],
    ],
    [
      'type_mismatch (a string for a number; a pointer escaped)',
      { type: 'track', event: 'Order Completed', properties: { total: '9.50', currency: 'EUR', 'a/b~c': 3 } },
      [
        { type: 'type_mismatch', pointer: '/properties/total', expected: 'number', actual: 'string' },
        { type: 'type_mismatch', pointer: '/properties/a~1b~0c', expected: 'string|null', actual: 'integer' },
      ],
    ],
    [
      'additional_property',
      { type: 'track', event: 'Order Completed', properties: { total: 1, currency: 'EUR', coupon: null } },
      [{ type: 'additional_property', pointer: '/properties/coupon', expected: 'absent', actual: 'null' }],
    ],
    [
      'other (a rule that is not about type or presence)',
      { type: 'track', event: 'Order Completed', properties: { total: -1, currency: 'EUR' } },
      [{ type: 'other', pointer: '/properties/total', expected: 'must be >= 0', actual: 'integer' }],
    ],
    [
      'nested, inside a list',
      { type: 'track', event: 'Order Completed', properties: { total: 1, currency: 'EUR', items: [{ price: 1 }, { price: 'free' }] } },
      [{ type: 'type_mismatch', pointer: '/properties/items/1/price', expected: 'number', actual: 'string' }],
    ],
    [
      'identify traits: missing, and a format',
      { type: 'identify', traits: { name: 'x' } },
      [{ type: 'required_missing', pointer: '/traits/email', expected: 'string', actual: 'missing' }],
    ],
    ['identify traits: a format', { type: 'identify', traits: { email: 'not-an-address' } }, [{ type: 'other', pointer: '/traits/email', expected: 'must match format "email"', actual: 'string' }]],
    ['group traits', { type: 'group', groupId: 'g-1', traits: { seats: 2.5 } }, [{ type: 'type_mismatch', pointer: '/traits/seats', expected: 'integer', actual: 'number' }]],
    ['page properties', { type: 'page', properties: { path: 7 } }, [{ type: 'type_mismatch', pointer: '/properties/path', expected: 'string', actual: 'integer' }]],
    ['screen properties', { type: 'screen', properties: { name: false } }, [{ type: 'type_mismatch', pointer: '/properties/name', expected: 'string', actual: 'boolean' }]],
    [
      'context of any call, an alias too (common)',
      { type: 'alias', previousId: 'a-1', context: { ip: ['203.0.113.9'] } },
      [{ type: 'type_mismatch', pointer: '/context/ip', expected: 'string', actual: 'array' }],
    ],
  ])('%s', (_name, fields, expected) => {
    expect(findViolations(plan, call(fields))).toEqual(expected);
  });

  it('an unplanned event is no violation under unplannedEvents: allow; parts without a schema check nothing', () => {
    const lenient = compilePlan({ id: 'p', events: {}, unplannedEvents: 'allow' });
    expect(findViolations(lenient, call({ type: 'track', event: 'Anything' }))).toEqual([]);
    expect(findViolations(lenient, call({ type: 'identify', traits: { email: 3 }, context: { ip: 1 } }))).toEqual([]);
  });

  it('a draft-07 plan is read as draft-07', () => {
    const draft07 = compilePlan({
      id: 'p',
      events: { A: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', dependencies: { a: ['b'] } } },
      unplannedEvents: 'allow',
    });
    expect(findViolations(draft07, call({ type: 'track', event: 'A', properties: { a: 1 } }))).toEqual([
      { type: 'other', pointer: '/properties', expected: 'must have property b when property a is present', actual: 'object' },
    ]);
  });
});
