// `settings.retry` of a destination: what loads, the path-qualified errors, and the
// effective policy (retryPolicyOf) every place that names tier topics resolves.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { retryPolicyOf, retryPolicyOfId } from '../../../src/config/retry-policy.js';
import type { Config } from '../../../src/config/schema.js';
import { createTopology } from '../../../src/runtime/topology.js';

const FILE = 'test.yaml';
const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

function load(retry: unknown, delivery: Record<string, unknown> = {}) {
  const doc = {
    delivery,
    sources: [{ id: 'web', destinations: ['own', 'plain'] }],
    destinations: [
      { id: 'own', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/a' }], retry } },
      { id: 'plain', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/b' }] } },
    ],
  };
  return parseConfigText(stringify(doc), FILE, { WINDOW: '72h' });
}

function loaded(retry: unknown, delivery: Record<string, unknown> = {}): Config {
  const result = load(retry, delivery);
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

describe('settings.retry', () => {
  it('loads every key, as the design writes it', () => {
    const config = loaded({ tiers: ['1m', '10m', '1h', '6h'], maxWindow: '72h', stopOn: [410] });
    expect(config.destinations[0]!.settings.retry).toEqual({
      tiers: [
        { name: '1m', ms: M },
        { name: '10m', ms: 10 * M },
        { name: '1h', ms: H },
        { name: '6h', ms: 6 * H },
      ],
      maxWindowMs: 72 * H,
      stopOn: [410],
    });
  });

  it('loads a window from the environment, 30 days at most, and a status listed twice once', () => {
    expect(loaded({ maxWindow: '${WINDOW}' }).destinations[0]!.settings.retry).toEqual({ maxWindowMs: 72 * H });
    expect(loaded({ maxWindow: '30d' }).destinations[0]!.settings.retry).toEqual({ maxWindowMs: 30 * D });
    expect(loaded({ stopOn: [410, '404', 410] }).destinations[0]!.settings.retry).toEqual({ stopOn: [410, 404] });
  });

  it('is absent unless given', () => {
    expect(loaded(undefined).destinations[0]!.settings).not.toHaveProperty('retry');
  });

  it.each<[string, unknown, string[]]>([
    ['a window over 30 days', { maxWindow: '31d' }, ['destinations[0].settings.retry.maxWindow: "31d" is outside 1s to 30d; give a duration in that range']],
    ['a window that is not a duration', { maxWindow: 'long' }, [
        'destinations[0].settings.retry.maxWindow: "long" is not a duration; write a positive number with a unit ms, s, m, h or d, e.g. "500ms", "10s", "1.5m", "4h", "30d"',
      ],],
    ['no tiers', { tiers: [] }, ['destinations[0].settings.retry.tiers: needs at least 1 entry, got 0']],
    ['a tier listed twice', { tiers: ['1m', '1m'] }, ['destinations[0].settings.retry.tiers[1]: tier "1m" is listed twice; every tier needs its own name']],
    ['a 2xx in stopOn', { stopOn: [204] }, ['destinations[0].settings.retry.stopOn[0]: must be an HTTP status from 400 to 599 (such as 410) that should dead-letter at once, got number 204']],
    ['a word in stopOn', { stopOn: ['gone'] }, ['destinations[0].settings.retry.stopOn[0]: must be an HTTP status from 400 to 599 (such as 410) that should dead-letter at once, got "gone"']],
    ['a misspelt key', { tier: ['1m'] }, ['destinations[0].settings.retry.tier: unknown key "tier"; did you mean "tiers"?']],
  ])('refuses %s, naming the path', (_name, retry, errors) => {
    const result = load(retry);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors).toEqual(errors.map((e) => `${FILE}: ${e}`));
  });

  it("measures the destination's topic names with its own tiers, against Kafka's limit", () => {
    // switchyard.deliveries.<218 characters> is 240: ".retry.1s" fits (249), the default ".retry.10m" would not.
    const id = 'x'.repeat(218);
    const withTiers = (tiers: string[] | undefined) =>
      parseConfigText(
        stringify({
          sources: [{ id: 'web', destinations: [id] }],
          destinations: [{ id, type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/a' }], ...(tiers === undefined ? {} : { retry: { tiers } }) } }],
        }),
        FILE,
        {},
      );
    expect(withTiers(['1s']).ok).toBe(true);
    for (const tiers of [['1s', '1000ms'], undefined]) {
      const result = withTiers(tiers);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.errors.join('\n')).toMatch(/destinations\[0\]\.id: its longest Kafka topic name would be 2(50|53) characters, over Kafka's limit of 249/);
    }
  });
});

describe('retryPolicyOf', () => {
  it("takes each key the destination sets, the delivery defaults for the rest", () => {
    const config = loaded({ tiers: ['1s', '5s'] }, { retryTiers: ['10s', '1m'], maxRetryWindow: '2h' });
    expect(retryPolicyOf(config, config.destinations[0])).toEqual({
      tiers: [
        { name: '1s', ms: S },
        { name: '5s', ms: 5 * S },
      ],
      maxRetryWindowMs: 2 * H,
      stopOn: [],
    });
    const windowOnly = loaded({ maxWindow: '7d', stopOn: [410] }, { retryTiers: ['10s', '1m'] });
    expect(retryPolicyOf(windowOnly, windowOnly.destinations[0])).toEqual({
      tiers: [
        { name: '10s', ms: 10 * S },
        { name: '1m', ms: M },
      ],
      maxRetryWindowMs: 7 * D,
      stopOn: [410],
    });
  });

  it('gives the defaults to a destination without settings.retry and to an id the config does not hold', () => {
    const config = loaded({ tiers: ['1s'] });
    const defaults = { tiers: config.delivery.retryTiers, maxRetryWindowMs: 4 * H, stopOn: [] };
    expect(retryPolicyOf(config, config.destinations[1])).toEqual(defaults);
    expect(retryPolicyOfId(config, 'plain')).toEqual(defaults);
    expect(retryPolicyOfId(config, 'removed')).toEqual(defaults);
    expect(retryPolicyOfId(config, 'own').tiers).toEqual([{ name: '1s', ms: S }]);
  });

  it("the router's topology creates each destination's own tier topics", () => {
    const config = loaded({ tiers: ['1s', '5s'] }, { retryTiers: ['10s', '1m'] });
    const topics = createTopology('sy.').router(config).map((spec) => spec.topic).filter((t) => t.includes('.retry.'));
    expect(topics).toEqual(['sy.deliveries.own.retry.1s', 'sy.deliveries.own.retry.5s', 'sy.deliveries.plain.retry.10s', 'sy.deliveries.plain.retry.1m']);
  });
});
