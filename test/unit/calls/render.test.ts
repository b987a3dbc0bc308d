import { describe, expect, it } from 'vitest';
import {
  parseCallBytes,
  renderAudienceIdentify,
  renderBody,
  renderDeleteBody,
  routingKey,
  withMessageId,
  type Call,
  type CallWithMessageId,
} from '../../../src/calls/index.js';

const NOON = Date.UTC(2026, 4, 1, 12); // 2026-05-01T12:00:00.000Z
const LATER = Date.UTC(2026, 5, 2, 8, 30); // a fallback that must not show when the call has a timestamp

/** A receiver that parses and re-serializes a body must get the same bytes (and signature). */
function stable(body: string): string {
  expect(JSON.stringify(JSON.parse(body))).toBe(body);
  return body;
}

function callFrom(text: string): Call {
  const result = parseCallBytes(Buffer.from(text, 'utf8'));
  if (!result.ok) throw new Error(`${result.reason}: ${result.error}`);
  return result.call;
}

function render(text: string, fallbackMs = LATER, messageId = 'generated-id'): string {
  return stable(renderBody(withMessageId(callFrom(text), messageId), fallbackMs));
}

describe('renderBody: one literal body per type', () => {
  // Inputs put keys in a scrambled order and carry fields that must not be rendered
  // (integrations, sentAt, writeKey, receivedAt, fields of other types).
  const cases: Array<[string, string, string]> = [
    [
      'track (docs/webhooks.md example)',
      '{"context":{"ip":"203.0.113.9"},"properties":{"total":99.5},"event":"Order Completed","messageId":"m-1",' +
        '"timestamp":"2026-05-01T12:00:00.000Z","userId":"u-1","type":"track","integrations":{"All":true},' +
        '"sentAt":"2026-05-01T12:00:01.000Z","writeKey":"wk","receivedAt":"2026-05-01T12:00:02.000Z","traits":{"x":1}}',
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}',
    ],
    [
      'alias (docs/webhooks.md example)',
      '{"type":"alias","previousId":"anon-7","userId":"u-1","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z"}',
      '{"version":1,"type":"alias","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"anon-7","User ID":"u-1"}',
    ],
    [
      'alias with anonymousId and context',
      '{"context":{"ip":"198.51.100.4"},"userId":"u-9","previousId":"u-8","anonymousId":"anon-9","type":"alias","messageId":"m-3","timestamp":"2026-05-01T12:00:00Z"}',
      '{"version":1,"type":"alias","anonymousId":"anon-9","messageId":"m-3","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"u-8","User ID":"u-9","context":{"ip":"198.51.100.4"}}',
    ],
    [
      'identify',
      '{"traits":{"name":"Ada Lovelace","email":"ada@example.com","logins":5,"plan":"pro"},"type":"identify","userId":"u-2",' +
        '"anonymousId":"anon-2","messageId":"m-4","timestamp":"2026-05-01T12:00:00.000Z","properties":{"ignored":true},' +
        '"context":{"library":{"name":"analytics-go","version":"2.1.1"}}}',
      '{"version":1,"type":"identify","userId":"u-2","anonymousId":"anon-2","messageId":"m-4","timestamp":"2026-05-01T12:00:00.000Z","traits":{"name":"Ada Lovelace","email":"ada@example.com","logins":5,"plan":"pro"},"context":{"library":{"name":"analytics-go","version":"2.1.1"}}}',
    ],
    [
      'page (anonymous, with name, category and the recognized properties)',
      '{"type":"page","anonymousId":"anon-3","category":"Docs","name":"Pricing","messageId":"m-5","timestamp":"2026-05-01T12:00:00.000Z",' +
        '"properties":{"path":"/pricing","referrer":"https://www.example.org/","title":"Pricing","url":"https://example.com/pricing","plan":"team"}}',
      '{"version":1,"type":"page","anonymousId":"anon-3","messageId":"m-5","timestamp":"2026-05-01T12:00:00.000Z","name":"Pricing","category":"Docs","properties":{"path":"/pricing","referrer":"https://www.example.org/","title":"Pricing","url":"https://example.com/pricing","plan":"team"}}',
    ],
    [
      'screen with device, os and app context',
      '{"type":"screen","userId":"u-4","name":"Checkout","properties":{"step":2},"messageId":"m-6","timestamp":"2026-05-01T12:00:00.000Z",' +
        '"context":{"device":{"model":"iPhone15,2","type":"ios"},"os":{"name":"iOS","version":"17.4"},"app":{"build":"412","name":"Shop","version":"3.2.0"}}}',
      '{"version":1,"type":"screen","userId":"u-4","messageId":"m-6","timestamp":"2026-05-01T12:00:00.000Z","name":"Checkout","properties":{"step":2},"context":{"device":{"model":"iPhone15,2","type":"ios"},"os":{"name":"iOS","version":"17.4"},"app":{"build":"412","name":"Shop","version":"3.2.0"}}}',
    ],
    [
      'group with trait keys containing spaces',
      '{"type":"group","groupId":"g-1","userId":"u-5","messageId":"m-7","timestamp":"2026-05-01T12:00:00.000Z",' +
        '"traits":{"name":"Initech","industry":"Software","employees":420,"plan":"enterprise","Company Size":"201-500","Account Owner Email":"bill@initech.example"}}',
      '{"version":1,"type":"group","userId":"u-5","messageId":"m-7","timestamp":"2026-05-01T12:00:00.000Z","groupId":"g-1","traits":{"name":"Initech","industry":"Software","employees":420,"plan":"enterprise","Company Size":"201-500","Account Owner Email":"bill@initech.example"}}',
    ],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(render(input)).toBe(expected);
  });
});

describe('renderBody: fields and edge cases', () => {
  it('leaves absent and null optional fields out, never null', () => {
    expect(render('{"type":"track","userId":"u-1","event":"Signed Up","messageId":"m-1","properties":null,"context":null,"anonymousId":null}', NOON)).toBe(
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Signed Up"}',
    );
    expect(render('{"type":"page","userId":"u-1","messageId":"m-1"}', NOON)).toBe(
      '{"version":1,"type":"page","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
  });

  it('uses the fallback timestamp only when the call has none', () => {
    expect(render('{"type":"identify","userId":"u","messageId":"m"}', NOON)).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
    expect(render('{"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z"}', LATER)).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
  });

  it.each([
    ['2009-11-10T23:00:00+0000', '2009-11-10T23:00:00.000Z'],
    ['2026-05-01T13:00:00+01:00', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01T06:30:00-05:30', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01T12:00:00.123456789Z', '2026-05-01T12:00:00.123Z'],
    ['2026-05-01', '2026-05-01T00:00:00.000Z'],
  ])('renders timestamp %s as UTC %s', (timestamp, utc) => {
    expect(render(`{"type":"identify","userId":"u","messageId":"m","timestamp":"${timestamp}"}`)).toBe(
      `{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"${utc}"}`,
    );
  });

  it.each([
    ['2026-05-01t12:00:00.000z', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01 12:00:00.000Z', '2026-05-01T12:00:00.000Z'],
    ['2026-05-01T12:00:00,250Z', '2026-05-01T12:00:00.250Z'],
    ['0001-01-01T00:00:00.000Z', '0001-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
  ])('writes timestamp %s in the body form %s (the call’s own text only when it is in that form)', (timestamp, utc) => {
    expect(render(`{"type":"identify","userId":"u","messageId":"m","timestamp":"${timestamp}"}`)).toBe(
      `{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"${utc}"}`,
    );
  });

  it('formats timestampMs when it no longer names the instant of the call’s own text (corrected after parsing)', () => {
    const call = callFrom('{"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z"}');
    expect(stable(renderBody(withMessageId({ ...call, timestampMs: LATER }, 'm'), NOON))).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"2026-06-02T08:30:00.000Z"}',
    );
  });

  it('fills a missing messageId from withMessageId, and keeps the call’s own', () => {
    expect(render('{"type":"identify","userId":"u"}', NOON, 'gen-1')).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"gen-1","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
    expect(render('{"type":"identify","userId":"u","messageId":"own"}', NOON, 'gen-1')).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"own","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
  });

  it('refuses to render a call without messageId (a bug in the caller)', () => {
    const call = callFrom('{"type":"identify","userId":"u"}') as CallWithMessageId;
    expect(() => renderBody(call, NOON)).toThrow(/no messageId/);
  });

  it('renders a numeric userId as its string form', () => {
    expect(render('{"type":"identify","userId":12345,"messageId":"m"}', NOON)).toBe(
      '{"version":1,"type":"identify","userId":"12345","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z"}',
    );
  });

  it('keeps unicode in keys and values as UTF-8 text, and escapes lone surrogates', () => {
    expect(
      render('{"type":"track","userId":"ユーザー","event":"Zoë’s 🚀","messageId":"m","properties":{"名前":"Zoë","emoji🔥":"✓","lone":"\\ud800","esc":"\\u00e9\\n\\t\\"/"}}', NOON),
    ).toBe(
      '{"version":1,"type":"track","userId":"ユーザー","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","event":"Zoë’s 🚀","properties":{"名前":"Zoë","emoji🔥":"✓","lone":"\\ud800","esc":"é\\n\\t\\"/"}}',
    );
  });

  it('writes numbers as JSON.stringify does (1e21, -0, 0.1, exponents)', () => {
    expect(
      render('{"type":"track","userId":"u","event":"N","messageId":"m","properties":{"big":1e21,"negZero":-0,"tenth":0.1,"exp":1E2,"trail":1.50,"small":1e-7,"int":12345678901234567890}}', NOON),
    ).toBe(
      '{"version":1,"type":"track","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","event":"N","properties":{"big":1e+21,"negZero":0,"tenth":0.1,"exp":100,"trail":1.5,"small":1e-7,"int":12345678901234567000}}',
    );
  });

  it('keeps nested objects and arrays as parsed', () => {
    expect(
      render('{"type":"track","userId":"u","event":"Cart","messageId":"m","properties":{"products":[{"id":"p1","tags":["a",{"b":[null,true,false]}]}],"empty":{},"none":[]}}', NOON),
    ).toBe(
      '{"version":1,"type":"track","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","event":"Cart","properties":{"products":[{"id":"p1","tags":["a",{"b":[null,true,false]}]}],"empty":{},"none":[]}}',
    );
  });

  it('orders integer-like keys as any receiver’s JSON.parse would', () => {
    expect(render('{"type":"identify","userId":"u","messageId":"m","traits":{"b":1,"2":2,"1":3}}', NOON)).toBe(
      '{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","traits":{"1":3,"2":2,"b":1}}',
    );
  });

  it('keeps an own __proto__ key in properties, and pollutes nothing', () => {
    const body = render('{"type":"track","userId":"u","event":"E","messageId":"m","properties":{"__proto__":{"polluted":true},"a":1}}', NOON);
    expect(body).toBe(
      '{"version":1,"type":"track","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","event":"E","properties":{"__proto__":{"polluted":true},"a":1}}',
    );
    expect(JSON.stringify(JSON.parse(body))).toBe(body);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('renders a body at the nesting limit', () => {
    const levels = 255;
    const nested = '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    const body = render(`{"type":"identify","userId":"u","messageId":"m","traits":${nested}}`, NOON);
    expect(body).toBe(
      `{"version":1,"type":"identify","userId":"u","messageId":"m","timestamp":"2026-05-01T12:00:00.000Z","traits":${nested}}`,
    );
  });
});

describe('renderDeleteBody', () => {
  it('has only type, userId and timestamp, and no version', () => {
    const body = stable(renderDeleteBody('u-1', NOON));
    expect(body).toBe('{"type":"delete","userId":"u-1","timestamp":"2026-05-01T12:00:00.000Z"}');
  });

  it('escapes the userId as JSON', () => {
    const body = stable(renderDeleteBody('ü "quoted"', NOON + 5));
    expect(body).toBe('{"type":"delete","userId":"ü \\"quoted\\"","timestamp":"2026-05-01T12:00:00.005Z"}');
  });
});

describe('renderAudienceIdentify', () => {
  it.each([
    [
      'entered',
      { userId: 'u-1', messageId: 'aud-1', timestampMs: NOON, traitKey: 'high_value_users', member: true },
      '{"version":1,"type":"identify","userId":"u-1","messageId":"aud-1","timestamp":"2026-05-01T12:00:00.000Z","traits":{"high_value_users":true}}',
    ],
    [
      'left',
      { userId: 'u-1', messageId: 'aud-2', timestampMs: NOON, traitKey: 'high_value_users', member: false },
      '{"version":1,"type":"identify","userId":"u-1","messageId":"aud-2","timestamp":"2026-05-01T12:00:00.000Z","traits":{"high_value_users":false}}',
    ],
    [
      'anonymous',
      { anonymousId: 'anon-1', messageId: 'aud-3', timestampMs: NOON, traitKey: 'trial_users', member: true },
      '{"version":1,"type":"identify","anonymousId":"anon-1","messageId":"aud-3","timestamp":"2026-05-01T12:00:00.000Z","traits":{"trial_users":true}}',
    ],
    [
      'both ids',
      { userId: 'u-2', anonymousId: 'anon-2', messageId: 'aud-4', timestampMs: NOON, traitKey: 'x', member: true },
      '{"version":1,"type":"identify","userId":"u-2","anonymousId":"anon-2","messageId":"aud-4","timestamp":"2026-05-01T12:00:00.000Z","traits":{"x":true}}',
    ],
    [
      'a __proto__ trait key',
      { userId: 'u-3', messageId: 'aud-5', timestampMs: NOON, traitKey: '__proto__', member: true },
      '{"version":1,"type":"identify","userId":"u-3","messageId":"aud-5","timestamp":"2026-05-01T12:00:00.000Z","traits":{"__proto__":true}}',
    ],
  ])('%s', (_name, params, expected) => {
    const body = stable(renderAudienceIdentify(params));
    expect(body).toBe(expected);
  });

  it('refuses to render without any id', () => {
    expect(() => renderAudienceIdentify({ messageId: 'm', timestampMs: NOON, traitKey: 'x', member: true })).toThrow(TypeError);
  });
});

describe('routingKey', () => {
  it.each([
    ['userId when present', '{"type":"identify","userId":"u-1","anonymousId":"a-1"}', 'u-1'],
    ['else anonymousId', '{"type":"page","anonymousId":"a-1"}', 'a-1'],
    ['the new userId of an alias', '{"type":"alias","userId":"u-new","previousId":"u-old","anonymousId":"a-1"}', 'u-new'],
    ['a numeric userId as a string', '{"type":"identify","userId":7}', '7'],
  ])('%s', (_name, text, key) => {
    expect(routingKey(callFrom(text))).toBe(key);
  });

  it('throws for a call without identity (not a validated call)', () => {
    expect(() => routingKey({ type: 'identify', raw: {} })).toThrow(TypeError);
  });
});
