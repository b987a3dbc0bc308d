// `settings.batch` and `settings.ordering` of a destination, and the sizes they are
// written with: what loads, and the path-qualified errors.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { formatSize, parseSize } from '../../../src/config/size.js';

const FILE = 'test.yaml';

function withSettings(extra: Record<string, unknown>) {
  const doc = {
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/a' }], ...extra } }],
  };
  return parseConfigText(stringify(doc), FILE, { EVENTS: '250', WAIT: '250ms' });
}

describe('parseSize', () => {
  it.each([
    ['100B', 100],
    ['1KB', 1_024],
    ['512KB', 524_288],
    ['1.5KB', 1_536],
    ['1MB', 1_048_576],
    ['4MB', 4_194_304],
    ['0.5MB', 524_288],
  ])('%s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each([[''], ['512'], ['512 KB'], ['512kb'], ['512KiB'], ['1GB'], ['-1KB'], ['.5MB'], ['1.1B']])('refuses %j', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it.each([
    [524_288, '512KB'],
    [4_194_304, '4MB'],
    [1_000, '1000B'],
  ])('formats %d as %s, which parses back', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
    expect(parseSize(text)).toBe(bytes);
  });
});

describe('settings.batch', () => {
  it.each<[string, unknown, { maxEvents: number; maxBytes: number; maxWaitMs: number; format: string }]>([
    ['every value', { maxEvents: 100, maxBytes: '512KB', maxWait: '1s' }, { maxEvents: 100, maxBytes: 524_288, maxWaitMs: 1_000, format: 'json' }],
    ['the defaults', {}, { maxEvents: 100, maxBytes: 524_288, maxWaitMs: 1_000, format: 'json' }],
    ['the limits', { maxEvents: 4_000, maxBytes: '4MB', maxWait: '1m' }, { maxEvents: 4_000, maxBytes: 4_194_304, maxWaitMs: 60_000, format: 'json' }],
    ['one event a batch', { maxEvents: 1, maxBytes: '1KB', maxWait: '1ms' }, { maxEvents: 1, maxBytes: 1_024, maxWaitMs: 1, format: 'json' }],
    ['values from the environment', { maxEvents: '${EVENTS}', maxWait: '${WAIT}' }, { maxEvents: 250, maxBytes: 524_288, maxWaitMs: 250, format: 'json' }],
    ['one body per line', { format: 'ndjson' }, { maxEvents: 100, maxBytes: 524_288, maxWaitMs: 1_000, format: 'ndjson' }],
  ])('loads %s', (_name, batch, expected) => {
    const result = withSettings({ batch });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.destinations[0]!.settings.batch).toEqual(expected);
  });

  it('is absent unless given, and ordering is none', () => {
    const result = withSettings({});
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.destinations[0]!.settings).not.toHaveProperty('batch');
    expect(result.config.destinations[0]!.settings.ordering).toBe('none');
  });

  it.each<[string, unknown, string[]]>([
    ['too many events', { maxEvents: 4_001 }, ['destinations[0].settings.batch.maxEvents: must be a whole number from 1 to 4000, got number 4001']],
    ['no events', { maxEvents: 0 }, ['destinations[0].settings.batch.maxEvents: must be a whole number from 1 to 4000, got number 0']],
    ['a bare number of bytes', { maxBytes: 524_288 }, ['destinations[0].settings.batch.maxBytes: number 524288 is not a size; write a number with a unit B, KB or MB (1 KB = 1,024 bytes), e.g. "512KB" or "1MB"']],
    ['over 4 MB', { maxBytes: '5MB' }, ['destinations[0].settings.batch.maxBytes: "5MB" is outside 1KB to 4MB; give a size in that range']],
    ['under 1 KB', { maxBytes: '100B' }, ['destinations[0].settings.batch.maxBytes: "100B" is outside 1KB to 4MB; give a size in that range']],
    ['a wait over a minute', { maxWait: '2m' }, ['destinations[0].settings.batch.maxWait: "2m" is longer than 1m, the longest a batch may wait for more events; give a shorter duration']],
    ['a wait without a unit', { maxWait: 5 }, [expect.stringMatching(/^test\.yaml: destinations\[0\]\.settings\.batch\.maxWait: number 5 is not a duration/) as unknown as string]],
    ['a misspelt key', { maxEvent: 5 }, ['destinations[0].settings.batch.maxEvent: unknown key "maxEvent"; did you mean "maxEvents"?']],
  ])('refuses %s, naming the path', (_name, batch, errors) => {
    const result = withSettings({ batch });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors).toEqual(errors.map((e) => (typeof e === 'string' ? `${FILE}: ${e}` : e)));
  });
});

describe('settings.ordering', () => {
  it.each(['none', 'user'] as const)('loads %s', (ordering) => {
    const result = withSettings({ ordering });
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.destinations[0]!.settings.ordering).toBe(ordering);
  });

  it('refuses anything else, naming the choices', () => {
    const result = withSettings({ ordering: 'per-user' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors).toEqual([`${FILE}: destinations[0].settings.ordering: must be one of none, user, got "per-user"`]);
  });
});
