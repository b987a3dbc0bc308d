// The README's shell commands, run as a new user types them on a fresh clone after
// `npm ci`: from the checkout's root, in a shell that has set no variable of ours (no
// SWITCHYARD_ADMIN_TOKEN, no KAFKA_BROKERS). Every command of every ```sh block either
// runs here, or is named below with the reason it cannot (it needs the running stack of
// `npm start`, or it is the install or the suite itself), so a command added to the
// README is run here unless someone says why not.
//
// NOTE: the commands run in a temporary folder that links the checkout's bin/, config/
// and dist/, so what they write (`> resolved.yaml`) lands there, not in the checkout.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Commands not run here, and why; each must still match a command of the README. */
const NOT_RUN: { command: RegExp; why: string }[] = [
  { command: /^npm ci$/, why: 'the install itself, already done in this checkout' },
  { command: /^npm test$/, why: 'the whole suite, of which this test is a part' },
  { command: /^npm start$/, why: 'starts the stack; test/integration/npm-start.test.ts runs it' },
  { command: /127\.0\.0\.1:(8080|9092)\b/, why: "talks to the gateway or the Kafka of a running npm start" },
];

/** The commands of the ```sh blocks of a Markdown text: continuation lines joined, comments dropped. */
function shellCommands(markdown: string): string[] {
  const commands: string[] = [];
  const blocks = markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm);
  for (const [, body] of blocks) {
    const joined = body!.replace(/\\\n\s*/g, '');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#.*$/, '').trim();
      if (command !== '' && !command.startsWith('#')) commands.push(command);
    }
  }
  return commands;
}

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const commands = shellCommands(readme);
const runnable = commands.filter((command) => !NOT_RUN.some((rule) => rule.command.test(command)));

const work = mkdtempSync(join(tmpdir(), 'switchyard-readme-'));
for (const dir of ['bin', 'config', 'dist']) symlinkSync(join(ROOT, dir), join(work, dir));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A user's shell: PATH and HOME only, so nothing of this test run leaks in. */
const userEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? work };

describe("the README's commands", () => {
  it('are all either run here or named with the reason they are not', () => {
    expect(commands.length).toBeGreaterThan(5);
    for (const rule of NOT_RUN) expect(commands.some((command) => rule.command.test(command)), `a README command matching ${rule.command}`).toBe(true);
    expect(runnable).toContain('bin/switchyard --version');
    expect(runnable.some((command) => command.includes('bin/switchyard check-config'))).toBe(true);
  });

  it.each(runnable)('%s: exits 0 with nothing on stderr', (command) => {
    const result = spawnSync('sh', ['-c', command], { cwd: work, encoding: 'utf8', env: userEnv, timeout: 30_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    // What it writes with `> FILE` is there and not empty.
    const target = / > (\S+)$/.exec(command)?.[1];
    const shown = target === undefined ? result.stdout : existsSync(join(work, target)) ? readFileSync(join(work, target), 'utf8') : '';
    expect(shown.trim()).not.toBe('');
    if (command.includes('check-config')) {
      const resolved = parse(shown) as { admin: { token: string }; destinations: { id: string }[] };
      expect(resolved.destinations.map((d) => d.id)).toEqual(['hooks-main', 'hooks-audit']);
      expect(resolved.admin.token).toBe('****');
    }
  });

  it('check-config without SWITCHYARD_ADMIN_TOKEN names the variable on stderr and exits 1, as the README says', () => {
    const result = spawnSync('sh', ['-c', 'bin/switchyard check-config --config config/example.yaml > resolved-without.yaml'], { cwd: work, encoding: 'utf8', env: userEnv });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('config/example.yaml: admin.token: environment variable SWITCHYARD_ADMIN_TOKEN is not set; set it (a secret has no default)\n');
    expect(readme).toContain('without that variable it names it on stderr and exits 1');
  });
});
