import { describe, expect, it } from 'vitest';
import { applyPropertyList, compilePropertyList, propertyPathProblem } from '../../../src/shaping/property-lists.js';

const TRACK = () => ({
  version: 1,
  type: 'track',
  userId: 'u-1',
  messageId: 'm-1',
  timestamp: '2026-05-01T12:00:00.000Z',
  event: 'Order Completed',
  properties: { total: 42, currency: 'EUR', email: 'ada@example.com', address: { city: 'Oslo', street: 'Karl Johans gate 1' } },
  context: { ip: '203.0.113.9', library: { name: 'analytics-go' } },
});

const IDENTIFY = () => ({
  version: 1,
  type: 'identify',
  userId: 'u-1',
  messageId: 'm-2',
  timestamp: '2026-05-01T12:00:00.000Z',
  traits: { email: 'ada@example.com', plan: 'pro' },
});

const drop = (paths: string[], body: Record<string, unknown>) => JSON.stringify(applyPropertyList(body, compilePropertyList('drop', paths)));
const allow = (paths: string[], body: Record<string, unknown>) => JSON.stringify(applyPropertyList(body, compilePropertyList('allow', paths)));

describe('dropProperties', () => {
  const cases: [string, string[], () => Record<string, unknown>, string][] = [
    [
      'a nested key and a property',
      ['context.ip', 'properties.email'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR","address":{"city":"Oslo","street":"Karl Johans gate 1"}},"context":{"library":{"name":"analytics-go"}}}',
    ],
    [
      'a whole object, and a path below it (the shorter wins)',
      ['context', 'context.ip'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR","email":"ada@example.com","address":{"city":"Oslo","street":"Karl Johans gate 1"}}}',
    ],
    [
      'three levels down',
      ['properties.address.street'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR","email":"ada@example.com","address":{"city":"Oslo"}},"context":{"ip":"203.0.113.9","library":{"name":"analytics-go"}}}',
    ],
    ['paths the body does not have: the same body', ['traits.phone', 'context.ip.v4', 'properties.total.x'], IDENTIFY, JSON.stringify(IDENTIFY())],
  ];
  it.each(cases)('%s', (_name, paths, body, expected) => {
    expect(drop(paths, body())).toBe(expected);
  });

  it('copies only what changes: the original body and its objects stay as they were', () => {
    const body = TRACK();
    const before = JSON.stringify(body);
    const out = applyPropertyList(body, compilePropertyList('drop', ['context.ip']));
    expect(JSON.stringify(body)).toBe(before);
    expect(out.properties).toBe(body.properties);
    expect(out.context).not.toBe(body.context);
    expect((out.context as Record<string, unknown>).library).toBe(body.context.library);
    // Nothing to drop: the very same object, no copy.
    expect(applyPropertyList(body, compilePropertyList('drop', ['traits.email']))).toBe(body);
  });

  it('keeps an own "__proto__" key as a key, and can drop it', () => {
    const body = JSON.parse('{"type":"track","properties":{"__proto__":{"x":1},"a":1,"b":2}}') as Record<string, unknown>;
    expect(drop(['properties.a'], body)).toBe('{"type":"track","properties":{"__proto__":{"x":1},"b":2}}');
    expect(drop(['properties.__proto__'], body)).toBe('{"type":"track","properties":{"a":1,"b":2}}');
  });
});

describe('allowProperties', () => {
  const cases: [string, string[], () => Record<string, unknown>, string][] = [
    [
      'only the listed properties, in the body\'s order; the rest of the body as it was',
      ['properties.currency', 'properties.total'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":42,"currency":"EUR"},"context":{"ip":"203.0.113.9","library":{"name":"analytics-go"}}}',
    ],
    [
      'a nested path keeps its parents with only that inside',
      ['properties.address.city'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"address":{"city":"Oslo"}},"context":{"ip":"203.0.113.9","library":{"name":"analytics-go"}}}',
    ],
    [
      'traits of an identify, by a traits path',
      ['traits.plan', 'properties.total'],
      IDENTIFY,
      '{"version":1,"type":"identify","userId":"u-1","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","traits":{"plan":"pro"}}',
    ],
    [
      'no traits path listed: traits become {} (keep only these)',
      ['properties.total'],
      IDENTIFY,
      '{"version":1,"type":"identify","userId":"u-1","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","traits":{}}',
    ],
    [
      'a whole root listed: that object untouched',
      ['properties'],
      TRACK,
      JSON.stringify(TRACK()),
    ],
    [
      'a listed key whose value is not an object under a deeper path: left out',
      ['properties.total.cents'],
      TRACK,
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{},"context":{"ip":"203.0.113.9","library":{"name":"analytics-go"}}}',
    ],
  ];
  it.each(cases)('%s', (_name, paths, body, expected) => {
    expect(allow(paths, body())).toBe(expected);
  });

  it('leaves a body without properties or traits as the same object', () => {
    const alias = { version: 1, type: 'alias', messageId: 'm', timestamp: 't', 'Previous ID': 'a', 'User ID': 'b' };
    expect(applyPropertyList(alias, compilePropertyList('allow', ['properties.total']))).toBe(alias);
  });
});

describe('propertyPathProblem (what check-config refuses)', () => {
  const cases: [string, 'dropProperties' | 'allowProperties', string, RegExp | undefined][] = [
    ['a nested path', 'dropProperties', 'context.ip', undefined],
    ['a top-level field', 'dropProperties', 'context', undefined],
    ['an alias field with a space', 'dropProperties', 'Previous ID', undefined],
    ['an allow path under traits', 'allowProperties', 'traits.email', undefined],
    ['an empty segment', 'dropProperties', 'context..ip', /is not a path: write the keys from the top of the body separated by dots/],
    ['a trailing dot', 'dropProperties', 'context.', /is not a path/],
    ['a field no body has (typo)', 'dropProperties', 'ip', /starts with "ip", which no webhook body has; a path starts with one of version, type/],
    ['an allow path outside properties and traits', 'allowProperties', 'context.ip', /"context.ip" is not under properties or traits: allowProperties keeps only the listed keys of properties and traits/],
  ];
  it.each(cases)('%s', (_name, list, path, expected) => {
    const problem = propertyPathProblem(list, path);
    if (expected === undefined) expect(problem).toBeUndefined();
    else expect(problem).toMatch(expected);
  });
});
