// Runs `switchyard <role>` as a real child process (the compiled dist/, which the global
// setup keeps up to date with src/: test/support/cli-command.ts), for crash, restart and
// end-to-end tests.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { cliArgv } from './cli-command.js';
import { waitFor } from './wait-for.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

export interface Daemon {
  process: ChildProcess;
  /** Every pino line printed so far, parsed. */
  logs: Record<string, unknown>[];
  output(): string;
  waitForLog(match: (line: Record<string, unknown>) => boolean, what: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves with the exit code (or signal name). */
  exited: Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
}

/** SIGKILLs every daemon (for afterAll) and waits until each has exited. */
export async function killAll(daemons: readonly Daemon[]): Promise<void> {
  for (const daemon of daemons) {
    daemon.kill('SIGKILL');
    await daemon.exited;
  }
}

/** Writes a config object to a temp YAML file and returns its path. */
export function writeConfigFile(config: unknown, file?: string): string {
  const path = file ?? join(mkdtempSync(join(tmpdir(), 'switchyard-config-')), 'switchyard.yaml');
  writeFileSync(path, stringify(config));
  return path;
}

export function startDaemon(args: string[], env: Record<string, string> = {}, nodeArgs: readonly string[] = []): Daemon {
  const child = spawn(process.execPath, cliArgv(args, nodeArgs), {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let text = '';
  let partial = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    const data = chunk.toString('utf8');
    text += data;
    partial += data;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a pino line
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  const exited = new Promise<number | string>((resolveExit) => {
    child.once('exit', (code, signal) => resolveExit(code ?? signal ?? -1));
  });
  return {
    process: child,
    logs,
    output: () => text,
    async waitForLog(match, what, timeoutMs = 60_000) {
      return waitFor(() => logs.find(match), { timeoutMs, what: `${what}; output so far:\n${text.slice(-3000)}` });
    },
    exited,
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}

/** What a one-shot command printed, and how it exited. */
export interface CliRun {
  code: number | null;
  out: string;
  err: string;
}

/** Runs `switchyard <args>` (an operator command) as a child process, to its end. */
export function runCli(args: string[]): Promise<CliRun> {
  const child = spawn(process.execPath, cliArgv(args), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  return new Promise((resolveRun) => child.once('close', (code) => resolveRun({ code, out, err })));
}

/** Starts a role and waits until it logged "started". */
export async function startRole(role: string, configFile: string, env: Record<string, string> = {}): Promise<Daemon> {
  const daemon = startDaemon([role, '--config', configFile], env);
  await daemon.waitForLog((line) => line.msg === 'started', `${role} to start`, 90_000);
  return daemon;
}
