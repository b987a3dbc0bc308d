import { describe, expect, it } from 'vitest';
import { RECEIPT_TIMESTAMP_MAX_AGE_MS, RECEIPT_TIMESTAMP_MAX_AHEAD_MS, planCall } from '../../../src/router/plan-call.js';
import type { CallOutcome, RoutedCall } from '../../../src/router/plan-call.js';
import { recordMessageId } from '../../../src/router/record-ids.js';
import { baseTable, NAMES, record } from './fixtures.js';

const table = baseTable();
const NOW = Date.UTC(2030, 0, 1);
const plan = (r: ReturnType<typeof record>) => planCall(r, table, () => NOW);

function routed(outcome: CallOutcome): RoutedCall {
  if (outcome.kind !== 'routed') throw new Error(`expected a routed call, got ${outcome.reason}: ${outcome.error}`);
  return outcome;
}
const text = (headers: RoutedCall['headers']) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
const targets = (r: RoutedCall) => r.decisions.filter((d) => d.routed).map((d) => d.target.topic);

describe('planCall: routed calls', () => {
  it('renders the body once with the call\'s own id and timestamp, and sets the delivery headers', () => {
    const r = routed(
      plan(
        record(
          '{"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T14:00:00+02:00","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"},"integrations":{"All":true},"extra":1}',
          { headers: { 'source-id': 'web', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } },
        ),
      ),
    );
    expect(r.body?.toString()).toBe(
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-1","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed","properties":{"total":99.5},"context":{"ip":"203.0.113.9"}}',
    );
    expect(r.key.toString()).toBe('u-1');
    expect(text(r.headers)).toEqual({
      'source-id': 'web',
      'message-id': 'm-1',
      attempt: '0',
      'first-attempt-at': '',
      'received-at': String(Date.UTC(2026, 4, 1, 12, 0, 0)),
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    });
    expect(targets(r)).toEqual([NAMES.deliveries('main'), NAMES.deliveries('other')]);
    expect(r.source.id).toBe('web');
    expect(r.type).toBe('track');
  });

  it('falls back to the record timestamp and a deterministic message id derived from the record', () => {
    const rec = record('{"type":"identify","anonymousId":"a-9","traits":{"plan":"pro"}}', {
      headers: { 'source-id': 'web' },
      timestamp: String(Date.UTC(2026, 4, 2, 8, 30, 0, 5)),
      offset: '77',
      partition: 2,
    });
    const first = routed(plan(rec));
    const again = routed(plan(rec));
    const id = recordMessageId(NAMES.calls, 2, '77', String(Date.UTC(2026, 4, 2, 8, 30, 0, 5)));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(first.messageId).toBe(id);
    expect(again.messageId).toBe(id);
    expect(first.body?.toString()).toBe(
      `{"version":1,"type":"identify","anonymousId":"a-9","messageId":"${id}","timestamp":"2026-05-02T08:30:00.005Z","traits":{"plan":"pro"}}`,
    );
    expect(first.key.toString()).toBe('a-9');
    expect(text(first.headers)['message-id']).toBe(id);
    expect(text(first.headers).traceparent).toBeUndefined();
    // Another offset, another id.
    expect(routed(plan({ ...rec, offset: '78' })).messageId).not.toBe(id);
  });

  it('uses the clock when the record has no usable timestamp', () => {
    const r = routed(plan(record('{"type":"page","userId":"u-2","name":"Home"}', { headers: { 'source-id': 'web' }, timestamp: '-1' })));
    expect(r.body?.toString()).toContain('"timestamp":"2030-01-01T00:00:00.000Z"');
    expect(r.receivedAtMs).toBe(NOW);
    expect(r.timestamp).toBe(String(NOW));
    expect(text(r.headers)['received-at']).toBeUndefined();
  });

  it('carries a recent receipt time as the records\' timestamp, an old or future one in a received-at header', () => {
    const at = (offsetMs: number) =>
      routed(plan(record('{"type":"identify","userId":"u-1"}', { headers: { 'source-id': 'web' }, timestamp: String(NOW + offsetMs) })));
    for (const offsetMs of [0, -5_000, -RECEIPT_TIMESTAMP_MAX_AGE_MS, RECEIPT_TIMESTAMP_MAX_AHEAD_MS]) {
      const r = at(offsetMs);
      expect(r.timestamp, `${offsetMs}`).toBe(String(NOW + offsetMs));
      expect(Object.keys(r.headers), `${offsetMs}`).toEqual(['source-id', 'message-id', 'attempt', 'first-attempt-at']);
    }
    // A backlog or a producer's old CreateTime: stamped now (retention counts from now), receipt time in the header.
    for (const offsetMs of [-RECEIPT_TIMESTAMP_MAX_AGE_MS - 1, -86_400_000, RECEIPT_TIMESTAMP_MAX_AHEAD_MS + 1]) {
      const r = at(offsetMs);
      expect(r.timestamp, `${offsetMs}`).toBe(String(NOW));
      expect(text(r.headers)['received-at'], `${offsetMs}`).toBe(String(NOW + offsetMs));
      expect(r.receivedAtMs, `${offsetMs}`).toBe(NOW + offsetMs);
    }
  });

  it('attributes a call by its writeKey when there is no source-id header', () => {
    const r = routed(plan(record('{"type":"track","userId":"u-1","messageId":"m-3","event":"Order Completed","writeKey":"wk-app-5678"}')));
    expect(r.source.id).toBe('app');
    expect(text(r.headers)['source-id']).toBe('app');
    expect(targets(r)).toEqual([NAMES.deliveries('main')]);
    // writeKey is not part of the webhook body.
    expect(r.body?.toString()).toBe(
      '{"version":1,"type":"track","userId":"u-1","messageId":"m-3","timestamp":"2026-05-01T12:00:00.000Z","event":"Order Completed"}',
    );
  });

  it('prefers the source-id header over the writeKey, and treats an empty header as absent', () => {
    const call = '{"type":"identify","userId":"u-1","writeKey":"wk-app-5678"}';
    expect(routed(plan(record(call, { headers: { 'source-id': 'web' } }))).source.id).toBe('web');
    expect(routed(plan(record(call, { headers: { 'source-id': '' } }))).source.id).toBe('app');
  });

  it('does not render a body that no destination gets, but still reports every decision', () => {
    const r = routed(plan(record('{"type":"track","userId":"u-1","event":"Debug Ping"}', { headers: { 'source-id': 'web' } })));
    expect(r.body).toBeNull();
    expect(r.decisions.map((d) => (d.routed ? 'routed' : d.reason))).toEqual(['track_filter', 'track_filter', 'disabled']);
  });

  it('renders alias bodies with the spaced identity fields', () => {
    const r = routed(plan(record('{"type":"alias","previousId":"anon-7","userId":"u-1","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z"}', { headers: { 'source-id': 'web' } })));
    expect(r.body?.toString()).toBe(
      '{"version":1,"type":"alias","messageId":"m-2","timestamp":"2026-05-01T12:00:00.000Z","Previous ID":"anon-7","User ID":"u-1"}',
    );
  });
});

describe('planCall: what goes to calls.invalid, with an error a person can act on', () => {
  const withSource = { headers: { 'source-id': 'web' } };
  const cases: [string, string | Buffer | null, { headers?: Record<string, string> }, string, string][] = [
    ['malformed JSON', '{"type":"track",', withSource, 'malformed_json', 'call is not valid JSON ('],
    ['not an object', '[1,2]', withSource, 'not_object', 'call is an array, not a JSON object'],
    ['unknown type', '{"type":"trak","userId":"u"}', withSource, 'unknown_type', 'unknown call type "trak": expected one of identify, track, page, screen, group, alias'],
    ['no userId or anonymousId', '{"type":"identify","traits":{}}', withSource, 'missing_identity', 'identify call has neither userId nor anonymousId: set one of them'],
    ['track without event', '{"type":"track","userId":"u"}', withSource, 'missing_event', 'track call without "event": set event to the event name'],
    ['unparseable timestamp', '{"type":"track","userId":"u","event":"e","timestamp":"yesterday"}', withSource, 'bad_timestamp', 'track call field "timestamp" is not an ISO 8601 date-time: got "yesterday"'],
    ['a null value (tombstone)', null, withSource, 'malformed_json', 'call is empty: send the call as one JSON object'],
    ['over 32 KB', `{"type":"track","userId":"u","event":"e","properties":{"p":"${'x'.repeat(33_000)}"}}`, withSource, 'too_large', 'over the 32768-byte limit'],
    ['unknown source id', '{"type":"track","userId":"u","event":"e"}', { headers: { 'source-id': 'x' } }, 'unknown_source', 'unknown source "x": no source has this id (from the Kafka header "source-id"); fix the producer\'s header or add the source to the config (known source ids: "web", "app", "bare")'],
    ['unknown write key', '{"type":"track","userId":"u","event":"e","writeKey":"wk-nobody"}', {}, 'unknown_source', 'unknown write key: no source has the call\'s "writeKey"'],
    ['no source at all', '{"type":"track","userId":"u","event":"e"}', {}, 'missing_source', 'call has no source: set the Kafka header "source-id" to a source id, or the call\'s "writeKey" to a source\'s write key'],
  ];
  it.each(cases)('%s', (_name, value, options, reason, error) => {
    const outcome = plan(record(value, options));
    expect(outcome.kind).toBe('invalid');
    if (outcome.kind !== 'invalid') return;
    expect(outcome.reason).toBe(reason);
    expect(outcome.error).toContain(error);
  });

  it('never repeats an unknown write key (it may be a secret)', () => {
    const outcome = plan(record('{"type":"track","userId":"u","event":"e","writeKey":"wk-secret-of-prod"}'));
    expect(outcome.kind === 'invalid' && outcome.error).not.toContain('wk-secret-of-prod');
  });

  it('checks the call before its source', () => {
    const outcome = plan(record('{"type":"track","userId":"u"}', { headers: { 'source-id': 'x' } }));
    expect(outcome.kind === 'invalid' && outcome.reason).toBe('missing_event');
  });
});

describe('planCall: a Kafka destination', () => {
  const withLake = baseTable({
    sources: [{ id: 'web', destinations: ['main', 'lake'] }],
    destinations: [
      { id: 'main', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/main' }] } },
      { id: 'lake', type: 'kafka', settings: { topic: 'analytics.events' } },
    ],
  });
  const planned = (value: string) => routed(planCall(record(value, { headers: { 'source-id': 'web' } }), withLake, () => NOW));

  it('is addressed as Kafka in integrations, and the delivery records carry the call type', () => {
    const r = planned('{"type":"identify","userId":"u-1","messageId":"m-1","integrations":{"Webhooks":false}}');
    expect(targets(r)).toEqual([NAMES.deliveries('lake')]);
    expect(text(r.headers).type).toBe('identify');
    const off = planned('{"type":"track","event":"E","userId":"u-1","messageId":"m-2","integrations":{"Kafka":false}}');
    expect(targets(off)).toEqual([NAMES.deliveries('main')]);
    // Only calls routed to a Kafka destination carry it.
    expect(text(off.headers).type).toBeUndefined();
  });
});
