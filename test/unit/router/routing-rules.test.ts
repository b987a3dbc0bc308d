import { describe, expect, it } from 'vitest';
import { decideRoutes, integrationsAllow, trackFilterAllows } from '../../../src/router/routing-rules.js';
import { baseTable } from './fixtures.js';

describe('integrationsAllow (docs/configuration.md#routing, rule 2, case-sensitive, catalog name "Webhooks")', () => {
  const cases: [string, Record<string, unknown> | undefined, boolean][] = [
    ['no integrations object', undefined, true],
    ['empty object', {}, true],
    ['All true', { All: true }, true],
    ['All false', { All: false }, false],
    ['All false, Webhooks true', { All: false, Webhooks: true }, true],
    ['All false, Webhooks options object', { All: false, Webhooks: { token: 'x' } }, true],
    ['All false, Webhooks empty object', { All: false, Webhooks: {} }, true],
    ['Webhooks false', { Webhooks: false }, false],
    ['Webhooks false, All true', { All: true, Webhooks: false }, false],
    ['lower-case webhooks false addresses nothing', { webhooks: false }, true],
    ['lower-case webhooks true does not beat All false', { All: false, webhooks: true }, false],
    ['lower-case all false is not All', { all: false }, true],
    ['other destination false', { Mixpanel: false }, true],
    ['All false, other destination true', { All: false, Mixpanel: true }, false],
    ['Webhooks null counts as absent (All false)', { All: false, Webhooks: null }, false],
    ['Webhooks string counts as absent', { Webhooks: 'no' }, true],
    ['Webhooks array is not an options object', { All: false, Webhooks: [] }, false],
    ['All "false" (a string) is not false', { All: 'false' }, true],
  ];
  it.each(cases)('%s', (_name, integrations, expected) => {
    expect(integrationsAllow(integrations, 'Webhooks')).toBe(expected);
  });

  it('does not read keys from the prototype', () => {
    const integrations = JSON.parse('{"__proto__":{"Webhooks":false}}') as Record<string, unknown>;
    expect(integrationsAllow(integrations, 'Webhooks')).toBe(true);
  });
});

describe('trackFilterAllows (docs/configuration.md#routing rule 3)', () => {
  const block = { kind: 'block' as const, events: new Set(['Debug Ping']) };
  const allow = { kind: 'allow' as const, events: new Set(['Order Completed']) };
  const cases: [string, typeof block | typeof allow | undefined, { type: 'track' | 'identify'; event?: string }, boolean][] = [
    ['no filter', undefined, { type: 'track', event: 'Debug Ping' }, true],
    ['blocked event', block, { type: 'track', event: 'Debug Ping' }, false],
    ['blocked list is case-sensitive', block, { type: 'track', event: 'debug ping' }, true],
    ['other event with a block list', block, { type: 'track', event: 'Order Completed' }, true],
    ['allowed event', allow, { type: 'track', event: 'Order Completed' }, true],
    ['event not in the allow list', allow, { type: 'track', event: 'Debug Ping' }, false],
    ['identify is never track-filtered by an allow list', allow, { type: 'identify' }, true],
  ];
  it.each(cases)('%s', (_name, filter, call, expected) => {
    expect(trackFilterAllows(filter, call)).toBe(expected);
  });
});

describe('decideRoutes', () => {
  const table = baseTable();
  const web = table.sourcesById.get('web')!;
  const app = table.sourcesById.get('app')!;
  const summary = (decisions: ReturnType<typeof decideRoutes>) =>
    decisions.map((d) => `${d.target.id}:${d.routed ? 'routed' : d.reason}`);

  it('routes to every enabled destination and names the disabled one', () => {
    expect(summary(decideRoutes({ type: 'track', event: 'Order Completed' }, web))).toEqual([
      'main:routed',
      'other:routed',
      'off:disabled',
    ]);
  });

  it('applies the rules in order: disabled, then integrations, then the track filter', () => {
    expect(summary(decideRoutes({ type: 'track', event: 'Debug Ping', integrations: { All: false } }, web))).toEqual([
      'main:integrations',
      'other:integrations',
      'off:disabled',
    ]);
    expect(summary(decideRoutes({ type: 'track', event: 'Debug Ping' }, web))).toEqual([
      'main:track_filter',
      'other:track_filter',
      'off:disabled',
    ]);
  });

  it('uses the source\'s own filter', () => {
    expect(summary(decideRoutes({ type: 'track', event: 'Debug Ping' }, app))).toEqual(['main:track_filter']);
    expect(summary(decideRoutes({ type: 'page' }, app))).toEqual(['main:routed']);
  });

  it('has nothing to decide for a source without destinations', () => {
    expect(decideRoutes({ type: 'identify' }, table.sourcesById.get('bare')!)).toEqual([]);
  });
});
