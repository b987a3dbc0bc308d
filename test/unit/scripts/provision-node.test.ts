import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// @ts-expect-error -- plain ESM script: the install step's postinstall, run before any build
const { atLeast, minimumOf } = (await import('../../../scripts/provision-node.mjs')) as {
  atLeast(version: string, minimum: string): boolean;
  minimumOf(range: string | undefined): string | undefined;
};

describe('atLeast: is the Node that runs npm new enough, or does the install step provision one', () => {
  it.each([
    ['20.20.2', '22.22.0', false],
    ['22.21.9', '22.22.0', false],
    ['22.22.0', '22.22.0', true],
    ['v22.22.1', '22.22.0', true],
    ['22.100.0', '22.22.0', true],
    ['23.0.0', '22.22.0', true],
    ['24.21.0', '22.22.0', true],
    ['9.30.0', '22.22.0', false],
    ['22.22', '22.22.0', true],
  ])('%s against %s: %s', (version, minimum, expected) => {
    expect(atLeast(version, minimum)).toBe(expected);
  });
});

describe('minimumOf', () => {
  it.each([
    ['>=22.22.0', '22.22.0'],
    [' >= 22.22.0 ', '22.22.0'],
    ['^22.22.0', undefined],
    ['>=22.22.0 || >=24.6.0', undefined],
    ['>=22', undefined],
    [undefined, undefined],
  ])('engines.node %j → %j', (range, expected) => {
    expect(minimumOf(range)).toBe(expected);
  });

  it('reads the form package.json uses, so the install step knows its minimum', () => {
    const engines = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } }).engines;
    expect(minimumOf(engines.node)).toBe('22.22.0');
  });
});
