// scripts/kafka/broker.mjs as a command: options it does not know are refused with its
// usage before any JVM starts (a broker of the wrong kind would run quietly otherwise).
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../../scripts/kafka/broker.mjs');

function run(args: string[]) {
  return spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', timeout: 20_000 });
}

describe('scripts/kafka/broker.mjs', () => {
  it('refuses a --jvm it has no settings for, naming the ones it has', () => {
    const { status, stderr } = run(['--port', '0', '--jvm', 'fast']);
    expect(status).toBe(1);
    expect(stderr).toContain('--jvm test|server');
    // A name every object has is no setting either.
    expect(run(['--port', '0', '--jvm', 'toString']).status).toBe(1);
  });

  it('refuses an option it does not know', () => {
    const { status, stderr } = run(['--in-memroy']);
    expect(status).toBe(1);
    expect(stderr).toMatch(/Unknown option '--in-memroy'/);
    expect(stderr).toContain('usage: node scripts/kafka/broker.mjs');
  });

  it('refuses a port out of range', () => {
    const { status, stderr } = run(['--port', '70000']);
    expect(status).toBe(1);
    expect(stderr).toContain('usage: node scripts/kafka/broker.mjs');
  });
});
