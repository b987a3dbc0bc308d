import { afterEach, describe, expect, it } from 'vitest';
import { Analytics, AnalyticsValidationError } from '../src/index.js';
import type { ValidationCode } from '../src/index.js';
import { buildCall } from '../src/calls.js';
import { GATEWAY_ADDED_BYTES, HTTP_BATCH_LIMITS } from '../src/http-transport.js';
import { fakeTransport } from './fake-transport.js';

const LIBRARY = { name: 'switchyard-client', version: '9.9.9' };
const NOW = Date.parse('2026-05-01T12:00:00.000Z');
const fixedId = () => 'm-1';
/** The Kafka transport's per-call limit: 32 KB exactly. */
const KAFKA_LIMIT = { maxCallBytes: 32 * 1024 };

/** Runs `fn` and returns the AnalyticsValidationError it throws (failing when it does not). */
function validationError(fn: () => unknown): AnalyticsValidationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AnalyticsValidationError);
    return err as AnalyticsValidationError;
  }
  throw new Error('expected an AnalyticsValidationError, nothing was thrown');
}

describe('buildCall', () => {
  it('serializes each type with the Segment key order, a messageId, a timestamp and context.library', () => {
    const cases: [Parameters<typeof buildCall>[0], Record<string, unknown>, string][] = [
      [
        'track',
        { userId: 'u-1', event: 'Order Completed', properties: { total: 99.5 }, context: { ip: '203.0.113.9' } },
        '{"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9","library":{"name":"switchyard-client","version":"9.9.9"}}}',
      ],
      [
        'identify',
        { anonymousId: 'a-1', traits: { plan: 'pro' }, integrations: { All: false, Webhooks: true } },
        '{"type":"identify","anonymousId":"a-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","traits":{"plan":"pro"},"context":{"library":{"name":"switchyard-client","version":"9.9.9"}},"integrations":{"All":false,"Webhooks":true}}',
      ],
      [
        'page',
        { userId: 'u-1', category: 'Docs', name: 'Intro', properties: { path: '/intro' } },
        '{"type":"page","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","name":"Intro","category":"Docs","properties":{"path":"/intro"},"context":{"library":{"name":"switchyard-client","version":"9.9.9"}}}',
      ],
      [
        'screen',
        { userId: 'u-1', name: 'Home', context: { library: { name: 'my-wrapper', version: '1' } } },
        '{"type":"screen","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","name":"Home","context":{"library":{"name":"my-wrapper","version":"1"}}}',
      ],
      [
        'group',
        { userId: 'u-1', groupId: 'g-1', traits: { 'Company Name': 'Acme' } },
        '{"type":"group","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","groupId":"g-1","traits":{"Company Name":"Acme"},"context":{"library":{"name":"switchyard-client","version":"9.9.9"}}}',
      ],
      [
        'alias',
        { userId: 'u-1', previousId: 'anon-7' },
        '{"type":"alias","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","previousId":"anon-7","context":{"library":{"name":"switchyard-client","version":"9.9.9"}}}',
      ],
    ];
    for (const [type, input, json] of cases) {
      const call = buildCall(type, input as never, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
      expect(call.json, type).toBe(json);
      expect(call.bytes).toBe(Buffer.byteLength(json));
      expect(call.messageId).toBe('m-1');
      expect(call.type).toBe(type);
    }
  });

  it('keeps a given messageId and normalizes a given timestamp (Date or any ISO 8601 form) to UTC with milliseconds', () => {
    const asDate = buildCall('track', { userId: 'u', event: 'e', timestamp: new Date('2020-01-02T03:04:05.678Z'), messageId: 'mine' }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    expect(JSON.parse(asDate.json)).toMatchObject({ messageId: 'mine', timestamp: '2020-01-02T03:04:05.678Z' });
    // The Go library's form: no milliseconds, no colon in the offset.
    const goForm = buildCall('track', { userId: 'u', event: 'e', timestamp: '2009-11-10T23:00:00+0100' }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    expect(JSON.parse(goForm.json)).toMatchObject({ timestamp: '2009-11-10T22:00:00.000Z' });
  });

  it('leaves out null fields and empty ids, as the gateway reads them', () => {
    const call = buildCall('track', { userId: '', anonymousId: 'a-1', event: 'e', properties: null as never }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    expect(call.json).toBe(
      '{"type":"track","anonymousId":"a-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"e","context":{"library":{"name":"switchyard-client","version":"9.9.9"}}}',
    );
  });

  it('keys by userId, else anonymousId', () => {
    expect(buildCall('track', { userId: 'u-1', anonymousId: 'a-1', event: 'e' }, NOW, fixedId, LIBRARY, KAFKA_LIMIT).key).toBe('u-1');
    expect(buildCall('track', { anonymousId: 'a-1', event: 'e' }, NOW, fixedId, LIBRARY, KAFKA_LIMIT).key).toBe('a-1');
  });

  it('accepts a call of exactly 32 KB and refuses one byte more with too_large', () => {
    const base = buildCall('track', { userId: 'u', event: 'e', properties: { pad: '' } }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    const pad = 32 * 1024 - base.bytes;
    const exact = buildCall('track', { userId: 'u', event: 'e', properties: { pad: 'x'.repeat(pad) } }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    expect(exact.bytes).toBe(32 * 1024);
    const error = validationError(() =>
      buildCall('track', { userId: 'u', event: 'e', properties: { pad: 'x'.repeat(pad + 1) } }, NOW, fixedId, LIBRARY, KAFKA_LIMIT),
    );
    expect(error.code).toBe('too_large');
    expect(error.message).toBe(
      'track call is 32769 bytes as JSON, over the 32768-byte limit per call: send less data in traits, properties or context',
    );
  });

  it('over HTTP, leaves room for the receivedAt and sentAt the gateway adds before its own 32 KB check', () => {
    expect(GATEWAY_ADDED_BYTES).toBe(Buffer.byteLength(',"receivedAt":"2026-05-01T12:00:00.000Z","sentAt":"2026-05-01T12:00:00.000Z"'));
    const limit = 32 * 1024 - GATEWAY_ADDED_BYTES;
    const base = buildCall('track', { userId: 'u', event: 'e', properties: { pad: '' } }, NOW, fixedId, LIBRARY, HTTP_BATCH_LIMITS);
    const pad = limit - base.bytes;
    expect(buildCall('track', { userId: 'u', event: 'e', properties: { pad: 'x'.repeat(pad) } }, NOW, fixedId, LIBRARY, HTTP_BATCH_LIMITS).bytes).toBe(limit);
    const error = validationError(() =>
      buildCall('track', { userId: 'u', event: 'e', properties: { pad: 'x'.repeat(pad + 1) } }, NOW, fixedId, LIBRARY, HTTP_BATCH_LIMITS),
    );
    expect(error.code).toBe('too_large');
    expect(error.message).toBe(
      `track call is ${limit + 1} bytes as JSON, over the ${limit}-byte limit per call ` +
        `(32 KB less the ${GATEWAY_ADDED_BYTES} bytes of receivedAt and sentAt the gateway adds to each call): send less data in traits, properties or context`,
    );
  });

  it('measures the size in UTF-8 bytes, not characters', () => {
    const base = buildCall('track', { userId: 'u', event: 'e', properties: { pad: '' } }, NOW, fixedId, LIBRARY, KAFKA_LIMIT);
    // 'é' is 2 bytes: half as many characters as bytes left fill the call to one byte over.
    const chars = Math.floor((32 * 1024 - base.bytes) / 2) + 1;
    const error = validationError(() =>
      buildCall('track', { userId: 'u', event: 'e', properties: { pad: 'é'.repeat(chars) } }, NOW, fixedId, LIBRARY, KAFKA_LIMIT),
    );
    expect(error.code).toBe('too_large');
  });
});

describe('validation through the client: a typed error and nothing queued', () => {
  let client: Analytics | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
  });

  const cases: { name: string; call: (a: Analytics) => unknown; code: ValidationCode; message: RegExp }[] = [
    { name: 'identify without any id', call: (a) => a.identify({ traits: { plan: 'pro' } }), code: 'missing_identity', message: /^identify\(\) needs to know who: set userId .* or anonymousId/ },
    { name: 'track with empty ids', call: (a) => a.track({ userId: '', anonymousId: '', event: 'e' }), code: 'missing_identity', message: /set userId/ },
    { name: 'track without event', call: (a) => a.track({ userId: 'u' } as never), code: 'missing_event', message: /^track\(\) needs an event name: set event/ },
    { name: 'track with empty event', call: (a) => a.track({ userId: 'u', event: '' }), code: 'missing_event', message: /set event/ },
    { name: 'page without ids', call: (a) => a.page({ name: 'Home' }), code: 'missing_identity', message: /^page\(\)/ },
    { name: 'screen without ids', call: (a) => a.screen({ name: 'Home' }), code: 'missing_identity', message: /^screen\(\)/ },
    { name: 'group without groupId', call: (a) => a.group({ userId: 'u' } as never), code: 'missing_group_id', message: /^group\(\) needs the group's id: set groupId/ },
    { name: 'group without ids', call: (a) => a.group({ groupId: 'g' }), code: 'missing_identity', message: /^group\(\)/ },
    { name: 'alias without userId', call: (a) => a.alias({ previousId: 'p' } as never), code: 'missing_user_id', message: /^alias\(\) needs the user's new id: set userId/ },
    { name: 'alias with only anonymousId', call: (a) => a.alias({ anonymousId: 'x', previousId: 'p' } as never), code: 'missing_user_id', message: /set userId/ },
    { name: 'alias without previousId', call: (a) => a.alias({ userId: 'u' } as never), code: 'missing_previous_id', message: /^alias\(\) needs the id the user had before: set previousId/ },
    { name: 'unparseable timestamp', call: (a) => a.track({ userId: 'u', event: 'e', timestamp: 'yesterday' }), code: 'bad_timestamp', message: /timestamp must be a Date or an ISO 8601 string .*got the string "yesterday"/ },
    { name: 'invalid Date', call: (a) => a.track({ userId: 'u', event: 'e', timestamp: new Date('nope') }), code: 'bad_timestamp', message: /invalid Date/ },
    { name: 'number timestamp', call: (a) => a.track({ userId: 'u', event: 'e', timestamp: 1_700_000_000_000 as never }), code: 'bad_timestamp', message: /got number 1700000000000/ },
    { name: 'properties not an object', call: (a) => a.track({ userId: 'u', event: 'e', properties: [1, 2] as never }), code: 'bad_field', message: /field "properties" must be an object, not an array/ },
    { name: 'event not a string', call: (a) => a.track({ userId: 'u', event: 42 as never }), code: 'bad_field', message: /field "event" must be a string/ },
    { name: 'messageId not a string', call: (a) => a.track({ userId: 'u', event: 'e', messageId: 7 as never }), code: 'bad_field', message: /messageId must be a string/ },
    { name: 'a BigInt in properties', call: (a) => a.track({ userId: 'u', event: 'e', properties: { n: 10n } }), code: 'bad_field', message: /BigInt/ },
    { name: 'not an object at all', call: (a) => a.identify('u-1' as never), code: 'bad_field', message: /^identify\(\) takes one object of fields/ },
    { name: 'over 32 KB', call: (a) => a.identify({ userId: 'u', traits: { blob: 'x'.repeat(40_000) } }), code: 'too_large', message: /over the \d+-byte limit per call/ },
  ];

  it.each(cases)('$name → $code', async ({ call, code, message }) => {
    const transport = fakeTransport();
    client = new Analytics('wk', { transport, flushAt: 1 });
    const error = validationError(() => call(client as Analytics));
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.retriable).toBe(false);
    await client.flush();
    expect(transport.sent).toEqual([]);
  });

  it('a circular object is refused, not a crash', () => {
    const transport = fakeTransport();
    client = new Analytics('wk', { transport });
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    const error = validationError(() => client?.track({ userId: 'u', event: 'e', properties: loop }));
    expect(error.code).toBe('bad_field');
  });

  it('a valid call returns its messageId, a fresh UUID when none is given', async () => {
    const transport = fakeTransport();
    client = new Analytics('wk', { transport, flushAt: 1 });
    const first = client.track({ userId: 'u', event: 'e' });
    const second = client.track({ userId: 'u', event: 'e' });
    expect(first).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(second).not.toBe(first);
    await client.flush();
    expect(transport.sent.flatMap((b) => b.messages.map((m) => m.messageId))).toEqual([first, second]);
  });
});
