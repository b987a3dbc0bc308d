import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { cliArgv } from '../support/cli-command.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

function run(args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, cliArgv(args), {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

function writeYaml(value: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'switchyard-cli-')), 'switchyard.yaml');
  writeFileSync(file, stringify(value));
  return file;
}

const example = parse(readFileSync(join(ROOT, 'config/example.yaml'), 'utf8')) as {
  destinations: { settings: { webhooks: unknown[] } }[];
};

describe('switchyard check-config', () => {
  it('accepts the example config and masks its secrets', () => {
    const { code, out, err } = run(['check-config', '--config', 'config/example.yaml'], {
      HOOKS_MAIN_SECRET: 'very-secret-value-1',
      WEB_WRITE_KEY: 'write-key-value-2',
      SWITCHYARD_ADMIN_TOKEN: 'admin-token-value-3',
    });
    expect(code).toBe(0);
    expect(err).toBe('');
    // stdout is the resolved config alone: `check-config > resolved.yaml` is YAML.
    expect((parse(out) as { destinations: { id: string }[] }).destinations.map((d) => d.id)).toContain('hooks-main');
    expect(out).toContain('hooks-main');
    expect(out).not.toContain('very-secret-value-1');
    expect(out).not.toContain('write-key-value-2');
    expect(out).not.toContain('admin-token-value-3');
    expect(out).toContain('****');
  });

  it('refuses the example without SWITCHYARD_ADMIN_TOKEN, or with it empty, naming the variable, exit 1', () => {
    for (const token of [undefined, '']) {
      const env: Record<string, string> = { ...process.env } as Record<string, string>;
      delete env.SWITCHYARD_ADMIN_TOKEN;
      if (token !== undefined) env.SWITCHYARD_ADMIN_TOKEN = token;
      const result = spawnSync(process.execPath, cliArgv(['check-config', '--config', 'config/example.yaml']), { cwd: ROOT, encoding: 'utf8', env });
      expect(result.status).toBe(1);
      expect(result.stdout + result.stderr).toMatch(/^config\/example\.yaml: admin\.token: .*environment variable SWITCHYARD_ADMIN_TOKEN is (not set|set but empty)/m);
    }
  });

  it('reads the path from SWITCHYARD_CONFIG when --config is absent', () => {
    const { code } = run(['check-config'], { SWITCHYARD_CONFIG: join(ROOT, 'config/example.yaml'), SWITCHYARD_ADMIN_TOKEN: 'admin-token-value-3' });
    expect(code).toBe(0);
  });

  it('names a missing file on stderr and exits 1', () => {
    const { code, out, err } = run(['check-config', '--config', '/nonexistent/switchyard.yaml']);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toContain('/nonexistent/switchyard.yaml');
  });

  it('reports every problem of a broken file with its path on stderr, nothing on stdout, and exits 1', () => {
    const broken = structuredClone(example) as Record<string, unknown> & typeof example;
    const hooks = broken.destinations[0]!.settings.webhooks;
    broken.destinations[0]!.settings.webhooks = [...hooks, ...hooks, ...hooks, ...hooks, ...hooks, ...hooks];
    (broken.destinations[1] as { settings: { webhooks: { url: string }[] } }).settings.webhooks[0]!.url = 'ftp://files.example.com/x';
    (broken as Record<string, unknown>).kafkaa = {};
    const file = writeYaml(broken);
    const { code, out, err } = run(['check-config', '--config', file]);
    const text = err;
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(text).toContain('destinations[0].settings.webhooks');
    expect(text).toContain('destinations[1].settings.webhooks[0].url');
    expect(text).toContain('kafkaa');
    expect(text).toContain(file);
  });

  it('refuses an empty file with one line that says what a config needs, and exits 1', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'switchyard-cli-')), 'empty.yaml');
    writeFileSync(file, '# nothing here yet\n');
    const { code, out, err } = run(['check-config', '--config', file]);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err.trim()).toBe(
      `${file}: (file): is empty; a config needs at least one source (and kafka.brokers, unless localhost:9092 or KAFKA_BROKERS is right); start from config/example.yaml`,
    );
  });

  it('refuses a config without a source and exits 1', () => {
    const file = writeYaml({ kafka: { brokers: ['localhost:9092'] }, destinations: example.destinations });
    const { code, out, err } = run(['check-config', '--config', file]);
    expect(code).toBe(1);
    expect(out).toBe('');
    expect(err).toContain(`${file}: sources: needs at least one source`);
  });

  it('warns on stderr, and exits 0, for a webhook URL the private-network guard will refuse', () => {
    const guarded = structuredClone(example) as typeof example & { delivery: Record<string, unknown> };
    guarded.delivery.blockPrivateNetworks = true;
    const file = writeYaml(guarded);
    const { code, out, err } = run(['check-config', '--config', file], { SWITCHYARD_ADMIN_TOKEN: 'admin-token-value-3' });
    expect(code).toBe(0);
    expect(err).toContain(`${file}: warning: destinations[0].settings.webhooks[0].url: 127.0.0.1 is a loopback address and delivery.blockPrivateNetworks is on`);
    expect(out).not.toContain('warning');
    expect(out).toContain('blockPrivateNetworks: true');
  });

  it('refuses to start a role on a bad config with exit code 1', () => {
    const file = writeYaml({ kafka: { brokers: [] }, sources: [{ id: 'web', destinations: ['nope'] }] });
    const { code, err } = run(['router', '--config', file]);
    expect(code).toBe(1);
    expect(err).toContain('nope');
  });

  it("works as the runbook's deploy step writes it (docs/operations.md#deploy), on the example overlay", () => {
    const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    const start = doc.indexOf('\n## Deploy\n');
    const deploy = doc.slice(start, doc.indexOf('\n## ', start + 1));
    const step = deploy
      .split('\n')
      .map((line) => line.trim())
      .find((line) => line.includes('bin/switchyard check-config'));
    expect(step).toBeDefined();
    const script = step!.replaceAll('<env>', 'example');
    // Only PATH: the secrets come from the overlay's env file, as the step says.
    const runStep = (cwd: string) => spawnSync('sh', ['-c', script], { cwd, encoding: 'utf8', env: { PATH: process.env.PATH } });

    // As shipped, the env file holds CHANGE-ME placeholders: the step stops the deploy.
    const shipped = runStep(ROOT);
    expect(shipped.stderr).toContain('admin.token: is a placeholder from the examples');
    expect(shipped.stdout).toBe('');
    expect(shipped.status).not.toBe(0);

    // A copy of the overlay with every placeholder replaced, as the env file asks.
    const copy = mkdtempSync(join(tmpdir(), 'switchyard-overlay-'));
    const overlay = join(copy, 'deploy/kubernetes/overlays/example');
    mkdirSync(overlay, { recursive: true });
    mkdirSync(join(copy, 'bin'));
    symlinkSync(join(ROOT, 'bin/switchyard'), join(copy, 'bin/switchyard'));
    const source = join(ROOT, 'deploy/kubernetes/overlays/example');
    copyFileSync(join(source, 'switchyard.yaml'), join(overlay, 'switchyard.yaml'));
    const secrets = readFileSync(join(source, 'secrets.example.env'), 'utf8').replace(
      /^(\w+)=CHANGE-ME.*$/gm,
      (_line, name: string) => `${name}=${randomBytes(32).toString('hex')}`,
    );
    writeFileSync(join(overlay, 'secrets.example.env'), secrets);
    const replaced = runStep(copy);
    expect(replaced.stderr).toBe('');
    expect(replaced.stdout).toBe('config OK\n');
    expect(replaced.status).toBe(0);
  });

  it('rejects an unknown command with usage and exit code 1', () => {
    const { code, err } = run(['frobnicate']);
    expect(code).toBe(1);
    expect(err).toContain('usage:');
  });
});
