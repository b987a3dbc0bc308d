import { describe, expect, it } from 'vitest';
import { createAudienceHook } from '../../../src/audiences/router-hook.js';
import { SeenPairCache } from '../../../src/audiences/seen-cache.js';
import { planCall } from '../../../src/router/plan-call.js';
import type { RoutedCall } from '../../../src/router/plan-call.js';
import { compileRoutingTable } from '../../../src/router/routing-table.js';
import { BASE_CONFIG, NAMES, PREFIX, loadConfig, record } from '../router/fixtures.js';

// web feeds an audience; app does not.
const config = loadConfig({
  ...BASE_CONFIG,
  audiences: [{ name: 'Pro Users', sources: ['web'], destinations: ['main'], rule: { trait: 'plan', equals: 'pro' } }],
});
const table = compileRoutingTable(config, NAMES);

function routed(value: string, source: string, key = 'anon-key'): RoutedCall {
  const outcome = planCall(record(value, { headers: { 'source-id': source }, key }), table);
  if (outcome.kind !== 'routed') throw new Error(outcome.error);
  return outcome;
}

function hookWithCache(): { hook: ReturnType<typeof createAudienceHook>; cache: SeenPairCache } {
  const cache = new SeenPairCache(100);
  cache.setFollowing(true);
  return { hook: createAudienceHook(PREFIX, () => config, cache), cache };
}

describe('the audience hook', () => {
  const page = (ids: string) => `{"type":"page",${ids}}`;

  it('writes the call record for a source that feeds an audience (it tells the processor the source saw the user)', () => {
    const { hook } = hookWithCache();
    const out = hook.event(routed(page('"userId":"u-1"'), 'web'));
    expect(out?.topic).toBe('unit.audience.events');
    expect(out?.pair).toBeUndefined();
    expect(JSON.parse(out!.message.value.toString())).toMatchObject({ kind: 'call', userId: 'u-1', sourceId: 'web' });
  });

  it('writes a seen record, keyed by the userId whatever the call was keyed by, once per new pair', () => {
    const { hook } = hookWithCache();
    const first = hook.event(routed(page('"userId":"u-1","anonymousId":"a-1"'), 'app', 'a-1'));
    expect(first?.message.key.toString()).toBe('u-1');
    expect(first?.message.value.toString()).toBe('{"kind":"seen","userId":"u-1","sourceId":"app"}');
    expect(first?.pair).toMatchObject({ userId: 'u-1', sourceId: 'app' });
    // Pending: not handed out again until acknowledged or abandoned.
    expect(hook.event(routed(page('"userId":"u-1"'), 'app'))).toBeUndefined();
    hook.acknowledged([first!.pair!]);
    expect(hook.event(routed(page('"userId":"u-1"'), 'app'))).toBeUndefined();
    expect(hook.event(routed(page('"userId":"u-2"'), 'app'))?.pair).toMatchObject({ userId: 'u-2' });
  });

  it('writes nothing for a call with only an anonymousId (deletions name users by userId)', () => {
    const { hook } = hookWithCache();
    expect(hook.event(routed(page('"anonymousId":"a-1"'), 'app'))).toBeUndefined();
  });

  it('hands a deletion request over to the processor, keyed by userId', () => {
    const { hook } = hookWithCache();
    const out = hook.deletion('u-1', Date.UTC(2026, 4, 1));
    expect(out.topic).toBe('unit.audience.events');
    expect(out.message.key.toString()).toBe('u-1');
    expect(out.message.value.toString()).toBe(`{"kind":"deletion","userId":"u-1","requestedAtMs":${Date.UTC(2026, 4, 1)}}`);
  });
});
