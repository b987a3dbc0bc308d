import { describe, expect, it } from 'vitest';
import { planDeletion } from '../../../src/router/plan-deletion.js';
import type { DeletionOutcome, PlannedDeletion } from '../../../src/router/plan-deletion.js';
import { recordMessageId } from '../../../src/router/record-ids.js';
import { BASE_CONFIG, baseTable, NAMES, record } from './fixtures.js';

const hook = (name: string) => ({ type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${name}` }] } });
// web → main, other, off(disabled); app → main; bare → nothing; shop → other, extra.
const table = baseTable({
  sources: [...BASE_CONFIG.sources, { id: 'shop', destinations: ['other', 'extra'] }],
  destinations: [...BASE_CONFIG.destinations, { id: 'extra', ...hook('extra') }],
});
const plan = (value: string | null, options: Parameters<typeof record>[1] = {}) =>
  planDeletion(record(value, { topic: NAMES.deletions, ...options }), table, () => Date.UTC(2030, 0, 1));

function planned(outcome: DeletionOutcome): PlannedDeletion {
  if (outcome.kind !== 'deletion') throw new Error(`expected a deletion, got ${outcome.error}`);
  return outcome;
}
const where = (d: PlannedDeletion) => d.targets.map((t) => `${t.target.topic}<-${t.sourceId}`);

describe('planDeletion', () => {
  it('sends one delete per enabled destination of every source when sourceIds is absent', () => {
    const d = planned(plan('{"userId":"u-1","requestedAt":"2026-05-01T12:00:00.000Z"}'));
    expect(d.body.toString()).toBe('{"type":"delete","userId":"u-1","timestamp":"2026-05-01T12:00:00.000Z"}');
    expect(d.key.toString()).toBe('u-1');
    expect(d.sourceIds).toEqual(['web', 'app', 'bare', 'shop']);
    // Not named: a router with the audience hook hands it to the processor instead (seen sources).
    expect([d.named, d.timestampMs]).toEqual([false, Date.UTC(2026, 4, 1, 12)]);
    // main is shared by web and app, other by web and shop: one delete each; off is disabled.
    expect(where(d)).toEqual([
      `${NAMES.deliveries('main')}<-web`,
      `${NAMES.deliveries('other')}<-web`,
      `${NAMES.deliveries('extra')}<-shop`,
    ]);
    const headers = Object.fromEntries(Object.entries(d.targets[2]!.headers).map(([k, v]) => [k, String(v)]));
    expect(headers).toEqual({
      'source-id': 'shop',
      'message-id': recordMessageId(NAMES.deletions, 3, '41', String(Date.UTC(2026, 4, 1, 12))),
      attempt: '0',
      'first-attempt-at': '',
      'received-at': String(Date.UTC(2026, 4, 1, 12)),
    });
  });

  it('limits the deletes to the given sources', () => {
    const d = planned(plan('{"userId":"u-1","sourceIds":["app","shop","app"]}'));
    expect(d.sourceIds).toEqual(['app', 'shop']);
    expect(d.named).toBe(true);
    expect(where(d)).toEqual([
      `${NAMES.deliveries('main')}<-app`,
      `${NAMES.deliveries('other')}<-shop`,
      `${NAMES.deliveries('extra')}<-shop`,
    ]);
  });

  it('uses the record timestamp when requestedAt is absent, and keeps a traceparent', () => {
    const d = planned(plan('{"userId":"u-1","sourceIds":["app"]}', { timestamp: String(Date.UTC(2026, 6, 4, 1, 2, 3, 4)), headers: { traceparent: 'tp' } }));
    expect(d.body.toString()).toBe('{"type":"delete","userId":"u-1","timestamp":"2026-07-04T01:02:03.004Z"}');
    expect(d.timestampMs).toBe(Date.UTC(2026, 6, 4, 1, 2, 3, 4));
    expect(String(d.targets[0]!.headers.traceparent)).toBe('tp');
  });

  it('sends nothing for a source whose destinations are all disabled or absent', () => {
    expect(where(planned(plan('{"userId":"u-1","sourceIds":["bare"]}')))).toEqual([]);
  });

  const bad: [string, string | null, string][] = [
    ['empty record', null, 'bad deletion request: the record is empty'],
    ['bad JSON', '{"userId":', 'bad deletion request: not valid JSON ('],
    ['not an object', '"u-1"', 'bad deletion request: not a JSON object'],
    ['no userId', '{"sourceIds":["web"]}', 'bad deletion request: "userId" must be a non-empty string'],
    ['numeric userId', '{"userId":5}', 'bad deletion request: "userId" must be a non-empty string'],
    ['sourceIds not a list', '{"userId":"u","sourceIds":"web"}', 'bad deletion request: "sourceIds" must be a list of source ids'],
    ['empty sourceIds', '{"userId":"u","sourceIds":[]}', 'bad deletion request: "sourceIds" is empty; list at least one source id, or leave it out to cover every source'],
    ['unknown source', '{"userId":"u","sourceIds":["web","nope"]}', 'bad deletion request: unknown source "nope": no source has this id, so nothing was sent for this request; fix "sourceIds" and produce it again'],
    ['bad requestedAt', '{"userId":"u","requestedAt":"soon"}', 'bad deletion request: "requestedAt" is not an ISO 8601 date-time'],
  ];
  it.each(bad)('refuses %s with a specific error', (_name, value, error) => {
    const outcome = plan(value);
    expect(outcome.kind).toBe('invalid');
    if (outcome.kind !== 'invalid') return;
    expect(outcome.reason).toBe('bad_deletion_request');
    expect(outcome.error.startsWith(error)).toBe(true);
    expect(outcome.error).toContain('send {"userId":"…"');
  });
});
