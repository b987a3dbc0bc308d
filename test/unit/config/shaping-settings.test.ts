// The shaping keys of destination settings (docs/configuration.md#destinations): what
// the loader (so check-config and every reload) takes and refuses, with the path.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCheckConfig } from '../../../src/config/check-config.js';
import { parseConfigText } from '../../../src/config/load.js';

const hook = (id: string, settings: Record<string, unknown> = {}) => ({
  id,
  type: 'webhooks',
  settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }], ...settings },
});

function file(third: Record<string, unknown>): string {
  return stringify({
    sources: [{ id: 'web', writeKey: 'k-web', destinations: ['a', 'b', 'c'] }],
    destinations: [hook('a'), hook('b', { filter: 'type = "track"' }), hook('c', third)],
  });
}

const errorsOf = (third: Record<string, unknown>) => {
  const result = parseConfigText(file(third), 'test.yaml', {});
  return result.ok ? [] : result.errors;
};

describe('shaping settings that load', () => {
  it('keeps each key as written, sample as a number (also from an env string)', () => {
    const result = parseConfigText(
      file({
        filter: 'type = "track" and properties.total > 100',
        sample: '${SAMPLE}',
        dropProperties: ['context.ip', 'properties.email'],
        transform: '{"user": userId, "name": event, "total": properties.total}',
      }),
      'test.yaml',
      { SAMPLE: '0.25' },
    );
    if (!result.ok) throw new Error(result.errors.join('\n'));
    expect(result.config.destinations[2]?.settings).toMatchObject({
      filter: 'type = "track" and properties.total > 100',
      sample: 0.25,
      dropProperties: ['context.ip', 'properties.email'],
      transform: '{"user": userId, "name": event, "total": properties.total}',
    });
    expect(result.config.destinations[0]?.settings).not.toHaveProperty('filter');
  });

  it.each([0, 1, 0.001])('takes sample %s', (sample) => {
    expect(errorsOf({ sample })).toEqual([]);
  });
});

describe('shaping settings refused, each with its path', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      'a transform that does not compile: JSONata\'s message and position',
      { transform: '{"user": userId, "name": }' },
      'test.yaml: destinations[2].settings.transform: is not a JSONata expression that compiles: The symbol "}" cannot be used as a unary operator (JSONata S0211, at character 26); fix the expression (see docs/webhooks.md#shaping)',
    ],
    [
      'a filter that does not compile',
      { filter: 'properties.total >' },
      'test.yaml: destinations[2].settings.filter: is not a JSONata expression that compiles: Unexpected end of expression (JSONata S0207, at character 18); fix the expression (see docs/webhooks.md#shaping)',
    ],
    ['an empty filter', { filter: '' }, 'test.yaml: destinations[2].settings.filter: must not be empty'],
    ['a filter that is not a string', { filter: true }, 'test.yaml: destinations[2].settings.filter: must be a string, got boolean true; quote it in YAML'],
    ['sample above 1', { sample: 1.5 }, 'test.yaml: destinations[2].settings.sample: must be a fraction from 0 to 1 (0.1 keeps one event in ten), got number 1.5'],
    ['sample as a percentage', { sample: '10%' }, 'test.yaml: destinations[2].settings.sample: must be a fraction from 0 to 1 (0.1 keeps one event in ten), got "10%"'],
    [
      'both lists',
      { dropProperties: ['context.ip'], allowProperties: ['properties.total'] },
      'test.yaml: destinations[2].settings.allowProperties: give dropProperties or allowProperties, not both: allowProperties keeps only the listed keys of properties and traits, dropProperties removes the listed paths',
    ],
    [
      'a drop path no body has',
      { dropProperties: ['context.ip', 'ip'] },
      'test.yaml: destinations[2].settings.dropProperties[1]: "ip" starts with "ip", which no webhook body has; a path starts with one of version, type, userId, anonymousId, messageId, timestamp, event, name, category, groupId, properties, traits, context, Previous ID, User ID, e.g. "context.ip" or "properties.email"',
    ],
    [
      'an allow path outside properties and traits',
      { allowProperties: ['context.ip'] },
      'test.yaml: destinations[2].settings.allowProperties[0]: "context.ip" is not under properties or traits: allowProperties keeps only the listed keys of properties and traits (the rest of the body stays); to remove anything else, use dropProperties instead',
    ],
    ['an empty list', { dropProperties: [] }, 'test.yaml: destinations[2].settings.dropProperties: needs at least 1 entry, got 0'],
    ['a misspelt key', { tranform: '$' }, 'test.yaml: destinations[2].settings.tranform: '],
  ];
  it.each(cases)('%s', (_name, third, expected) => {
    const errors = errorsOf(third);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(expected);
  });
});

describe('check-config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-shaping-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a transform that does not compile, naming the file and the path, and exits 1', () => {
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, file({ transform: '{"user": userId,' }));
    const lines: string[] = [];
    const problems: string[] = [];
    expect(runCheckConfig(path, {}, (line) => lines.push(line), (line) => problems.push(line))).toBe(1);
    expect(lines).toEqual([]);
    expect(problems).toEqual([
      `${path}: destinations[2].settings.transform: is not a JSONata expression that compiles: Expected ":" before end of expression (JSONata S0203, at character 16); fix the expression (see docs/webhooks.md#shaping)`,
    ]);
  });

  it('prints the expressions of a valid file as written', () => {
    const path = join(dir, 'good.yaml');
    writeFileSync(path, file({ transform: '{"user": userId}', sample: 0.5 }));
    const lines: string[] = [];
    expect(runCheckConfig(path, {}, (line) => lines.push(line), () => undefined)).toBe(0);
    expect(lines.map((l) => l.trim())).toContain(`transform: '{"user": userId}'`);
    expect(lines.map((l) => l.trim())).toContain('sample: 0.5');
  });
});
