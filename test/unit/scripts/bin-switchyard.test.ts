// bin/switchyard, the command of a checkout: run in a small stand-in checkout (its own
// copy of the script, a dist/cli/main.js that reports how it was run) to see which Node
// it picks, that arguments and exit codes pass through unchanged, and what it says
// without dist/.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../../..');
const work = mkdtempSync(join(tmpdir(), 'bin-switchyard-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A checkout with bin/switchyard and, as asked, a built dist/ and a provisioned node_modules/.bin/node. */
function checkout(name: string, { built = true, provisioned = false } = {}): string {
  const root = join(work, name);
  mkdirSync(join(root, 'bin'), { recursive: true });
  copyFileSync(join(ROOT, 'bin', 'switchyard'), join(root, 'bin', 'switchyard'));
  chmodSync(join(root, 'bin', 'switchyard'), 0o755);
  if (built) {
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(
      join(root, 'dist', 'cli', 'main.js'),
      'const args = process.argv.slice(2);\n' +
        'process.stdout.write(JSON.stringify({ node: process.env.STAND_IN_NODE ?? "from PATH", args }));\n' +
        'process.exitCode = args[0] === "fail" ? 3 : 0;\n',
    );
  }
  if (provisioned) {
    // The provisioned Node, as a wrapper that says it was the one used.
    mkdirSync(join(root, 'node_modules', '.bin'), { recursive: true });
    const node = join(root, 'node_modules', '.bin', 'node');
    writeFileSync(node, `#!/bin/sh\nSTAND_IN_NODE=provisioned exec '${process.execPath}' "$@"\n`);
    chmodSync(node, 0o755);
  }
  return root;
}

function run(command: string, args: string[], cwd: string) {
  // A PATH whose `node` is the one running this test.
  const path = `${resolve(process.execPath, '..')}:/usr/bin:/bin`;
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', env: { PATH: path } });
  return { code: result.status, out: result.stdout, err: result.stderr };
}

describe('bin/switchyard', () => {
  it('runs dist/cli/main.js on the provisioned Node when there is one, passing every argument as given', () => {
    const root = checkout('provisioned', { provisioned: true });
    const result = run('bin/switchyard', ['dlq', 'list', '--destination', 'a b', '--json'], root);
    expect(result).toEqual({ code: 0, out: JSON.stringify({ node: 'provisioned', args: ['dlq', 'list', '--destination', 'a b', '--json'] }), err: '' });
  });

  it('runs it on the node of PATH otherwise, from any folder, with the exit code of the CLI', () => {
    const root = checkout('plain');
    expect(run(join(root, 'bin', 'switchyard'), ['--version'], work)).toEqual({ code: 0, out: JSON.stringify({ node: 'from PATH', args: ['--version'] }), err: '' });
    expect(run('bin/switchyard', ['fail'], root).code).toBe(3);
  });

  it('says what to run when dist/ was never built, and exits 2', () => {
    const root = realpathSync(checkout('unbuilt', { built: false }));
    const result = run('bin/switchyard', ['--version'], root);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toBe(`switchyard: ${root}/dist/cli/main.js is missing: run npm ci (or npm run build) in ${root} first\n`);
  });
});
