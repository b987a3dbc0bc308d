// `settings.rateLimit` of a destination: what loads, and the path-qualified errors.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';

const FILE = 'test.yaml';

function withRateLimit(rateLimit: unknown) {
  const doc = {
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/a' }], rateLimit } }],
  };
  return parseConfigText(stringify(doc), FILE, { RPS: '2.5' });
}

describe('settings.rateLimit', () => {
  it.each<[string, unknown, { requestsPerSecond: number; burst: number }]>([
    ['both values', { requestsPerSecond: 50, burst: 100 }, { requestsPerSecond: 50, burst: 100 }],
    ['no burst: one second of requests', { requestsPerSecond: 20 }, { requestsPerSecond: 20, burst: 20 }],
    ['a fractional rate: the burst is at least 1', { requestsPerSecond: 0.2 }, { requestsPerSecond: 0.2, burst: 1 }],
    ['values from the environment', { requestsPerSecond: '${RPS}', burst: '5' }, { requestsPerSecond: 2.5, burst: 5 }],
  ])('loads %s', (_name, rateLimit, expected) => {
    const result = withRateLimit(rateLimit);
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.destinations[0]!.settings.rateLimit).toEqual(expected);
  });

  it('is absent unless given', () => {
    const result = parseConfigText(
      stringify({ sources: [{ id: 'web' }], destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://h.example.com/' }] } }] }),
      FILE,
      {},
    );
    expect(result.ok && result.config.destinations[0]!.settings).not.toHaveProperty('rateLimit');
  });

  it.each<[string, unknown, string[]]>([
    ['no rate', { burst: 10 }, ['destinations[0].settings.rateLimit.requestsPerSecond: is required; add it']],
    ['a zero rate', { requestsPerSecond: 0 }, ['destinations[0].settings.rateLimit.requestsPerSecond: must be a number above 0 and at most 100000, got number 0']],
    ['a rate as words', { requestsPerSecond: 'fast' }, ['destinations[0].settings.rateLimit.requestsPerSecond: must be a number above 0 and at most 100000, got "fast"']],
    ['a fractional burst', { requestsPerSecond: 5, burst: 1.5 }, ['destinations[0].settings.rateLimit.burst: must be a whole number from 1 to 1000000, got number 1.5']],
    ['a misspelt key', { requestsPerSecond: 5, brust: 3 }, ['destinations[0].settings.rateLimit.brust: unknown key "brust"; did you mean "burst"?']],
    ['a number instead of the mapping', 50, ['destinations[0].settings.rateLimit: must be a mapping (key: value), got number 50']],
  ])('refuses %s, naming the path', (_name, rateLimit, errors) => {
    const result = withRateLimit(rateLimit);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors).toEqual(errors.map((e) => `${FILE}: ${e}`));
  });
});
