import { describe, expect, it } from 'vitest';
import {
  MAX_CALL_BYTES,
  MAX_NESTING_DEPTH,
  parseCallBytes,
  validateCall,
  withMessageId,
  type Call,
  type InvalidReason,
  type ParseResult,
} from '../../../src/calls/index.js';

const NOON = Date.UTC(2026, 4, 1, 12);

function parseText(text: string): ParseResult {
  return parseCallBytes(Buffer.from(text, 'utf8'));
}

function ok(result: ParseResult): Call {
  if (!result.ok) throw new Error(`expected a valid call, got ${result.reason}: ${result.error}`);
  return result.call;
}

function failure(result: ParseResult): { reason: InvalidReason; error: string } {
  if (result.ok) throw new Error(`expected an invalid call, got ${JSON.stringify(result.call.raw).slice(0, 200)}`);
  return { reason: result.reason, error: result.error };
}

/** `{"a":{"a":…1…}}` nested `levels` objects deep. */
function nestedObject(levels: number): string {
  return '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
}

describe('validateCall: the call model', () => {
  it('keeps the fields as received and the free-form objects by reference', () => {
    const text =
      '{"type":"track","userId":"u-1","anonymousId":"a-1","messageId":"m-1",' +
      '"timestamp":"2009-11-10T23:00:00+0000","sentAt":"2009-11-10T23:00:05+0000","event":"Order Completed",' +
      '"properties":{"total":99.5},"traits":{"plan":"pro"},"context":{"ip":"203.0.113.9"},' +
      '"integrations":{"All":false,"Webhooks":true},"writeKey":"wk-1","receivedAt":"x","extra":[1,{"deep":true}]}';
    const call = ok(parseText(text));
    expect(call).toEqual({
      type: 'track',
      userId: 'u-1',
      anonymousId: 'a-1',
      messageId: 'm-1',
      timestampMs: Date.UTC(2009, 10, 10, 23),
      sentAtMs: Date.UTC(2009, 10, 10, 23, 0, 5),
      event: 'Order Completed',
      properties: { total: 99.5 },
      traits: { plan: 'pro' },
      context: { ip: '203.0.113.9' },
      integrations: { All: false, Webhooks: true },
      writeKey: 'wk-1',
      raw: JSON.parse(text),
    });
    expect(call.properties).toBe(call.raw.properties);
    expect(call.traits).toBe(call.raw.traits);
    expect(call.context).toBe(call.raw.context);
    expect(call.integrations).toBe(call.raw.integrations);
  });

  it('returns the very object it was given as raw', () => {
    const value = { type: 'identify', userId: 'u-1', traits: { a: 1 } };
    const call = ok(validateCall(value));
    expect(call.raw).toBe(value);
    expect(call.traits).toBe(value.traits);
  });

  it('accepts a numeric userId (and other ids) as their string form, as Segment does', () => {
    const call = ok(validateCall({ type: 'alias', userId: 42, previousId: 7.5, anonymousId: 0 }));
    expect(call.userId).toBe('42');
    expect(call.previousId).toBe('7.5');
    expect(call.anonymousId).toBe('0');
    expect(ok(validateCall({ type: 'group', userId: 'u', groupId: 1e21 })).groupId).toBe('1e+21');
  });

  it('treats null as absent, and an empty id or messageId as absent', () => {
    const call = ok(
      validateCall({
        type: 'page',
        userId: null,
        anonymousId: 'a-1',
        messageId: '',
        timestamp: null,
        sentAt: '',
        properties: null,
        context: null,
        name: null,
      }),
    );
    expect(call.userId).toBeUndefined();
    expect(call.anonymousId).toBe('a-1');
    expect(call.messageId).toBeUndefined();
    expect(call.timestampMs).toBeUndefined();
    expect(call.sentAtMs).toBeUndefined();
    expect(call.properties).toBeUndefined();
    expect(call.context).toBeUndefined();
    expect(call.name).toBeUndefined();
    expect(ok(validateCall({ type: 'identify', userId: '', anonymousId: 'a-2' })).userId).toBeUndefined();
  });

  it('parses timestamps with offsets into UTC milliseconds', () => {
    const at = (timestamp: string): number | undefined =>
      ok(validateCall({ type: 'identify', userId: 'u', timestamp })).timestampMs;
    expect(at('2026-05-01T12:00:00+0000')).toBe(NOON);
    expect(at('2026-05-01T13:00:00+01:00')).toBe(NOON);
    expect(at('2026-05-01T06:30:00-05:30')).toBe(NOON);
    expect(at('2026-05-01T06:30:00-0530')).toBe(NOON);
  });

  it('accepts every type with its minimum fields', () => {
    const minimal: Array<Record<string, unknown>> = [
      { type: 'identify', userId: 'u' },
      { type: 'identify', anonymousId: 'a' },
      { type: 'track', userId: 'u', event: 'E' },
      { type: 'page', anonymousId: 'a' },
      { type: 'screen', userId: 'u' },
      { type: 'group', userId: 'u', groupId: 'g' },
      { type: 'alias', userId: 'u', previousId: 'p' },
    ];
    for (const value of minimal) expect(ok(validateCall(value)).type).toBe(value.type);
  });

  it('tolerates extra keys, including an own __proto__, without touching them', () => {
    const text = '{"type":"identify","userId":"u","__proto__":{"x":1},"traits":{"__proto__":{"isAdmin":true}}}';
    const call = ok(parseText(text));
    expect(Object.keys(call.raw)).toEqual(['type', 'userId', '__proto__', 'traits']);
    expect(Object.keys(call.traits ?? {})).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(call.traits)).toBe(Object.prototype);
  });
});

describe('invalid calls: reason and a message that says what, where and what to do', () => {
  const cases: Array<[string, unknown, InvalidReason, string | RegExp]> = [
    ['an array', [{ type: 'track' }], 'not_object', 'call is an array, not a JSON object: send each call as an object'],
    ['null', null, 'not_object', 'call is null, not a JSON object'],
    ['a string', 'track', 'not_object', 'call is a string ("track"), not a JSON object'],
    ['a number', 5, 'not_object', 'call is a number (5), not a JSON object'],
    ['no type', { userId: 'u' }, 'unknown_type', 'call has no "type": set type to one of identify, track, page, screen, group, alias'],
    [
      'unknown type',
      { type: 'foo', userId: 'u' },
      'unknown_type',
      /^unknown call type "foo": expected one of identify, track, page, screen, group, alias$/,
    ],
    [
      'upper-case type',
      { type: 'Track', userId: 'u', event: 'E' },
      'unknown_type',
      'unknown call type "Track": expected one of identify, track, page, screen, group, alias (types are lower case: did you mean "track"?)',
    ],
    ['delete is not a call type', { type: 'delete', userId: 'u' }, 'unknown_type', 'unknown call type "delete"'],
    ['numeric type', { type: 3, userId: 'u' }, 'unknown_type', 'call "type" is a number (3), not a string'],
    [
      'no identity',
      { type: 'track', event: 'E' },
      'missing_identity',
      /^track call has neither userId nor anonymousId: set one of them$/,
    ],
    ['empty identity', { type: 'identify', userId: '', anonymousId: null }, 'missing_identity', 'identify call has neither userId nor anonymousId'],
    ['track without event', { type: 'track', userId: 'u' }, 'missing_event', /^track call without "event": set event to the event name$/],
    ['track with empty event', { type: 'track', userId: 'u', event: '' }, 'missing_event', 'track call without "event"'],
    ['track with null event', { type: 'track', userId: 'u', event: null }, 'missing_event', 'track call without "event"'],
    [
      'alias without previousId',
      { type: 'alias', userId: 'u' },
      'missing_field',
      /^alias call without "previousId": set previousId to the id the user had before$/,
    ],
    [
      'alias without userId',
      { type: 'alias', anonymousId: 'a', previousId: 'p' },
      'missing_field',
      /^alias call without "userId": set userId to the id the user has now$/,
    ],
    ['group without groupId', { type: 'group', userId: 'u' }, 'missing_field', /^group call without "groupId": set groupId to the group's id$/],
    [
      'boolean userId',
      { type: 'identify', userId: true },
      'bad_field',
      /^identify call field "userId" must be a string, not a boolean \(true\): set userId/,
    ],
    ['object anonymousId', { type: 'identify', anonymousId: { id: 1 } }, 'bad_field', 'field "anonymousId" must be a string, not an object'],
    ['numeric messageId', { type: 'identify', userId: 'u', messageId: 12 }, 'bad_field', 'field "messageId" must be a string, not a number (12)'],
    ['numeric event', { type: 'track', userId: 'u', event: 7 }, 'bad_field', 'track call field "event" must be a string, not a number (7): set event'],
    ['array name', { type: 'page', userId: 'u', name: ['Home'] }, 'bad_field', 'page call field "name" must be a string, not an array'],
    ['numeric category', { type: 'page', userId: 'u', category: 1 }, 'bad_field', 'field "category" must be a string'],
    ['object groupId', { type: 'group', userId: 'u', groupId: {} }, 'bad_field', 'group call field "groupId" must be a string, not an object'],
    ['array previousId', { type: 'alias', userId: 'u', previousId: [] }, 'bad_field', 'field "previousId" must be a string, not an array'],
    ['numeric writeKey', { type: 'identify', userId: 'u', writeKey: 1 }, 'bad_field', 'field "writeKey" must be a string'],
    [
      'array traits',
      { type: 'identify', userId: 'u', traits: [1, 2] },
      'bad_field',
      /^identify call field "traits" must be an object, not an array: send traits as an object of key\/values$/,
    ],
    ['string properties', { type: 'track', userId: 'u', event: 'E', properties: 'x' }, 'bad_field', 'field "properties" must be an object, not a string ("x")'],
    ['numeric context', { type: 'screen', userId: 'u', context: 1 }, 'bad_field', 'screen call field "context" must be an object, not a number (1)'],
    ['boolean integrations', { type: 'track', userId: 'u', event: 'E', integrations: false }, 'bad_field', 'field "integrations" must be an object'],
    ['a Date as traits', { type: 'identify', userId: 'u', traits: new Date(0) }, 'bad_field', 'field "traits" must be an object'],
    ['a BigInt inside properties', { type: 'track', userId: 'u', event: 'E', properties: { n: 1n } }, 'bad_field', 'field "properties" holds a BigInt'],
    [
      'garbage timestamp',
      { type: 'track', userId: 'u', event: 'E', timestamp: 'yesterday' },
      'bad_timestamp',
      /^track call field "timestamp" is not an ISO 8601 date-time: got "yesterday"; send it like "2026-05-01T12:00:00\.000Z" or leave it out$/,
    ],
    ['impossible timestamp', { type: 'identify', userId: 'u', timestamp: '2026-02-30T00:00:00Z' }, 'bad_timestamp', 'got "2026-02-30T00:00:00Z"'],
    ['numeric timestamp', { type: 'identify', userId: 'u', timestamp: 1_777_636_800_000 }, 'bad_timestamp', 'got a number (1777636800000)'],
    ['bad sentAt', { type: 'identify', userId: 'u', sentAt: '2026-13-01' }, 'bad_timestamp', 'identify call field "sentAt" is not an ISO 8601 date-time: got "2026-13-01"'],
  ];
  it.each(cases)('%s', (_name, value, reason, message) => {
    const result = failure(validateCall(value));
    expect(result.reason).toBe(reason);
    if (typeof message === 'string') expect(result.error).toContain(message);
    else expect(result.error).toMatch(message);
  });

  it('quotes a bad timestamp cut to 64 characters', () => {
    const long = `2026-05-01T${'9'.repeat(200)}`;
    const { reason, error } = failure(validateCall({ type: 'identify', userId: 'u', timestamp: long }));
    expect(reason).toBe('bad_timestamp');
    expect(error).toContain(`got ${JSON.stringify(long.slice(0, 64))}…;`);
    expect(error).not.toContain(long.slice(0, 65));
  });

  it('quotes an unknown type safely and cut to 64 characters', () => {
    const { error } = failure(validateCall({ type: `x"\n${'y'.repeat(100)}`, userId: 'u' }));
    expect(error).toBe(
      `unknown call type ${JSON.stringify(`x"\n${'y'.repeat(61)}`)}…: expected one of identify, track, page, screen, group, alias`,
    );
  });

  it('checks a known field before the type requirements', () => {
    expect(failure(validateCall({ type: 'track', userId: 'u', properties: [] })).reason).toBe('bad_field');
  });
});

describe('parseCallBytes', () => {
  it('parses a valid call from UTF-8 bytes', () => {
    const call = ok(parseText('{"type":"track","userId":"ü-1","event":"Zoë 🚀"}'));
    expect(call.userId).toBe('ü-1');
    expect(call.event).toBe('Zoë 🚀');
  });

  it('ignores a leading UTF-8 byte order mark', () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"type":"identify","userId":"u"}')]);
    expect(ok(parseCallBytes(bytes)).userId).toBe('u');
  });

  it('accepts a call of exactly MAX_CALL_BYTES and refuses one byte more as too_large', () => {
    const head = '{"type":"track","userId":"u","event":"E","properties":{"pad":"';
    const tail = '"}}';
    const exact = head + 'x'.repeat(MAX_CALL_BYTES - head.length - tail.length) + tail;
    expect(Buffer.byteLength(exact)).toBe(32 * 1024);
    expect(ok(parseText(exact)).event).toBe('E');

    const over = head + 'x'.repeat(MAX_CALL_BYTES - head.length - tail.length + 1) + tail;
    const { reason, error } = failure(parseText(over));
    expect(reason).toBe('too_large');
    expect(error).toBe(
      'call is 32769 bytes, over the 32768-byte limit: send less data in properties, traits or context',
    );
  });

  it('checks the size before parsing: a huge non-JSON value is too_large, not malformed', () => {
    expect(failure(parseCallBytes(Buffer.alloc(MAX_CALL_BYTES + 1, 0x7b))).reason).toBe('too_large');
  });

  it('counts bytes, not characters', () => {
    const head = '{"type":"track","userId":"u","event":"E","properties":{"pad":"';
    // 11 000 three-byte characters: 11 000 characters, 33 000 bytes.
    const text = `${head}${'€'.repeat(11_000)}"}}`;
    expect(text.length).toBeLessThan(MAX_CALL_BYTES);
    expect(failure(parseText(text)).reason).toBe('too_large');
  });

  const invalidUtf8: Array<[string, number[]]> = [
    ['a stray 0xff byte', [0xff]],
    ['a lone continuation byte', [0x80]],
    ['an overlong encoding of "/"', [0xc0, 0xaf]],
    ['an encoded UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated 3-byte sequence', [0xe2, 0x82]],
  ];
  it.each(invalidUtf8)('refuses invalid UTF-8 (%s) as malformed_json', (_name, bad) => {
    const bytes = Buffer.concat([
      Buffer.from('{"type":"track","userId":"u","event":"'),
      Buffer.from(bad),
      Buffer.from('"}'),
    ]);
    const { reason, error } = failure(parseCallBytes(bytes));
    expect(reason).toBe('malformed_json');
    expect(error).toBe('call is not valid UTF-8: encode the call JSON as UTF-8');
  });

  const malformed: Array<[string, string]> = [
    ['truncated JSON', '{"type":"track","userId":"u"'],
    ['a trailing comma', '{"type":"track","userId":"u",}'],
    ['single quotes', "{'type':'track'}"],
    ['two values', '{"type":"identify","userId":"u"} {}'],
    ['only whitespace', '   '],
  ];
  it.each(malformed)('refuses %s as malformed_json', (_name, text) => {
    const { reason, error } = failure(parseText(text));
    expect(reason).toBe('malformed_json');
    expect(error).toMatch(/^call is not valid JSON \(.+\): send the call as one JSON object$/);
  });

  it('refuses an empty value and a tombstone as malformed_json', () => {
    expect(failure(parseCallBytes(Buffer.alloc(0)))).toEqual({
      reason: 'malformed_json',
      error: 'call is empty: send the call as one JSON object',
    });
    expect(failure(parseCallBytes(null)).reason).toBe('malformed_json');
  });

  it('refuses valid JSON that is not an object as not_object', () => {
    expect(failure(parseText('[]')).reason).toBe('not_object');
    expect(failure(parseText('null')).reason).toBe('not_object');
    expect(failure(parseText('"track"')).reason).toBe('not_object');
  });

  it('applies the same rules as validateCall', () => {
    expect(failure(parseText('{"type":"track","userId":"u"}'))).toEqual(failure(validateCall({ type: 'track', userId: 'u' })));
  });
});

describe('nesting depth (JSON.stringify cannot render what is nested thousands deep)', () => {
  // The call is level 1 and properties, the outermost of the `levels` nested
  // objects, level 2: the innermost is at depth 1 + levels.
  const atLimit = MAX_NESTING_DEPTH - 1;
  const callText = (levels: number): string =>
    `{"type":"track","userId":"u","event":"E","properties":${nestedObject(levels)}}`;

  it('accepts nesting up to the limit, from bytes and from objects', () => {
    expect(ok(parseText(callText(atLimit))).event).toBe('E');
    expect(ok(validateCall(JSON.parse(callText(atLimit)))).event).toBe('E');
  });

  it('refuses one level more, from bytes and from objects, naming the field', () => {
    const expected = {
      reason: 'bad_field',
      error: `track call field "properties" nests objects or arrays deeper than ${MAX_NESTING_DEPTH} levels: flatten it`,
    };
    expect(failure(parseText(callText(atLimit + 1)))).toEqual(expected);
    expect(failure(validateCall(JSON.parse(callText(atLimit + 1))))).toEqual(expected);
  });

  it('refuses a 32 KB call of nested arrays in an extra key instead of crashing later', () => {
    const levels = 16_000;
    const text = `{"type":"identify","userId":"u","junk":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_CALL_BYTES);
    const { reason, error } = failure(parseText(text));
    expect(reason).toBe('bad_field');
    expect(error).toContain('identify call field "junk" nests');
  });

  it('is not fooled by many brackets inside strings', () => {
    const text = `{"type":"track","userId":"u","event":"${'{['.repeat(2000)}"}`;
    expect(ok(parseText(text)).event).toBe('{['.repeat(2000));
  });
});

describe('withMessageId', () => {
  it('fills a missing messageId in a copy, leaving the call and raw untouched', () => {
    const call = ok(validateCall({ type: 'identify', userId: 'u' }));
    const filled = withMessageId(call, 'gen-1');
    expect(filled.messageId).toBe('gen-1');
    expect(call.messageId).toBeUndefined();
    expect(filled.raw).toBe(call.raw);
    expect('messageId' in call.raw).toBe(false);
  });

  it("keeps the call's own messageId and returns the same object", () => {
    const call = ok(validateCall({ type: 'identify', userId: 'u', messageId: 'own' }));
    const filled = withMessageId(call, 'gen-1');
    expect(filled).toBe(call);
    expect(filled.messageId).toBe('own');
  });

  it('refuses to fill an empty messageId', () => {
    const call = ok(validateCall({ type: 'identify', userId: 'u' }));
    expect(() => withMessageId(call, '')).toThrow(TypeError);
  });
});
