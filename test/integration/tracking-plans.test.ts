// Tracking plans end to end (docs/tracking-plans.md): calls on the real broker, the router
// and the deliverer in this process, a real receiver. One source per mode on one plan:
// observe delivers every call as sent, omit delivers them without what violated (and
// blocks an unplanned event), block delivers only the calls that follow the plan. Each
// violating call has one record on `violations`; each blocked call is in `calls.blocked`
// as received. Then `replay --blocked` after the plan is fixed: each blocked call reaches
// the receiver once, and one still violating stays blocked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLE_FACTORIES } from '../../src/cli/roles.js';
import type { Config } from '../../src/config/schema.js';
import { topicLag } from '../../src/observability/consumer-lag.js';
import type { Metrics } from '../../src/observability/metrics.js';
import { runBlockedReplay } from '../../src/cli/operator-commands.js';
import { replayBlockedCalls } from '../../src/router/replay-blocked.js';
import { recentViolations } from '../../src/trace/recent-violations.js';
import { createRouterService, routerGroupId } from '../../src/router/router-service.js';
import type { Service } from '../../src/runtime/service.js';
import { testConfig, testRoleDeps } from '../support/config.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';
import { topicNames } from '../../src/runtime/topics.js';

const T0 = '2026-05-01T12:00:00.000Z';
const MODES = ['observe', 'omit', 'block'] as const;

const ORDER_SCHEMA = { type: 'object', required: ['total'], properties: { total: { type: 'number' } }, additionalProperties: false };
const PLAN = { id: 'web-plan', events: { 'Order Completed': ORDER_SCHEMA }, unplannedEvents: 'violate' };

/** Per source (named after its mode): a call that follows the plan, one that violates it, one of an unplanned event. */
const calls = (mode: string) => ({
  good: `{"type":"track","userId":"u-${mode}","messageId":"good-${mode}","timestamp":"${T0}","event":"Order Completed","properties":{"total":9.5}}`,
  bad: `{"type":"track","userId":"u-${mode}","messageId":"bad-${mode}","timestamp":"${T0}","event":"Order Completed","properties":{"total":"9.50","coupon":"X"},"context":{"ip":"203.0.113.9"}}`,
  unplanned: `{"type":"track","userId":"u-${mode}","messageId":"unplanned-${mode}","timestamp":"${T0}","event":"Signed Up","properties":{"plan":"pro"}}`,
});
/** The webhook bodies, byte for byte, as the contract renders them. */
const bodies = (mode: string) => ({
  good: `{"version":1,"type":"track","userId":"u-${mode}","messageId":"good-${mode}","timestamp":"${T0}","event":"Order Completed","properties":{"total":9.5}}`,
  bad: `{"version":1,"type":"track","userId":"u-${mode}","messageId":"bad-${mode}","timestamp":"${T0}","event":"Order Completed","properties":{"total":"9.50","coupon":"X"},"context":{"ip":"203.0.113.9"}}`,
  badOmitted: `{"version":1,"type":"track","userId":"u-${mode}","messageId":"bad-${mode}","timestamp":"${T0}","event":"Order Completed","properties":{},"context":{"ip":"203.0.113.9"}}`,
  unplanned: `{"version":1,"type":"track","userId":"u-${mode}","messageId":"unplanned-${mode}","timestamp":"${T0}","event":"Signed Up","properties":{"plan":"pro"}}`,
});

let tk: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let config: Config;
let metrics: Metrics;
let services: Service[] = [];
let names: ReturnType<typeof topicNames>;
let shape: Record<string, unknown>;

/** The distinct bodies one destination received (delivery is at least once: receivers deduplicate on messageId). */
const received = (mode: string) => [...new Set(receiver.requests.filter((r) => r.path === `/${mode}`).map((r) => r.text))].sort();
const countOf = (mode: string, messageId: string) => receiver.requests.filter((r) => r.path === `/${mode}` && r.text.includes(`"messageId":"${messageId}"`)).length;

async function routerDrained(): Promise<void> {
  await waitFor(
    async () => {
      const ends = await tk.admin.fetchTopicOffsets(names.calls);
      const [committed] = await tk.admin.fetchOffsets({ groupId: routerGroupId(config), topics: [names.calls] });
      return topicLag(ends, committed?.partitions ?? []) === 0;
    },
    { timeoutMs: 45_000, what: 'the router to commit every call' },
  );
}

beforeAll(async () => {
  tk = await createTestKafka();
  receiver = await startReceiver();
  const prefix = randomPrefix();
  names = topicNames(prefix);
  shape = {
    kafka: { brokers: testBrokers(), clientId: randomName('plans'), topicPrefix: prefix, partitions: 2 },
    sources: MODES.map((mode) => ({ id: mode, destinations: [mode], trackingPlan: { id: 'web-plan', mode } })),
    destinations: MODES.map((mode) => ({ id: mode, type: 'webhooks', settings: { webhooks: [{ url: receiver.url(`/${mode}`) }] } })),
    trackingPlans: [PLAN],
  };
  config = testConfig(shape, 'tracking-plans.test.yaml');
  const deps = testRoleDeps(config);
  metrics = deps.metrics;
  services = [...ROLE_FACTORIES.deliverer(deps), createRouterService(deps)];
  for (const service of services) await service.start();
  await waitFor(() => services.every((s) => s.health().ready), { timeoutMs: 60_000, what: 'the router and the deliverer to be ready' });

  await tk.produce(
    names.calls,
    MODES.flatMap((mode) => Object.values(calls(mode)).map((value) => ({ key: `u-${mode}`, value, headers: { 'source-id': mode } }))),
  );
  await waitFor(() => received('observe').length === 3 && received('omit').length === 2 && received('block').length === 1, {
    timeoutMs: 90_000,
    intervalMs: 200,
    what: 'each destination to receive what its mode lets through',
  });
  await routerDrained();
}, 180_000);

afterAll(async () => {
  for (const service of [...services].reverse()) await service.stop();
  await receiver?.close();
  await tk?.close();
});

describe('tracking plans through the router and the deliverer', () => {
  it('observe: every call delivered exactly as sent', () => {
    const b = bodies('observe');
    expect(received('observe')).toEqual([b.bad, b.good, b.unplanned].sort());
  });

  it('omit: the violating properties taken out, the rest delivered; the unplanned event not delivered', () => {
    const b = bodies('omit');
    expect(received('omit')).toEqual([b.badOmitted, b.good].sort());
  });

  it('block: only the call that follows the plan delivered', () => {
    expect(received('block')).toEqual([bodies('block').good]);
  });

  it('one record on violations per violating call, with its violations', async () => {
    const records = await tk.readAll(names.violations, { atLeast: 6 });
    const byId = new Map(records.map((r) => [JSON.parse(r.text).messageId as string, r]));
    expect([...byId.keys()].sort()).toEqual(['bad-block', 'bad-observe', 'bad-omit', 'unplanned-block', 'unplanned-observe', 'unplanned-omit']);
    // receivedAt is when the broker took the call (its record time), written as ISO 8601.
    const receivedAt = (JSON.parse(byId.get('bad-omit')!.text) as { receivedAt: string }).receivedAt;
    expect(receivedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(byId.get('bad-omit')?.text).toBe(
      `{"messageId":"bad-omit","source":"omit","type":"track","event":"Order Completed","plan":"web-plan","mode":"omit","action":"omitted","receivedAt":"${receivedAt}","violations":[` +
        '{"type":"additional_property","pointer":"/properties/coupon","expected":"absent","actual":"string"},' +
        '{"type":"type_mismatch","pointer":"/properties/total","expected":"number","actual":"string"}]}',
    );
    expect(byId.get('bad-omit')?.key).toBe('u-omit');
    expect(JSON.parse(byId.get('unplanned-observe')!.text)).toMatchObject({ action: 'delivered', event: 'Signed Up', violations: [{ type: 'unplanned_event', pointer: '/event' }] });
    expect(JSON.parse(byId.get('unplanned-omit')!.text)).toMatchObject({ action: 'blocked' });
    expect(JSON.parse(byId.get('bad-block')!.text)).toMatchObject({ action: 'blocked', mode: 'block' });
  });

  it('calls.blocked holds each blocked call as received, with its source, message id and violations', async () => {
    const records = await tk.readAll(names.callsBlocked, { atLeast: 3 });
    expect(records.map((r) => r.headers['message-id']).sort()).toEqual(['bad-block', 'unplanned-block', 'unplanned-omit']);
    const bad = records.find((r) => r.headers['message-id'] === 'bad-block')!;
    expect(bad.text).toBe(calls('block').bad);
    expect(bad.key).toBe('u-block');
    expect(bad.headers['source-id']).toBe('block');
    expect(JSON.parse(bad.headers.violations!)).toEqual([
      { type: 'additional_property', pointer: '/properties/coupon', expected: 'absent', actual: 'string' },
      { type: 'type_mismatch', pointer: '/properties/total', expected: 'number', actual: 'string' },
    ]);
  });

  it('counts switchyard_tracking_plan_violations_total by source, event and type, and tracking_plan as a filter reason', async () => {
    const values = async (metric: Metrics['trackingPlanViolations'] | Metrics['eventsFiltered']) =>
      Object.fromEntries((await metric.get()).values.map((v) => [Object.values(v.labels).join('/'), v.value]));
    const expected: Record<string, number> = {};
    for (const mode of MODES) {
      expected[`${mode}/Order Completed/additional_property`] = 1;
      expected[`${mode}/Order Completed/type_mismatch`] = 1;
      expected[`${mode}/(unplanned)/unplanned_event`] = 1;
    }
    expect(await values(metrics.trackingPlanViolations)).toEqual(expected);
    expect(await values(metrics.eventsFiltered)).toEqual({ 'omit/omit/tracking_plan': 1, 'block/block/tracking_plan': 2 });
  });
});

describe('the violations of the last hour (GET /v1/violations, the console view)', () => {
  it('counts per source and event by type and action, with the newest as examples; filtered by source', async () => {
    const deps = testRoleDeps(config);
    const all = await recentViolations(deps, { sinceMs: Date.now() - 3_600_000 });
    expect(all).toMatchObject({ complete: true, read: 6, unreadable: 0 });
    const group = (source: string, event: string) => all.groups.find((g) => g.source === source && g.event === event);
    expect(group('omit', 'Order Completed')).toEqual({ source: 'omit', event: 'Order Completed', calls: 1, byType: { additional_property: 1, type_mismatch: 1 }, byAction: { omitted: 1 } });
    expect(group('block', 'Signed Up')).toEqual({ source: 'block', event: 'Signed Up', calls: 1, byType: { unplanned_event: 1 }, byAction: { blocked: 1 } });
    expect(all.groups).toHaveLength(6);
    expect(all.recent).toHaveLength(6);
    const observe = await recentViolations(deps, { sinceMs: Date.now() - 3_600_000, source: 'observe' });
    expect(observe.groups.map((g) => `${g.event}: ${g.byAction.delivered}`).sort()).toEqual(['Order Completed: 1', 'Signed Up: 1']);
    expect(await recentViolations(deps, { sinceMs: Date.now() - 3_600_000, untilMs: Date.now() - 3_000_000 })).toMatchObject({ read: 0, groups: [] });
  });
});

describe('replay --blocked after the plan is fixed', () => {
  it('routes each blocked call once it passes; one still violating stays blocked until it does', async () => {
    const deps = (plan: Record<string, unknown>) => testRoleDeps(testConfig({ ...shape, trackingPlans: [plan] }, 'fixed.yaml'));
    // First fix: the event is planned now, the total still must be a number.
    const partly = deps({ ...PLAN, events: { ...PLAN.events, 'Signed Up': true } });
    // The command's dry run: what each call would do now, and the counts; nothing written.
    const lines: string[] = [];
    const out = { write: (text: string) => void lines.push(text), closed: () => false };
    expect(await runBlockedReplay(partly, { kind: 'replay-blocked', config: undefined, source: 'block', range: { sinceMs: Date.now() - 3_600_000 }, dryRun: true }, { stdout: out, stderr: out })).toBe(0);
    expect(lines.slice(0, -1).map((l) => l.replace(/^\S+ {2}/, '')).sort()).toEqual(['bad-block  still blocked\n', 'unplanned-block  would route to block\n']);
    expect(lines.at(-1)).toMatch(/^dry run: 1 blocked call\(s\) of source "block" received since \S+ would be routed, 1 still blocked, 0 invalid; nothing written\n$/);
    expect(await replayBlockedCalls(partly, { sourceId: 'block' })).toEqual({ routed: 1, blocked: 1, invalid: 0 });
    // A second run of the same replay moves nothing more: the still blocked call was written again, after its end.
    const b = bodies('block');
    await waitFor(() => countOf('block', 'unplanned-block') >= 1, { timeoutMs: 45_000, what: 'the replayed unplanned call to reach the receiver' });
    expect(received('block')).toEqual([b.good, b.unplanned].sort());

    // The plan fixed: the order's total may be a string and extra properties pass.
    const fixed = deps({ ...PLAN, events: { 'Order Completed': { type: 'object', properties: { total: { type: ['number', 'string'] } } }, 'Signed Up': true } });
    expect(await replayBlockedCalls(fixed, { sourceId: 'block' })).toEqual({ routed: 1, blocked: 0, invalid: 0 });
    await waitFor(() => countOf('block', 'bad-block') >= 1, { timeoutMs: 45_000, what: 'the replayed order to reach the receiver' });
    expect(await replayBlockedCalls(fixed, { sourceId: 'block' })).toEqual({ routed: 0, blocked: 0, invalid: 0 });
    // The omit source's blocked call was not this replay's.
    expect(received('block')).toEqual([b.bad, b.good, b.unplanned].sort());
    expect(countOf('block', 'bad-block')).toBe(1);
    expect(countOf('block', 'unplanned-block')).toBe(1);
    expect(received('omit')).toEqual([bodies('omit').badOmitted, bodies('omit').good].sort());
  }, 120_000);
});
