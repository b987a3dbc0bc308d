import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCheckConfig } from '../../../src/config/check-config.js';
import type { Config } from '../../../src/config/schema.js';

const EXAMPLE = fileURLToPath(new URL('../../../config/example.yaml', import.meta.url));

/** `lines`: what went to stdout; `problems`: what went to stderr. */
function run(file: string, env: Record<string, string | undefined>): { code: number; lines: string[]; problems: string[] } {
  const lines: string[] = [];
  const problems: string[] = [];
  const code = runCheckConfig(file, env, (line) => lines.push(line), (line) => problems.push(line));
  return { code, lines, problems };
}

describe('runCheckConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-check-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('prints the resolved config as YAML with secrets masked, and returns 0', () => {
    const { code, lines, problems } = run(EXAMPLE, { HOOKS_MAIN_SECRET: 'very-secret-value', KAFKA_BROKERS: 'k1:9092', SWITCHYARD_ADMIN_TOKEN: 'admin-token-0123456789' });
    expect(code).toBe(0);
    expect(problems).toEqual([]);
    const text = lines.join('\n');
    expect(text).not.toContain('very-secret-value');
    expect(text).not.toContain('admin-token-0123456789');
    expect(text).not.toContain('web-demo-key');
    const printed = parse(text) as Config;
    expect(printed.kafka.brokers).toEqual(['k1:9092']);
    expect(printed.admin.token).toBe('****');
    expect(printed.destinations[0]?.settings.sharedSecret).toBe('****');
    expect(printed.delivery.timeoutMs).toBe(5_000);
    expect(printed.audiences[0]?.name).toBe('High Value Users');
  });

  it('prints every problem to the problems stream, nothing to the output, and returns 1', () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'gateway: { prot: 1 }\ndelivery: { timeout: fast }\nsources: [{ id: web }]\n');
    const { code, lines, problems } = run(file, {});
    expect(code).toBe(1);
    expect(lines).toEqual([]);
    expect(problems).toEqual([
      `${file}: gateway.prot: unknown key "prot"; did you mean "port"?`,
      expect.stringMatching(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: delivery\\.timeout: "fast" is not a duration`)),
    ]);
  });

  it('warns, and still returns 0, for webhook URLs the private-network guard will refuse', () => {
    const file = join(dir, 'guarded.yaml');
    writeFileSync(
      file,
      [
        'delivery: { blockPrivateNetworks: true }',
        'sources: [{ id: web }]',
        'destinations:',
        '  - id: hooks',
        '    type: webhooks',
        '    settings:',
        '      webhooks:',
        '        - url: http://127.0.0.1:4000/a',
        '        - url: https://hooks.example.com/b',
        '        - url: http://[::ffff:10.1.2.3]/c',
        '        - url: http://localhost:4000/d',
        '        - url: http://169.254.169.254/latest',
        '',
      ].join('\n'),
    );
    const lines: string[] = [];
    const warnings: string[] = [];
    const code = runCheckConfig(file, {}, (line) => lines.push(line), (line) => warnings.push(line));
    expect(code).toBe(0);
    const guard = 'and delivery.blockPrivateNetworks is on, so every request to this URL will be refused (outcome blocked, dead-lettered); use a public address, or turn the guard off';
    expect(warnings).toEqual([
      `${file}: warning: destinations[0].settings.webhooks[0].url: 127.0.0.1 is a loopback address ${guard}`,
      `${file}: warning: destinations[0].settings.webhooks[2].url: ::ffff:a01:203 is a private address (IPv4-mapped of 10.1.2.3) ${guard}`,
      `${file}: warning: destinations[0].settings.webhooks[3].url: localhost is a loopback address ${guard}`,
      `${file}: warning: destinations[0].settings.webhooks[4].url: 169.254.169.254 is the cloud metadata address ${guard}`,
    ]);
    expect(lines.join('\n')).not.toContain('warning');
  });

  it('does not warn about private addresses while the guard is off', () => {
    const warnings: string[] = [];
    expect(runCheckConfig(EXAMPLE, { SWITCHYARD_ADMIN_TOKEN: 'admin-token-0123456789' }, () => undefined, (line) => warnings.push(line))).toBe(0);
    expect(warnings).toEqual([]);
  });

  it('prints no secret of a webhook URL (user info, path, query) nor a secret value, and warns about secrets too short for the logs', () => {
    const file = join(dir, 'secrets.yaml');
    writeFileSync(
      file,
      [
        'admin: { token: "${TOKEN}" }',
        'sources: [{ id: web, writeKey: "${KEY}", destinations: [hooks] }]',
        'destinations:',
        '  - id: hooks',
        '    type: webhooks',
        '    settings:',
        '      sharedSecret: "${SECRET}"',
        '      webhooks:',
        '        - url: https://usertoken:pw-secret-1@hooks.example.com/services/PATHSECRET?sig=QUERYSECRET',
        '        - url: https://backup.example.com',
        '',
      ].join('\n'),
    );
    const lines: string[] = [];
    const warnings: string[] = [];
    const code = runCheckConfig(file, { TOKEN: 'tok', KEY: 'write-key-0123456789', SECRET: 'shared-"secret"-0123' }, (line) => lines.push(line), (line) => warnings.push(line));
    expect(code).toBe(0);
    const text = [...lines, ...warnings].join('\n');
    for (const secret of ['usertoken', 'pw-secret-1', 'PATHSECRET', 'QUERYSECRET', 'write-key-0123456789', 'shared-', 'tok"']) expect(text).not.toContain(secret);
    const printed = parse(lines.join('\n')) as Config;
    expect(printed.destinations[0]?.settings.webhooks.map((hook) => hook.url)).toEqual(['https://hooks.example.com/****', 'https://backup.example.com']);
    expect(warnings).toEqual([
      `${file}: warning: admin.token: is shorter than 8 characters, so the logs mask it only in fields named for it, not wherever it might appear in a message; use a longer secret`,
    ]);
  });

  it('returns 1 for a missing file', () => {
    const { code, lines, problems } = run(join(dir, 'nope.yaml'), {});
    expect(code).toBe(1);
    expect(lines).toEqual([]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain('nope.yaml');
  });
});
