// A test run stopped by a signal, as a person stops `npm test` (Ctrl-C, or SIGINT to
// vitest's pid): the Kafka broker the run started is stopped and its data in /dev/shm
// removed, although vitest then skips its global teardown (the broker's reaper does it:
// scripts/kafka/broker.mjs, scripts/reaper.mjs).
//
// NOTE: this starts its own vitest run without KAFKA_BROKERS, so a broker of its own (a
// JVM): never the shared one of the run around it.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Running, and not a zombie. */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

it.each(['SIGINT', 'SIGTERM'] as const)(
  '%s to vitest stops the broker it started and removes its data',
  async (signal) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'KAFKA_BROKERS' && !name.startsWith('VITEST')));
    const vitest = spawn(process.execPath, [resolve(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'test/support/signal-fixture/vitest.config.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    vitest.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
    vitest.stdout.resume();
    const exited = new Promise((resolveExit) => vitest.once('exit', (code, sig) => resolveExit(code ?? sig)));
    let jvm: number | undefined;
    let dataDir: string | undefined;
    try {
      await waitFor(() => err.includes('fixture: waiting'), { timeoutMs: 240_000, what: "the inner run's broker and its test to start" });
      const started = /^test broker: 127\.0\.0\.1:\d+ \(pid (\d+), data in (\S+)\)$/m.exec(err);
      expect(started, err).not.toBeNull();
      jvm = Number(started![1]);
      dataDir = started![2]!;
      expect(running(jvm)).toBe(true);
      expect(existsSync(dataDir)).toBe(true);

      vitest.kill(signal);
      await exited;
      await waitFor(() => !running(jvm!), { timeoutMs: 60_000, what: `the broker (pid ${jvm}) to be stopped` });
      await waitFor(() => !existsSync(dataDir!), { timeoutMs: 30_000, what: `${dataDir} to be removed` });
    } finally {
      if (vitest.exitCode === null && vitest.signalCode === null) vitest.kill('SIGKILL');
      if (jvm !== undefined && running(jvm)) process.kill(jvm, 'SIGKILL');
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    }
  },
  360_000,
);
