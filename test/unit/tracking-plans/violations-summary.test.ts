// The console's violations view, counted from `violations` records (docs/tracking-plans.md#the-console-view).
import { describe, expect, it } from 'vitest';
import { summarizeViolations } from '../../../src/tracking-plans/index.js';

const record = (messageId: string, source: string, event: string, at: string, types: string[], action = 'delivered') =>
  JSON.stringify({
    messageId,
    source,
    type: 'track',
    event,
    plan: 'p',
    mode: 'observe',
    action,
    receivedAt: at,
    violations: types.map((type) => ({ type, pointer: '/properties/x', expected: 'number', actual: 'string' })),
  });

describe('summarizeViolations', () => {
  it('counts per source and event by type and action, most violating first; keeps the newest as examples; skips what is not a record', () => {
    const summary = summarizeViolations(
      [
        record('m-1', 'web', 'Order Completed', '2026-05-01T12:00:01.000Z', ['type_mismatch', 'additional_property']),
        record('m-2', 'app', 'Signed Up', '2026-05-01T12:00:03.000Z', ['unplanned_event'], 'blocked'),
        Buffer.from(record('m-3', 'web', 'Order Completed', '2026-05-01T12:00:02.000Z', ['type_mismatch'], 'omitted')),
        'not json',
        null,
        '{"messageId":"m-4"}',
      ],
      2,
    );
    expect(summary.read).toBe(6);
    expect(summary.unreadable).toBe(3);
    expect(summary.groups).toEqual([
      { source: 'web', event: 'Order Completed', calls: 2, byType: { type_mismatch: 2, additional_property: 1 }, byAction: { delivered: 1, omitted: 1 } },
      { source: 'app', event: 'Signed Up', calls: 1, byType: { unplanned_event: 1 }, byAction: { blocked: 1 } },
    ]);
    expect(summary.recent.map((r) => r.messageId)).toEqual(['m-2', 'm-3']);
  });

  it('an empty window', () => {
    expect(summarizeViolations([], 20)).toEqual({ read: 0, unreadable: 0, groups: [], recent: [] });
  });
});
