// The client package keeps its own copy of the call model (packages/client/src/call-model.ts,
// timestamp.ts), so that it builds alone; the gateway and the router use the daemon's
// (src/calls). A call the client accepts must be one the gateway accepts, refused with the
// same reason and message otherwise: the two are compared here, on a table that walks
// every rule and on generated calls. The timestamps alone: timestamp-agreement.test.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as daemon from '../../../src/calls/index.js';
import * as client from '../../../packages/client/src/call-model.js';

const deep = (levels: number): unknown => (levels === 0 ? 1 : { a: deep(levels - 1) });
const nullProto = Object.assign(Object.create(null) as Record<string, unknown>, { plan: 'pro' });

/** Calls that walk every rule of validateCall: each type, each field right and wrong, the leniencies, the limits. */
const TABLE: [string, unknown][] = [
  ['a track', { type: 'track', userId: 'u-1', event: 'Order Completed', properties: { total: 99.5 }, context: { ip: '203.0.113.9' } }],
  ['an identify of an anonymous visitor', { type: 'identify', anonymousId: 'a-1', traits: { plan: 'pro' } }],
  ['a page', { type: 'page', userId: 'u', name: 'Home', category: 'Docs', properties: { path: '/' } }],
  ['a screen', { type: 'screen', userId: 'u', name: 'Cart' }],
  ['a group', { type: 'group', userId: 'u', groupId: 'g-1', traits: {} }],
  ['an alias', { type: 'alias', userId: 'u-1', previousId: 'anon-7' }],
  ['numeric ids', { type: 'identify', userId: 42, anonymousId: 7.5 }],
  ['null and empty ids mean absent', { type: 'identify', userId: null, anonymousId: '', messageId: '', timestamp: '' }],
  ['extra keys are kept', { type: 'identify', userId: 'u', receivedAt: 'x', extra: [1, { deep: true }] }],
  ['the Go library\'s timestamps', { type: 'track', userId: 'u', event: 'E', timestamp: '2009-11-10T23:00:00+0000', sentAt: '2009-11-10T23:00:05+0000' }],
  ['a writeKey and integrations', { type: 'track', userId: 'u', event: 'E', writeKey: 'wk', integrations: { All: false, Webhooks: true } }],
  ['a traits object without prototype', { type: 'identify', userId: 'u', traits: nullProto }],
  ['not an object: a string', 'track'],
  ['not an object: null', null],
  ['not an object: an array', [{ type: 'track' }]],
  ['no type', { userId: 'u' }],
  ['a type that is not a string', { type: 3, userId: 'u' }],
  ['an upper-case type', { type: 'Track', userId: 'u', event: 'E' }],
  ['an unknown long type', { type: 'x'.repeat(200), userId: 'u' }],
  ['no identity', { type: 'track', event: 'E' }],
  ['a track without event', { type: 'track', userId: 'u' }],
  ['a track with an empty event', { type: 'track', userId: 'u', event: '' }],
  ['an alias without previousId', { type: 'alias', userId: 'u' }],
  ['an alias without userId', { type: 'alias', anonymousId: 'a', previousId: 'p' }],
  ['a group without groupId', { type: 'group', userId: 'u' }],
  ['a boolean userId', { type: 'identify', userId: true }],
  ['an infinite anonymousId', { type: 'identify', anonymousId: Number.POSITIVE_INFINITY }],
  ['an object messageId', { type: 'identify', userId: 'u', messageId: {} }],
  ['a bad timestamp', { type: 'identify', userId: 'u', timestamp: '2026-02-30T00:00:00Z' }],
  ['a numeric timestamp', { type: 'identify', userId: 'u', timestamp: 1_700_000_000_000 }],
  ['a bad sentAt', { type: 'identify', userId: 'u', sentAt: 'yesterday' }],
  ['a numeric event', { type: 'track', userId: 'u', event: 5 }],
  ['an array name', { type: 'page', userId: 'u', name: ['Home'] }],
  ['a numeric category', { type: 'page', userId: 'u', category: 1 }],
  ['a numeric writeKey', { type: 'identify', userId: 'u', writeKey: 1 }],
  ['a boolean groupId', { type: 'group', userId: 'u', groupId: false }],
  ['an array previousId', { type: 'alias', userId: 'u', previousId: [] }],
  ['string traits', { type: 'identify', userId: 'u', traits: 'pro' }],
  ['array properties', { type: 'track', userId: 'u', event: 'E', properties: [] }],
  ['a Date as context', { type: 'identify', userId: 'u', context: new Date(0) }],
  ['a numeric integrations', { type: 'identify', userId: 'u', integrations: 1 }],
  ['nesting at the limit', { type: 'identify', userId: 'u', traits: deep(254) }],
  ['nesting past the limit', { type: 'identify', userId: 'u', traits: deep(255) }],
  ['a BigInt inside', { type: 'identify', userId: 'u', traits: { n: 1n } }],
];

describe('the client\'s call model agrees with the gateway\'s', () => {
  it('shares the per-call limit', () => {
    expect(client.MAX_CALL_BYTES).toBe(daemon.MAX_CALL_BYTES);
  });

  it.each(TABLE)('%s', (_what, value) => {
    expect(client.validateCall(value)).toEqual(daemon.validateCall(value));
  });

  it('on generated calls: every field absent, null, empty, of the right type or of another', () => {
    const types = fc.oneof(fc.constantFrom(...daemon.CALL_TYPES, 'Track', 'IDENTIFY', 'unknown', ''), fc.anything());
    const timestamps = fc.oneof(
      fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
      fc.constantFrom('2009-11-10T23:00:00+0000', '2026-05-01', '2026-05-01 12:00', '2026-13-01T00:00:00Z', '2026-05-01T24:00:00Z', '0000-01-01T00:00:00Z'),
      fc.string(),
    );
    const value = fc.oneof(
      fc.string(),
      fc.constantFrom('', null, 0, -1.5, Number.NaN, true),
      fc.integer(),
      timestamps,
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
      fc.array(fc.jsonValue(), { maxLength: 3 }),
      fc.anything(),
    );
    const field = (arbitrary: fc.Arbitrary<unknown>) => fc.option(fc.oneof(arbitrary, value), { nil: undefined });
    const call = fc.record(
      {
        type: types,
        userId: field(fc.string({ minLength: 1 })),
        anonymousId: field(fc.string({ minLength: 1 })),
        messageId: field(fc.uuid()),
        timestamp: field(timestamps),
        sentAt: field(timestamps),
        event: field(fc.string()),
        name: field(fc.string()),
        category: field(fc.string()),
        groupId: field(fc.string({ minLength: 1 })),
        previousId: field(fc.string({ minLength: 1 })),
        writeKey: field(fc.string()),
        traits: field(fc.dictionary(fc.string(), fc.jsonValue())),
        properties: field(fc.dictionary(fc.string(), fc.jsonValue())),
        context: field(fc.dictionary(fc.string(), fc.jsonValue())),
        integrations: field(fc.dictionary(fc.string(), fc.oneof(fc.boolean(), fc.object()))),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(call, fc.anything()), (v) => {
        expect(client.validateCall(v)).toEqual(daemon.validateCall(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it.each([
    ['an object literal', {}, true],
    ['an object without prototype', Object.create(null), true],
    ['an array', [], false],
    ['a Date', new Date(0), false],
    ['a class instance', new (class Thing {})(), false],
    ['null', null, false],
    ['a string', 'x', false],
  ])('isPlainObject of %s', (_what, value, expected) => {
    expect(client.isPlainObject(value)).toBe(expected);
    expect(daemon.isPlainObject(value)).toBe(expected);
  });
});
