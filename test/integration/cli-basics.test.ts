// The CLI's own manners: --version, --help, and no stack trace when its reader goes away.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../src/cli/args.js';
import { cliArgv } from '../support/cli-command.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
  err: string;
}

/** Runs the CLI; with `closeStdout`, the reader of its stdout goes away before it prints (as `| head -0`). */
function run(args: string[], options: { closeStdout?: boolean } = {}): Promise<Run> {
  // The example config reads the admin token from the environment (it has no built-in one).
  const env = { ...process.env, SWITCHYARD_ADMIN_TOKEN: 'cli-basics-admin-token' };
  const child = spawn(process.execPath, cliArgv(args), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  if (options.closeStdout) child.stdout.destroy();
  else child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  return new Promise((resolveRun) => child.once('close', (code, signal) => resolveRun({ code, signal, out, err })));
}

describe('switchyard --version and --help', () => {
  it('prints the version of package.json', async () => {
    const result = await run(['--version']);
    expect(result).toMatchObject({ code: 0, out: `switchyard ${VERSION}\n`, err: '' });
  });

  it('runs as bin/switchyard in this checkout (the compiled dist/), with nothing installed', () => {
    const result = spawnSync('bin/switchyard', ['--version'], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(`switchyard ${VERSION}\n`);
    expect(result.status).toBe(0);
  });

  it('prints the program help and each command help, with an example, exit 0', async () => {
    const program = await run(['--help']);
    expect(program.code).toBe(0);
    for (const command of COMMANDS) expect(program.out).toContain(`\n  ${command.name}  `);
    const help = await run(['dlq', 'list', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('usage: switchyard dlq list --destination ID');
    expect(help.out).toContain('example:\n  switchyard dlq list --destination hooks-main');
  });

  it('answers a usage error with what is wrong and where to look, exit 1', async () => {
    const result = await run(['replay', '--destination', 'hooks', '--until', 'tomorrow']);
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    expect(result.err).toBe(
      'switchyard replay: --until "tomorrow" is not a time: give an ISO 8601 time (2026-05-01T12:00:00Z) or a duration back from now (30m, 2h, 7d), not before 1970-01-01\n' +
        'usage: switchyard replay --destination ID [--since TIME] [--until TIME] [--limit N] [--dry-run] [--config PATH] | replay --destination ID --message MID [--dry-run] [--config PATH] | ' +
        'replay --blocked --source ID [--since TIME] [--until TIME] [--dry-run] [--config PATH]\n' +
        'see: switchyard replay --help\n',
    );
    const bogus = await run(['all', '--bogus']);
    expect(bogus).toMatchObject({
      code: 1,
      out: '',
      err: 'switchyard all: unknown option --bogus; its options are --config (and --help)\nusage: switchyard all [--config PATH]\nsee: switchyard all --help\n',
    });
  });
});

describe('a closed output pipe', () => {
  it.each([
    [['check-config', '--config', 'config/example.yaml']],
    [['--help']],
  ])('%j ends quietly, without a stack trace', async (args) => {
    const result = await run(args, { closeStdout: true });
    expect(result.err).toBe('');
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
  });
});
