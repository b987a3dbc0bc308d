// The system under test, as in production: a Kafka broker of its own (so that its
// restarts disturb no other test) and each role as a separate `switchyard <role>`
// process, killed and restarted by the fault schedule. Every exit the harness did not
// cause is recorded as a crash; every role's output is kept in the run's log folder.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, renameSync, writeFileSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { cliArgv } from '../support/cli-command.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const STARTED_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 30_000;
const KEPT_LINES = 40;

export const ROLES = ['gateway', 'router', 'deliverer'] as const;
export type RoleName = (typeof ROLES)[number];

/** The handle of scripts/kafka/broker.mjs's `startBroker`. */
export interface DedicatedBroker {
  brokers: string;
  port: number;
  logFile: string;
  readonly pid: number | undefined;
  stopProcess(): Promise<void>;
  startProcess(): Promise<void>;
  stop(options?: { keepData?: boolean }): Promise<void>;
}

export async function startDedicatedBroker(log: (line: string) => void): Promise<DedicatedBroker> {
  // @ts-expect-error -- plain ESM script shared with `npm run kafka`
  const { startBroker } = (await import('../../scripts/kafka/broker.mjs')) as {
    startBroker(options?: { heapMb?: number; log?: (line: string) => void; inMemory?: boolean }): Promise<DedicatedBroker>;
  };
  return startBroker({ heapMb: 512, log, inMemory: true });
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** A process exit the harness did not ask for. */
export interface UnexpectedExit {
  role: RoleName;
  pid: number | undefined;
  exit: string;
  atMs: number;
  lastLines: string[];
}

export interface LogCounts {
  warn: number;
  error: number;
  fatal: number;
}

/**
 * One role: at most one live process at a time, started again after a kill. Its
 * logs go to `<logDir>/<role>-<generation>.log`.
 */
export class RoleProcess {
  private child: ChildProcess | undefined;
  private expectingExit = false;
  private exited: Promise<string> = Promise.resolve('not started');
  private generation = 0;
  private lastLines: string[] = [];
  readonly logCounts: LogCounts = { warn: 0, error: 0, fatal: 0 };
  /** Messages of error and fatal lines (first few), for the report. */
  readonly errorMessages = new Map<string, number>();
  private readonly logWaiters = new Set<{ msg: string; seen: () => void }>();

  constructor(
    readonly role: RoleName,
    readonly configFile: string,
    readonly adminPort: number,
    private readonly logDir: string,
    private readonly onUnexpectedExit: (exit: UnexpectedExit) => void,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Spawns the role and resolves once it logged "started". */
  async start(): Promise<void> {
    this.generation += 1;
    this.expectingExit = false;
    const env: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'info' };
    // NOTE: the composition root lets KAFKA_BROKERS override the config; a test run
    // sets it for the shared test broker, and the roles must use the chaos broker.
    delete env.KAFKA_BROKERS;
    delete env.SWITCHYARD_CONFIG;
    const child = spawn(process.execPath, cliArgv([this.role, '--config', this.configFile]), {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const file: WriteStream = createWriteStream(join(this.logDir, `${this.role}-${this.generation}.log`));
    let started: () => void = () => undefined;
    const startedSeen = new Promise<void>((resolveStarted) => {
      started = resolveStarted;
    });
    let partial = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      file.write(chunk);
      partial += chunk.toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) this.onLine(line, started);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      file.write(chunk);
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') this.keep(line);
    });
    this.exited = new Promise<string>((resolveExit) => {
      child.once('exit', (code, signal) => {
        file.end();
        const exit = signal ?? `exit code ${String(code)}`;
        if (!this.expectingExit) {
          this.onUnexpectedExit({ role: this.role, pid: child.pid, exit, atMs: Date.now(), lastLines: [...this.lastLines] });
        }
        resolveExit(exit);
      });
    });
    const outcome = await Promise.race([
      startedSeen.then(() => 'started' as const),
      this.exited.then((exit) => ({ exit })),
      new Promise<'timeout'>((resolveTimeout) => setTimeout(resolveTimeout, STARTED_TIMEOUT_MS, 'timeout').unref()),
    ]);
    if (outcome === 'started') return;
    const why = outcome === 'timeout' ? `did not log "started" within ${STARTED_TIMEOUT_MS} ms` : `exited (${outcome.exit}) before it started`;
    throw new Error(`${this.role} ${why}; last lines:\n${this.lastLines.slice(-10).join('\n')}`);
  }

  /** SIGKILL: no shutdown code runs, as when a node dies or the OOM killer strikes. */
  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    this.expectingExit = true;
    child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM and wait: resolves with how it exited ("exit code 0" when clean). */
  async stop(): Promise<string> {
    const child = this.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return this.exited;
    this.expectingExit = true;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves once `times` more log lines (of any generation) have `msg` as their message; rejects after `timeoutMs`. */
  waitForLog(msg: string, times: number, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let left = times;
      const waiter = {
        msg,
        seen: () => {
          left -= 1;
          if (left > 0) return;
          clearTimeout(timer);
          this.logWaiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.logWaiters.delete(waiter);
        reject(new Error(`${this.role} logged "${msg}" ${times - left} of ${times} times within ${timeoutMs} ms`));
      }, timeoutMs);
      this.logWaiters.add(waiter);
    });
  }

  running(): boolean {
    const child = this.child;
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  private keep(line: string): void {
    this.lastLines.push(line.length > 2_000 ? `${line.slice(0, 2_000)}…` : line);
    if (this.lastLines.length > KEPT_LINES) this.lastLines.shift();
  }

  private onLine(line: string, started: () => void): void {
    if (line.trim() === '') return;
    this.keep(line);
    let entry: { level?: unknown; msg?: unknown };
    try {
      entry = JSON.parse(line) as { level?: unknown; msg?: unknown };
    } catch {
      return;
    }
    if (entry.msg === 'started') started();
    for (const waiter of this.logWaiters) if (entry.msg === waiter.msg) waiter.seen();
    const level = typeof entry.level === 'number' ? entry.level : 0;
    if (level >= 40 && level < 50) this.logCounts.warn += 1;
    if (level >= 50) {
      if (level >= 60) this.logCounts.fatal += 1;
      else this.logCounts.error += 1;
      const message = String(entry.msg).slice(0, 160);
      this.errorMessages.set(message, (this.errorMessages.get(message) ?? 0) + 1);
    }
  }
}

/**
 * Writes one role's config file (same content for all roles but the admin port). The
 * file is replaced whole (a rename), so a role reloading it never reads half of it.
 */
export function writeRoleConfig(logDir: string, role: RoleName, config: Record<string, unknown>): string {
  const file = join(logDir, `${role}.yaml`);
  writeFileSync(`${file}.next`, stringify(config));
  renameSync(`${file}.next`, file);
  return file;
}
