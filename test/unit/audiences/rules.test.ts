import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import type { AudienceRule, Config } from '../../../src/config/schema.js';
import { compileAudiences, evaluateRule, EXACT_KEEP_LIMIT } from '../../../src/audiences/rules.js';
import type { RuleInputs } from '../../../src/audiences/rules.js';
import { stringify } from 'yaml';

const NOW = Date.UTC(2026, 4, 1, 12);
const DAY = 86_400_000;

/** Inputs from a trait map and, per event, a list of occurrence times. */
function inputs(traits: Record<string, unknown>, events: Record<string, number[]> = {}): RuleInputs {
  return {
    trait: (name) => (Object.hasOwn(traits, name) ? traits[name] : undefined),
    count: (event, withinMs, nowMs) => (events[event] ?? []).filter((t) => withinMs === undefined || t >= nowMs - withinMs).length,
  };
}

describe('evaluateRule: trait conditions', () => {
  const cases: Array<[string, AudienceRule, Record<string, unknown>, boolean]> = [
    ['equals string', { trait: 'plan', equals: 'pro' }, { plan: 'pro' }, true],
    ['equals is case-sensitive', { trait: 'plan', equals: 'pro' }, { plan: 'Pro' }, false],
    ['equals is strict: "3" is not 3', { trait: 'n', equals: 3 }, { n: '3' }, false],
    ['equals number', { trait: 'n', equals: 3 }, { n: 3 }, true],
    ['equals boolean', { trait: 'vip', equals: true }, { vip: true }, true],
    ['equals on a missing trait', { trait: 'plan', equals: 'pro' }, {}, false],
    ['in: listed', { trait: 'plan', in: ['pro', 'enterprise'] }, { plan: 'enterprise' }, true],
    ['in: not listed', { trait: 'plan', in: ['pro', 'enterprise'] }, { plan: 'free' }, false],
    ['in: missing', { trait: 'plan', in: ['pro'] }, {}, false],
    ['in: an object value never matches', { trait: 'plan', in: ['pro'] }, { plan: { name: 'pro' } }, false],
    ['exists: set', { trait: 'email', exists: true }, { email: 'a@b.c' }, true],
    ['exists: empty string counts as set', { trait: 'email', exists: true }, { email: '' }, true],
    ['exists: null is not set', { trait: 'email', exists: true }, { email: null }, false],
    ['exists: missing', { trait: 'email', exists: true }, {}, false],
    ['exists false: missing', { trait: 'email', exists: false }, {}, true],
    ['exists false: null', { trait: 'email', exists: false }, { email: null }, true],
    ['exists false: set', { trait: 'email', exists: false }, { email: 'x' }, false],
    ['gt: above', { trait: 'age', gt: 18 }, { age: 19 }, true],
    ['gt: equal', { trait: 'age', gt: 18 }, { age: 18 }, false],
    ['gte: equal', { trait: 'age', gte: 18 }, { age: 18 }, true],
    ['lt: below', { trait: 'age', lt: 18 }, { age: 17.5 }, true],
    ['lt: equal', { trait: 'age', lt: 18 }, { age: 18 }, false],
    ['lte: equal', { trait: 'age', lte: 18 }, { age: 18 }, true],
    ['gt: a numeric string does not compare', { trait: 'age', gt: 18 }, { age: '30' }, false],
    ['lt: missing does not compare', { trait: 'age', lt: 18 }, {}, false],
    ['lt: null does not compare', { trait: 'age', lt: 18 }, { age: null }, false],
    ['a trait named __proto__', { trait: '__proto__', equals: 'x' }, JSON.parse('{"__proto__":"x"}') as Record<string, unknown>, true],
  ];
  it.each(cases)('%s', (_name, rule, traits, expected) => {
    expect(evaluateRule(rule, inputs(traits), NOW)).toBe(expected);
  });
});

describe('evaluateRule: event conditions (on event timestamps)', () => {
  const rule3in7d: AudienceRule = { event: 'Order Completed', atLeast: 3, withinMs: 7 * DAY };
  const cases: Array<[string, AudienceRule, number[], boolean]> = [
    ['atLeast without window: enough', { event: 'Order Completed', atLeast: 2 }, [NOW - 400 * DAY, NOW - 300 * DAY], true],
    ['atLeast without window: too few', { event: 'Order Completed', atLeast: 3 }, [NOW - DAY, NOW], false],
    ['within: all inside', rule3in7d, [NOW - DAY, NOW - 2 * DAY, NOW - 3 * DAY], true],
    ['within: one outside', rule3in7d, [NOW - DAY, NOW - 2 * DAY, NOW - 8 * DAY], false],
    ['within: exactly at the edge counts', rule3in7d, [NOW - DAY, NOW - 2 * DAY, NOW - 7 * DAY], true],
    ['within: a future timestamp counts', rule3in7d, [NOW + DAY, NOW - 2 * DAY, NOW - 3 * DAY], true],
    ['never performed', rule3in7d, [], false],
  ];
  it.each(cases)('%s', (_name, rule, times, expected) => {
    expect(evaluateRule(rule, inputs({}, { 'Order Completed': times }), NOW)).toBe(expected);
  });
});

describe('evaluateRule: all, any, not', () => {
  const pro: AudienceRule = { trait: 'plan', equals: 'pro' };
  const buyer: AudienceRule = { event: 'Order Completed', atLeast: 1 };
  const cases: Array<[string, AudienceRule, Record<string, unknown>, number[], boolean]> = [
    ['all: both', { all: [pro, buyer] }, { plan: 'pro' }, [NOW], true],
    ['all: one missing', { all: [pro, buyer] }, { plan: 'pro' }, [], false],
    ['any: one', { any: [pro, buyer] }, {}, [NOW], true],
    ['any: none', { any: [pro, buyer] }, { plan: 'free' }, [], false],
    ['not: negates', { not: pro }, { plan: 'free' }, [], true],
    ['not: of a true rule', { not: pro }, { plan: 'pro' }, [], false],
    ['nested', { all: [{ any: [pro, { trait: 'vip', equals: true }] }, { not: buyer }] }, { vip: true }, [], true],
  ];
  it.each(cases)('%s', (_name, rule, traits, times, expected) => {
    expect(evaluateRule(rule, inputs(traits, { 'Order Completed': times }), NOW)).toBe(expected);
  });
});

function config(audiences: unknown[]): Config {
  const result = parseConfigText(
    stringify({
      sources: [
        { id: 'web', destinations: ['hooks', 'off'] },
        { id: 'app', destinations: ['hooks'] },
        { id: 'server', destinations: [] },
      ],
      destinations: [
        { id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:1/hook' }] } },
        { id: 'off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: 'http://127.0.0.1:1/hook' }] } },
      ],
      audiences,
    }),
    'test.yaml',
    {},
  );
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

describe('compileAudiences', () => {
  it('derives keys, enabled destinations, source connections and the counted events', () => {
    const set = compileAudiences(
      config([
        {
          name: 'High Value Users',
          sources: ['web'],
          destinations: ['hooks', 'off'],
          rule: { all: [{ trait: 'plan', in: ['pro'] }, { event: 'Order Completed', atLeast: 3, within: '30d' }] },
        },
        {
          name: 'powerUsers',
          sources: ['web', 'app'],
          destinations: ['hooks'],
          rule: { any: [{ event: 'Order Completed', atLeast: 5, within: '7d' }, { not: { event: 'Signed Up', atLeast: 1 } }] },
        },
      ]),
    );
    expect(set.audiences.map((a) => a.key)).toEqual(['high_value_users', 'power_users']);
    expect([...set.enabledDestinations]).toEqual(['hooks']);
    expect(set.sourceDestinations.get('web')).toEqual(['hooks', 'off']);
    expect(set.events.get('Order Completed')).toEqual({ keep: 5, windowsMs: [7 * DAY, 30 * DAY], granularityMs: 1 });
    expect(set.events.get('Signed Up')).toEqual({ keep: 0, windowsMs: [], granularityMs: 1 });
    expect(set.events.has('Page Viewed')).toBe(false);
  });

  it('buckets kept times when a rule needs more than the exact limit', () => {
    const set = compileAudiences(
      config([{ name: 'Heavy', sources: ['web'], destinations: ['hooks'], rule: { event: 'Page Viewed', atLeast: EXACT_KEEP_LIMIT + 1, within: '1h' } }]),
    );
    expect(set.events.get('Page Viewed')).toEqual({ keep: EXACT_KEEP_LIMIT + 1, windowsMs: [3_600_000], granularityMs: 60_000 });
  });

  it('tells an edited audience by its fingerprint', () => {
    const before = compileAudiences(config([{ name: 'A', sources: ['web'], destinations: ['hooks'], rule: { trait: 'x', exists: true } }]));
    const same = compileAudiences(config([{ name: 'A', sources: ['web'], destinations: ['hooks'], rule: { trait: 'x', exists: true } }]));
    const edited = compileAudiences(config([{ name: 'A', sources: ['web'], destinations: ['hooks'], rule: { trait: 'x', exists: false } }]));
    expect(same.audiences[0]?.fingerprint).toBe(before.audiences[0]?.fingerprint);
    expect(edited.audiences[0]?.fingerprint).not.toBe(before.audiences[0]?.fingerprint);
  });
});
