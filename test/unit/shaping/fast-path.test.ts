// The fast path against JSONata itself: wherever it answers, it answers what JSONata
// answers (and JSONata does not fail there); the everyday expressions do take it.
import fc from 'fast-check';
import jsonata from 'jsonata';
import { describe, expect, it } from 'vitest';
import { compileFastPath, NEEDS_FULL_EVALUATION } from '../../../src/shaping/fast-path.js';

/** A value as text with its type, keys in order: `undefined`, `-0` and prototype-free objects compare as JSONata's results should. */
function canon(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (typeof value === 'number') return Object.is(value, -0) ? 'number:-0' : `number:${value}`;
  if (Array.isArray(value)) return `[${value.map(canon).join(',')}]`;
  if (typeof value === 'object' && value !== null) return `{${Object.keys(value).map((k) => `${JSON.stringify(k)}:${canon((value as Record<string, unknown>)[k])}`).join(',')}}`;
  return `${typeof value}:${JSON.stringify(value)}`;
}

type Outcome = { threw: string } | { value: string };

async function byJsonata(text: string, input: Record<string, unknown>): Promise<Outcome> {
  try {
    return { value: canon(await jsonata(text).evaluate(input)) };
  } catch (error) {
    return { threw: (error as { code?: string }).code ?? String(error) };
  }
}

function fast(text: string): (input: Record<string, unknown>) => unknown {
  const path = compileFastPath(jsonata(text).ast());
  return path ?? (() => NEEDS_FULL_EVALUATION);
}

const TRACK = {
  version: 1,
  type: 'track',
  userId: 'u0',
  messageId: 'm-1',
  timestamp: '2026-05-01T12:00:00.000Z',
  event: 'Order Completed',
  properties: { total: 42, currency: 'EUR', email: 'ada@example.com', tags: ['a', 'b'], nested: { x: 1, empty: {} }, zero: 0, blank: '', none: null },
  context: { ip: '203.0.113.9', library: { name: 'analytics-go' } },
};

describe('fast path: the everyday expressions take it, with JSONata\'s answers', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['type = "track" and properties.total > 100', TRACK],
    ['type = "track" and properties.total > 10', TRACK],
    ['{"user": userId, "name": event, "total": properties.total}', TRACK],
    ['{"user": userId, "missing": properties.nothing}', TRACK],
    ['$exists(context.ip)', TRACK],
    ['$not($exists(context.ip))', TRACK],
    ['type in ["track", "page"]', TRACK],
    ['event != "Debug Ping"', TRACK],
    ['properties.total * 2 + 1', TRACK],
    ['properties.total % 5 = 2', TRACK],
    ['"Order: " & event', TRACK],
    ['properties.total >= 42 ? {"big": true} : {"big": false}', TRACK],
    ['$lowercase(event)', TRACK],
    ['$uppercase(properties.currency)', TRACK],
    ['$contains(properties.email, "@example.com")', TRACK],
    ['$boolean(properties.zero)', TRACK],
    ['properties.nested.empty or properties.blank', TRACK],
    ['(properties.none or properties.nested) and $', TRACK],
    ['$.userId & "/" & $$.messageId', TRACK],
    ['{"a": {"b": context.library.name}, "c": -properties.total}', TRACK],
    ['`Previous ID` = "anon-7"', { type: 'alias', 'Previous ID': 'anon-7', 'User ID': 'u-1' }],
    ['properties', TRACK],
    ['$', TRACK],
    ['userId.deeper', TRACK],
    ['properties.total < "x" ? 1 : 2', { properties: { total: 'a' } }],
  ];
  it.each(cases)('%s', async (text, input) => {
    const value = fast(text)(input);
    expect(value).not.toBe(NEEDS_FULL_EVALUATION);
    expect(await byJsonata(text, input)).toEqual({ value: canon(value) });
  });
});

describe('fast path: what it leaves to JSONata', () => {
  const compiledAside = [
    'properties.tags[0]',
    '$map(properties.tags, function($t) { $uppercase($t) })',
    '($x := 1; $x + 1)',
    '$sum(properties.tags)',
    '$string(properties.total)',
    'properties.*',
    '**.ip',
    '{"a": 1, "a": 2}',
    '[userId, event]',
    'properties.tags[]',
    'type ~> $uppercase',
    '$contains(event, /Order/)',
    'context{"k": ip}',
  ];
  it.each(compiledAside)('%s: compiled aside', (text) => {
    expect(compileFastPath(jsonata(text).ast())).toBeUndefined();
  });

  const onInput: [string, Record<string, unknown>, string][] = [
    ['properties.tags', TRACK, 'a list on a path'],
    ['properties.total * 2', { properties: { total: '42' } }, 'a type error (T2001)'],
    ['properties.total > 1', { properties: { total: '42' } }, 'a comparison of a string and a number (T2009)'],
    ['properties.none > 1', TRACK, 'null is not comparable (T2010)'],
    ['properties.nested = properties.nested', TRACK, 'objects compare deeply'],
    ['properties.total / 0', TRACK, 'a number that is not finite'],
    ['$lowercase(properties.total)', TRACK, 'a function argument of the wrong type'],
    ['properties.tags.x', TRACK, 'a path through a list'],
  ];
  it.each(onInput)('%s: %s', (text, input) => {
    expect(fast(text)(input)).toBe(NEEDS_FULL_EVALUATION);
  });
});

// ---------------------------------------------------------------------------
// Random expressions of the fast path's grammar (and a little beyond) over random bodies.

const NAMES = ['type', 'event', 'userId', 'properties.total', 'properties.currency', 'properties.tags', 'properties.nested.x', 'properties.flag', 'traits.plan', 'context.ip', 'missing', 'properties', '$', '$.event', '$$.userId'];
const STRINGS = ['"track"', '"Order Completed"', '"EUR"', '""', '"pro"', '"a"'];

const expression: fc.Arbitrary<string> = fc.letrec<{ expr: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(...NAMES),
    fc.constantFrom(...STRINGS),
    fc.oneof(fc.integer({ min: -5, max: 200 }), fc.double({ min: -1e3, max: 1e3, noNaN: true, noDefaultInfinity: true })).map((n) => (Object.is(n, -0) ? '0' : String(n))),
    fc.constantFrom('true', 'false', 'null'),
    fc
      .tuple(tie('expr'), fc.constantFrom('=', '!=', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '&', 'and', 'or'), tie('expr'))
      .map(([l, op, r]) => `(${l} ${op} ${r})`),
    fc.tuple(tie('expr'), fc.array(fc.constantFrom(...STRINGS, '1', '42', 'true', 'null'), { maxLength: 3 })).map(([l, items]) => `(${l} in [${items.join(', ')}])`),
    fc.tuple(tie('expr'), tie('expr'), tie('expr')).map(([c, t, e]) => `(${c} ? ${t} : ${e})`),
    tie('expr').map((e) => `-(${e})`),
    fc.tuple(fc.constantFrom('exists', 'not', 'boolean', 'lowercase', 'uppercase'), tie('expr')).map(([f, e]) => `$${f}(${e})`),
    tie('expr').map((e) => `$contains(${e}, "o")`),
    fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'user', '__proto__', '1', ''), tie('expr')), { maxLength: 3, selector: ([k]) => k }).map((pairs) => `{${pairs.map(([k, v]) => `"${k}": ${v}`).join(', ')}}`),
  ),
})).expr;

const scalar = fc.oneof(fc.integer({ min: -3, max: 150 }), fc.double({ noNaN: true, min: -1e6, max: 1e6 }), fc.constantFrom('', 'EUR', 'Order Completed', 'track', 'a', 'pro'), fc.boolean(), fc.constant(null));
const body: fc.Arbitrary<Record<string, unknown>> = fc.record(
  {
    type: fc.constantFrom('track', 'identify', 'page'),
    event: fc.oneof(fc.constantFrom('Order Completed', 'Debug Ping'), scalar),
    userId: fc.constantFrom('u0', 'u-1'),
    properties: fc.record(
      {
        total: fc.oneof(scalar, fc.array(scalar, { maxLength: 2 }), fc.dictionary(fc.constantFrom('x', 'y'), scalar)),
        currency: scalar,
        tags: fc.oneof(fc.array(scalar, { maxLength: 3 }), scalar),
        nested: fc.oneof(fc.record({ x: scalar }, { requiredKeys: [] }), scalar),
        flag: fc.boolean(),
      },
      { requiredKeys: [] },
    ),
    traits: fc.record({ plan: scalar }, { requiredKeys: [] }),
    context: fc.record({ ip: fc.constantFrom('203.0.113.9', '') }, { requiredKeys: [] }),
  },
  { requiredKeys: ['type'] },
);

describe('fast path: random expressions over random bodies', () => {
  it('answers only where JSONata gives the same answer without an error', async () => {
    let taken = 0;
    await fc.assert(
      fc.asyncProperty(expression, body, async (text, input) => {
        const value = fast(text)(input);
        if (value === NEEDS_FULL_EVALUATION) return;
        taken += 1;
        expect(await byJsonata(text, input)).toEqual({ value: canon(value) });
      }),
      { numRuns: 4_000 },
    );
    // The property means little if the fast path almost never answered.
    expect(taken).toBeGreaterThan(1_000);
  });

  it('never modifies its input', () => {
    fc.assert(
      fc.property(expression, body, (text, input) => {
        const before = canon(input);
        fast(text)(input);
        expect(canon(input)).toBe(before);
      }),
      { numRuns: 500 },
    );
  });
});
