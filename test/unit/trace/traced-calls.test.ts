import { describe, expect, it } from 'vitest';
import type { ScannedRecord } from '../../../src/kafka/index.js';
import { recordMessageId } from '../../../src/router/record-ids.js';
import { tracedCalls } from '../../../src/trace/traced-calls.js';
import { baseTable, NAMES } from '../router/fixtures.js';

const T0 = Date.UTC(2026, 4, 1, 12);
const WINDOW = { sinceMs: T0 - 3_600_000, untilMs: T0 + 3_600_000 };

function scanned(value: string, options: { offset?: bigint; atMs?: number; headers?: Record<string, string> } = {}): ScannedRecord {
  const headers = Object.fromEntries(Object.entries(options.headers ?? { 'source-id': 'web' }).map(([k, v]) => [k, Buffer.from(v)]));
  return { partition: 2, offset: options.offset ?? 0n, key: Buffer.from('u-1'), value: Buffer.from(value), headers, timestamp: String(options.atMs ?? T0) };
}

const track = (messageId: string, event: string, extra = '') => `{"type":"track","userId":"u-1","messageId":"${messageId}","event":"${event}","properties":{}${extra}}`;

function trace(calls: ScannedRecord[], invalid: ScannedRecord[] = [], window = WINDOW, table = baseTable()) {
  return tracedCalls({ calls: { topic: NAMES.calls, records: calls }, invalid: { topic: NAMES.callsInvalid, records: invalid } }, table, window, T0);
}

const shapedHook = (name: string, settings: Record<string, unknown>) => ({ id: name, type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${name}` }], ...settings } });

describe('tracedCalls', () => {
  it('plans each call as the router does: one verdict per connected destination, with the rule that filters it', async () => {
    const calls = await trace([
      scanned(track('m-1', 'Order Completed')),
      scanned(track('m-2', 'Order Completed', ',"integrations":{"All":false,"Webhooks":true}'), { offset: 1n, atMs: T0 + 1 }),
      scanned(track('m-3', 'Order Completed', ',"integrations":{"Webhooks":false}'), { offset: 2n, atMs: T0 + 2 }),
      scanned(track('m-4', 'Debug Ping'), { offset: 3n, atMs: T0 + 3 }),
    ]);
    const off = { id: 'off', verdict: { routed: false, reason: 'disabled' } };
    expect(calls).toEqual([
      { messageId: 'm-1', type: 'track', event: 'Order Completed', source: 'web', receivedAtMs: T0, routes: [{ id: 'main', verdict: { routed: true } }, { id: 'other', verdict: { routed: true } }, off] },
      { messageId: 'm-2', type: 'track', event: 'Order Completed', source: 'web', receivedAtMs: T0 + 1, routes: [{ id: 'main', verdict: { routed: true } }, { id: 'other', verdict: { routed: true } }, off] },
      {
        messageId: 'm-3',
        type: 'track',
        event: 'Order Completed',
        source: 'web',
        receivedAtMs: T0 + 2,
        routes: [{ id: 'main', verdict: { routed: false, reason: 'integrations' } }, { id: 'other', verdict: { routed: false, reason: 'integrations' } }, off],
      },
      {
        messageId: 'm-4',
        type: 'track',
        event: 'Debug Ping',
        source: 'web',
        receivedAtMs: T0 + 3,
        routes: [{ id: 'main', verdict: { routed: false, reason: 'track_filter' } }, { id: 'other', verdict: { routed: false, reason: 'track_filter' } }, off],
      },
    ]);
  });

  it("gives the destinations' shaping reasons as the router does: destination_filter, sample, and transform_error with its error", async () => {
    const table = baseTable({
      sources: [{ id: 'web', destinations: ['big', 'none', 'broken', 'kept'] }],
      destinations: [
        shapedHook('big', { filter: 'properties.total > 100' }),
        shapedHook('none', { sample: 0 }),
        shapedHook('broken', { transform: '$error("no")' }),
        shapedHook('kept', { filter: 'properties.total > 10', transform: '{"t": properties.total}' }),
      ],
    });
    const [call] = await trace([scanned(track('m-9', 'Order Completed', ',"properties":{"total":42}').replace(',"properties":{}', ''))], [], WINDOW, table);
    expect(call!.routes).toEqual([
      { id: 'big', verdict: { routed: false, reason: 'destination_filter' } },
      { id: 'none', verdict: { routed: false, reason: 'sample' } },
      { id: 'broken', verdict: { routed: false, reason: 'transform_error', error: expect.stringContaining('no') } },
      { id: 'kept', verdict: { routed: true } },
    ]);
  });

  it("lists the destinations the call's source does not feed after its own, as not_connected", async () => {
    const [call] = await trace([scanned(track('m-7', 'Order Completed'), { headers: { 'source-id': 'app' } })]);
    expect(call!.routes).toEqual([
      { id: 'main', verdict: { routed: true } },
      { id: 'other', verdict: { routed: false, reason: 'not_connected' } },
      { id: 'off', verdict: { routed: false, reason: 'not_connected' } },
    ]);
  });

  it('gives a call without messageId the id the router derives; no event for other types', async () => {
    const [call] = await trace([scanned('{"type":"page","userId":"u-1","name":"Home"}', { offset: 7n })]);
    expect(call).toMatchObject({ messageId: recordMessageId(NAMES.calls, 2, '7', String(T0)), type: 'page', source: 'web' });
    expect(call).not.toHaveProperty('event');
  });

  it('keeps the window: since inclusive, until exclusive', async () => {
    const calls = await trace(
      [scanned(track('early', 'E'), { atMs: T0 - 1 }), scanned(track('first', 'E'), { atMs: T0 }), scanned(track('last', 'E'), { atMs: T0 + 9 }), scanned(track('late', 'E'), { atMs: T0 + 10 })],
      [],
      { sinceMs: T0, untilMs: T0 + 10 },
    );
    expect(calls.map((c) => c.messageId)).toEqual(['first', 'last']);
  });

  it('shows a call the router sent to calls.invalid once, with that error; a gateway-refused call as a call of its own; in time order', async () => {
    const unknownSource = scanned(track('m-5', 'Order Completed'), { offset: 5n, atMs: T0 + 5, headers: { 'source-id': 'gone' } });
    const routerCopy = scanned(track('m-5', 'Order Completed'), { atMs: T0 + 5, headers: { 'source-id': 'gone', error: 'unknown source "gone": …' } });
    const refused = scanned('{"type":"track","userId":"u-1","messageId":"m-0","properties":{}}', { offset: 1n, atMs: T0 - 5, headers: { 'source-id': 'web', error: 'missing_event: track call without "event"' } });
    const calls = await trace([unknownSource], [routerCopy, refused]);
    expect(calls).toEqual([
      { messageId: 'm-0', type: 'track', source: 'web', receivedAtMs: T0 - 5, invalid: 'missing_event: track call without "event"', routes: [] },
      { messageId: 'm-5', type: 'track', event: 'Order Completed', source: 'gone', receivedAtMs: T0 + 5, invalid: 'unknown source "gone": …', routes: [] },
    ]);
  });

  it('says why the current config cannot route a call that has no calls.invalid copy yet', async () => {
    const [call] = await trace([scanned(track('m-6', 'E'), { headers: { 'source-id': 'gone' } })]);
    expect(call).toMatchObject({ messageId: 'm-6', source: 'gone', routes: [], invalid: expect.stringContaining('unknown source "gone"') });
  });

  it('reads what it can of a record that is not a call; the source from a write key, never the key itself', async () => {
    const [notJson, byWriteKey] = await trace([], [
      scanned('not json', { headers: { error: 'malformed_json: …' } }),
      scanned('{"type":"identify","userId":"u-1","writeKey":"wk-app-5678","messageId":7}', { atMs: T0 + 1, headers: { error: 'x' } }),
    ]);
    expect(notJson).toEqual({ messageId: null, type: null, source: null, receivedAtMs: T0, invalid: 'malformed_json: …', routes: [] });
    expect(byWriteKey).toEqual({ messageId: null, type: 'identify', source: 'app', receivedAtMs: T0 + 1, invalid: 'x', routes: [] });
  });
});

describe('tracedCalls with a tracking plan', () => {
  it('a call its source\'s plan blocks is filtered by tracking_plan, with its violations; one that follows the plan is routed', async () => {
    const table = baseTable({
      sources: [{ id: 'web', destinations: ['main'], trackingPlan: { id: 'web-plan', mode: 'block' } }],
      trackingPlans: [{ id: 'web-plan', events: { 'Order Completed': { type: 'object', required: ['total'] } } }],
    });
    const calls = await trace([scanned(track('m-1', 'Order Completed')), scanned(track('m-2', 'Order Completed', ',"context":{}').replace('"properties":{}', '"properties":{"total":1}'), { offset: 1n, atMs: T0 + 1 })], [], WINDOW, table);
    const others = ['other', 'off'].map((id) => ({ id, verdict: { routed: false, reason: 'not_connected' } }));
    expect(calls).toEqual([
      {
        messageId: 'm-1',
        type: 'track',
        event: 'Order Completed',
        source: 'web',
        receivedAtMs: T0,
        violations: [{ type: 'required_missing', pointer: '/properties/total', expected: 'present', actual: 'missing' }],
        routes: [{ id: 'main', verdict: { routed: false, reason: 'tracking_plan' } }, ...others],
      },
      { messageId: 'm-2', type: 'track', event: 'Order Completed', source: 'web', receivedAtMs: T0 + 1, routes: [{ id: 'main', verdict: { routed: true } }, ...others] },
    ]);
  });
});
