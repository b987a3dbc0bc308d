// Hostile inputs for the `calls` topic and the gateway, property-based (fast-check)
// and mutation-based: call-shaped objects with wrong types, hostile keys (__proto__,
// constructor), absurd timestamps, numbers past 2^53, huge strings and deep nesting,
// serialized by hand so that raw number tokens and duplicate keys survive, then often
// mutated as bytes (truncated, invalid UTF-8, a BOM, garbage).
import fc from 'fast-check';
import { BLOCKED_EVENT } from './topology.js';

/** A JSON text tree that can hold what JSON.stringify cannot write: raw number tokens and repeated keys. */
export type JsonNode =
  | { kind: 'raw'; text: string }
  | { kind: 'object'; entries: [string, JsonNode][] }
  | { kind: 'array'; items: JsonNode[] };

export function serialize(node: JsonNode): string {
  switch (node.kind) {
    case 'raw':
      return node.text;
    case 'array':
      return `[${node.items.map(serialize).join(',')}]`;
    case 'object':
      return `{${node.entries.map(([key, value]) => `${JSON.stringify(key)}:${serialize(value)}`).join(',')}}`;
  }
}

const raw = (value: unknown): JsonNode => ({ kind: 'raw', text: JSON.stringify(value) });
const token = (text: string): JsonNode => ({ kind: 'raw', text });

const CALL_TYPES = ['identify', 'track', 'page', 'screen', 'group', 'alias'];

/** Numbers a careless parser mishandles: past 2^53, -0, overflow to Infinity, tiny, exponents. */
const hostileNumber: fc.Arbitrary<JsonNode> = fc.oneof(
  fc.constantFrom('9007199254740993', '-9007199254740993', '123456789012345678901234567890', '-0', '1e400', '-1e400', '5e-324', '1E+2', '0.1e-999').map(token),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(raw),
  fc.integer().map(raw),
);

/** Strings with the characters that break escaping; now and then a long one. */
const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 30, arbitrary: fc.string({ maxLength: 24 }) },
  { weight: 15, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
  { weight: 10, arbitrary: fc.constantFrom('', ' ', '\u0000', '\ud800', '\udfff', '\u2028\u2029', 'é ✓ 🚀', '<script>', '${x}', '../../etc/passwd', 'null') },
  { weight: 1, arbitrary: fc.integer({ min: 500, max: 4_000 }).map((n) => 'x'.repeat(n)) },
);

/** A nesting `depth` levels deep, as text (a tree that deep would overflow the serializer's stack). */
function nested(depth: number, objects: boolean): JsonNode {
  return objects ? token(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`) : token(`${'['.repeat(depth)}1${']'.repeat(depth)}`);
}

const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '', ' ', 'All', 'Webhooks', 'webhooks', 'type', 'messageId'];

const leaf: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 4, arbitrary: hostileString.map(raw) },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 2, arbitrary: fc.constantFrom('true', 'false', 'null').map(token) },
);

/** A free-form value (properties, traits, context): leaves, lists and objects with hostile keys. */
const freeForm: fc.Arbitrary<JsonNode> = fc.letrec<{ value: JsonNode; object: JsonNode }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object'), fc.array(tie('value'), { maxLength: 4 }).map((items): JsonNode => ({ kind: 'array', items }))),
  object: fc
    .array(fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 8 })), tie('value')), { maxLength: 5 })
    .map((entries): JsonNode => ({ kind: 'object', entries })),
})).value;

const freeFormObject: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 60, arbitrary: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 8 })), freeForm), { maxLength: 6 }).map((entries): JsonNode => ({ kind: 'object', entries })) },
  // Around the nesting limit of 256 levels, and far past it.
  { weight: 1, arbitrary: fc.integer({ min: 240, max: 270 }).chain((depth) => fc.boolean().map((objects) => nested(depth, objects))) },
  { weight: 1, arbitrary: fc.integer({ min: 2_000, max: 12_000 }).map((depth) => nested(depth, false)) },
  { weight: 3, arbitrary: leaf },
);

/** ids: strings (empty ones included), numbers (past 2^53 too) and wrong types. */
const idValue: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 24, arbitrary: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.constantFrom('u-1', 'u-2', 'anon-1')).map(raw) },
  { weight: 2, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.constantFrom('""', 'null', 'true', '[]', '{}', '["u-1"]').map(token) },
);

/** Timestamps in every form real clients send, and absurd ones. */
const timestampValue: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 6, arbitrary: fc.date({ min: new Date('1990-01-01'), max: new Date('2040-01-01'), noInvalidDate: true }).map((d) => raw(d.toISOString())) },
  { weight: 3, arbitrary: fc.constantFrom(
    '2026-05-01T12:00:00.000Z',
    '2009-11-10T23:00:00+0000',
    '2026-05-01T12:00:00+02:00',
    '2026-05-01T12:00:00Z',
    '2026-05-01 12:00:00',
    '2026-02-30T00:00:00Z',
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    '+275760-09-13T00:00:00.000Z',
    '-000001-01-01T00:00:00Z',
    '99999-01-01T00:00:00Z',
    'yesterday',
    '',
  ).map(raw) },
  { weight: 1, arbitrary: fc.date({ noInvalidDate: true }).map((d) => raw(d.toISOString())) },
  { weight: 1, arbitrary: hostileNumber },
);

const integrationsValue: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('{"All":false}', '{"All":false,"Webhooks":true}', '{"Webhooks":false}', '{"Webhooks":{"x":1}}', '{"webhooks":false}', '{"All":"false"}', '{"Webhooks":null}', '[]', '"All"', 'null').map(token) },
  { weight: 1, arbitrary: freeFormObject },
);

const WRITE_KEYS = ['fuzz-write-key', 'web-write-key', 'no-such-key', ''];

/** A call-shaped object: mostly plausible fields, each of which may be of the wrong type or absent. */
export const callNode: fc.Arbitrary<JsonNode> = fc
  .record(
    {
      type: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...CALL_TYPES).map(raw) }, { weight: 1, arbitrary: fc.constantFrom('"Track"', '"delete"', '""', '7', 'null', '["track"]').map(token) }),
      userId: idValue,
      anonymousId: idValue,
      messageId: fc.oneof({ weight: 6, arbitrary: fc.uuid().map((id) => raw(`fz-${id}`)) }, { weight: 1, arbitrary: fc.constantFrom('""', '0', 'null', '{}').map(token) }),
      timestamp: timestampValue,
      sentAt: timestampValue,
      event: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('Order Completed', BLOCKED_EVENT, '').map(raw) }, { weight: 2, arbitrary: hostileString.map(raw) }, { weight: 1, arbitrary: leaf }),
      name: fc.oneof({ weight: 6, arbitrary: hostileString.map(raw) }, { weight: 1, arbitrary: leaf }),
      category: fc.oneof({ weight: 6, arbitrary: hostileString.map(raw) }, { weight: 1, arbitrary: leaf }),
      groupId: idValue,
      previousId: idValue,
      properties: freeFormObject,
      traits: freeFormObject,
      context: freeFormObject,
      integrations: integrationsValue,
      writeKey: fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...WRITE_KEYS).map(raw) }, { weight: 1, arbitrary: leaf }),
    },
    { requiredKeys: ['type'] },
  )
  .chain((fields) => {
    // NOTE: "__proto__" cannot be a key of the record model (an object literal would set
    // the prototype instead), so the prototype-pollution keys are added as entries.
    const pollution = fc.array(fc.tuple(fc.constantFrom('__proto__', 'constructor'), freeFormObject), { maxLength: 2 });
    const entries = Object.entries(fields) as [string, JsonNode][];
    return fc.tuple(pollution, fc.boolean()).chain(([extra, repeat]) => {
      const all = [...entries, ...extra];
      // Random key order, and sometimes a key twice (JSON.parse keeps the last).
      return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }).map((list): JsonNode => {
        const first = list[0];
        return { kind: 'object', entries: repeat && first !== undefined ? [...list, [first[0], raw('repeated')]] : list };
      });
    });
  });

/**
 * A call that is mostly well-formed: the identity and type right, the hostility in the
 * free-form objects (keys like __proto__, big numbers, odd strings, deep nesting) and in
 * `integrations`. Keeps the valid path (routing, rendering, delivery) busy.
 */
export const plausibleCallNode: fc.Arbitrary<JsonNode> = fc
  .record({
    type: fc.constantFrom(...CALL_TYPES),
    userId: fc.oneof(fc.constantFrom('u-1', 'u-2', 'ü-3'), fc.integer({ min: 0, max: 1_000 }).map(String)),
    anonymousId: fc.option(fc.constantFrom('anon-1', 'anon-2'), { nil: undefined }),
    messageId: fc.option(fc.uuid().map((id) => `fz-${id}`), { nil: undefined, freq: 8 }),
    timestamp: fc.option(fc.date({ min: new Date('2000-01-01'), max: new Date('2030-01-01'), noInvalidDate: true }).map((d) => d.toISOString()), { nil: undefined }),
    event: fc.constantFrom('Order Completed', BLOCKED_EVENT, 'Signed Up'),
    groupId: fc.constantFrom('g-1', 'g-2'),
    previousId: fc.constantFrom('anon-1', 'old-7'),
    name: fc.option(hostileString, { nil: undefined }),
    properties: fc.option(freeFormObject, { nil: undefined }),
    traits: fc.option(freeFormObject, { nil: undefined }),
    context: fc.option(freeFormObject, { nil: undefined }),
    integrations: fc.option(integrationsValue, { nil: undefined, freq: 2 }),
    writeKey: fc.option(fc.constantFrom(...WRITE_KEYS), { nil: undefined, freq: 2 }),
  })
  .map((call): JsonNode => {
    const entries: [string, JsonNode][] = [];
    for (const [key, value] of Object.entries(call)) {
      if (value === undefined) continue;
      entries.push([key, typeof value === 'object' ? value : raw(value)]);
    }
    return { kind: 'object', entries };
  });

/** Byte-level damage done to a serialized call. */
export type Mutation = 'truncate' | 'invalid-utf8' | 'lone-surrogate' | 'bom' | 'garbage' | 'flip' | 'splice-nesting' | 'oversize' | 'empty';

function mutate(text: string, mutation: Mutation, at: number): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const cut = Math.floor(at * bytes.length);
  switch (mutation) {
    case 'truncate':
      return bytes.subarray(0, cut);
    case 'invalid-utf8':
      return Buffer.concat([bytes.subarray(0, cut), Buffer.from([0xff, 0xc0, 0x80]), bytes.subarray(cut)]);
    case 'lone-surrogate':
      // CESU-style encoding of U+D800: not valid UTF-8.
      return Buffer.concat([bytes.subarray(0, cut), Buffer.from([0xed, 0xa0, 0x80]), bytes.subarray(cut)]);
    case 'bom':
      return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
    case 'garbage':
      return Buffer.concat([bytes, Buffer.from(' }{,:"\\')]);
    case 'flip': {
      const copy = Buffer.from(bytes);
      const i = Math.min(cut, copy.length - 1);
      if (i >= 0) copy[i] = copy[i]! ^ 0x20;
      return copy;
    }
    case 'splice-nesting':
      return Buffer.from(`${text.slice(0, Math.max(1, text.length - 1))},"deep":${'['.repeat(5_000)}${']'.repeat(5_000)}}`, 'utf8');
    case 'oversize':
      // Just past the 32 KB call limit (or well past it).
      return Buffer.from(`{"pad":"${'p'.repeat(32 * 1024 + Math.floor(at * 16 * 1024))}",${text.slice(1)}`, 'utf8');
    case 'empty':
      return Buffer.alloc(0);
  }
}

export interface FuzzCall {
  bytes: Buffer;
  /** How it was made, for a report: "object", "object+truncate", "junk". */
  recipe: string;
}

const MUTATIONS: Mutation[] = ['truncate', 'invalid-utf8', 'lone-surrogate', 'bom', 'garbage', 'flip', 'splice-nesting', 'oversize', 'empty'];

const junk: fc.Arbitrary<FuzzCall> = fc.oneof(
  fc.constantFrom('null', '[]', '"track"', '42', 'true', '{', '{}', '[{"type":"track"}]', 'NaN', '{"type":"track","userId":"u-1","event":"E"}garbage').map((text) => ({ bytes: Buffer.from(text), recipe: 'junk' })),
  fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ bytes: Buffer.from(bytes), recipe: 'random-bytes' })),
  fc.jsonValue({ maxDepth: 3 }).map((value) => ({ bytes: Buffer.from(JSON.stringify(value) ?? 'null'), recipe: 'json-value' })),
);

/** One fuzzed `calls` record value: a call-shaped object (often valid), damaged or not, or junk. */
export const fuzzCall: fc.Arbitrary<FuzzCall> = fc.oneof(
  { weight: 5, arbitrary: plausibleCallNode.map((node) => ({ bytes: Buffer.from(serialize(node), 'utf8'), recipe: 'plausible' })) },
  { weight: 4, arbitrary: callNode.map((node) => ({ bytes: Buffer.from(serialize(node), 'utf8'), recipe: 'object' })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(callNode, fc.constantFrom(...MUTATIONS), fc.double({ min: 0, max: 1, noNaN: true }))
      .map(([node, mutation, at]) => ({ bytes: mutate(serialize(node), mutation, at), recipe: `object+${mutation}` })),
  },
  { weight: 1, arbitrary: junk },
);

/**
 * `count` fuzzed calls, deterministic for a seed. Generated in chunks so that a large
 * run never holds all of them.
 */
export function* fuzzCalls(count: number, seed: number, chunk = 500): Generator<FuzzCall> {
  for (let made = 0, round = 0; made < count; round++) {
    const n = Math.min(chunk, count - made);
    for (const call of fc.sample(fuzzCall, { numRuns: n, seed: (seed + round * 7919) | 0 })) yield call;
    made += n;
  }
}

/**
 * A gateway request around one fuzzed call: a single-call route (whose path gives a
 * missing type) or `/v1/batch` with a fuzzed envelope (`context`, `integrations` and
 * `sentAt` merged into the call by the gateway).
 */
export interface FuzzRequest {
  path: string;
  body: Buffer;
  recipe: string;
}

const envelopeField: fc.Arbitrary<JsonNode | undefined> = fc.option(freeFormObject, { nil: undefined });

export const fuzzRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc.tuple(fc.constantFrom(...CALL_TYPES), fuzzCall).map(([type, call]) => ({ path: `/v1/${type}`, body: call.bytes, recipe: `single:${call.recipe}` })),
  fc
    .tuple(callNode, envelopeField, fc.option(integrationsValue, { nil: undefined }), fc.option(timestampValue, { nil: undefined }), fc.constantFrom('/v1/batch', '/v1/import'))
    .map(([call, context, integrations, sentAt, path]) => {
      const entries: [string, JsonNode][] = [['batch', { kind: 'array', items: [call] }]];
      if (context !== undefined) entries.push(['context', context]);
      if (integrations !== undefined) entries.push(['integrations', integrations]);
      if (sentAt !== undefined) entries.push(['sentAt', sentAt]);
      return { path, body: Buffer.from(serialize({ kind: 'object', entries }), 'utf8'), recipe: 'batch-envelope' };
    }),
);

export function* fuzzRequests(count: number, seed: number, chunk = 200): Generator<FuzzRequest> {
  for (let made = 0, round = 0; made < count; round++) {
    const n = Math.min(chunk, count - made);
    for (const request of fc.sample(fuzzRequest, { numRuns: n, seed: (seed + round * 104729) | 0 })) yield request;
    made += n;
  }
}
