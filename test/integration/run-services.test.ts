// runServices (src/runtime/run-services.ts) in a real process, with stand-in services
// (test/support/run-services-fixture.ts): exit codes on signals, a failed start,
// and crashes that nothing caught. The same with the real daemon and Kafka:
// lifecycle-sigterm.test.ts and lifecycle-forced-exit.test.ts.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../support/wait-for.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

interface Fixture {
  logs: Record<string, unknown>[];
  kill(signal: NodeJS.Signals): void;
  exited: Promise<number | string>;
  waitForLog(msg: string): Promise<Record<string, unknown>>;
}

function runFixture(scenario: string, shutdownTimeoutMs = 5_000): Fixture {
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(ROOT, 'test/support/run-services-fixture.ts'), scenario, String(shutdownTimeoutMs)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: Record<string, unknown>[] = [];
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  const exited = new Promise<number | string>((done) => child.once('exit', (code, signal) => done(code ?? signal ?? -1)));
  return {
    logs,
    kill: (signal) => child.kill(signal),
    exited,
    waitForLog: (msg) => waitFor(() => logs.find((line) => line.msg === msg), { timeoutMs: 20_000, what: `log "${msg}"` }),
  };
}

const messages = (fixture: Fixture) => fixture.logs.map((line) => (line.fixture ? `${String(line.fixture)}: ${String(line.msg)}` : String(line.msg)));

describe('runServices in a process', () => {
  it('SIGTERM: stops the services in reverse order and exits 0', async () => {
    const fixture = runFixture('clean');
    await fixture.waitForLog('started');
    fixture.kill('SIGTERM');
    expect(await fixture.exited).toBe(0);
    expect(messages(fixture).slice(-7)).toEqual([
      'shutting down',
      'second: fixture service stopping',
      'second: fixture service stopped',
      'first: fixture service stopping',
      'first: fixture service stopped',
      'stopped cleanly',
      'fixture finished',
    ]);
  });

  it('a second SIGTERM during a slow stop exits 2 at once', async () => {
    const fixture = runFixture('slow-stop');
    await fixture.waitForLog('started');
    fixture.kill('SIGTERM');
    await fixture.waitForLog('fixture service stopping');
    fixture.kill('SIGTERM');
    expect(await fixture.exited).toBe(2);
    expect(fixture.logs.find((line) => line.msg === 'second signal: exiting now')).toMatchObject({ signal: 'SIGTERM' });
  });

  it('the shutdown timeout cuts a slow stop off with exit 2', async () => {
    const fixture = runFixture('slow-stop', 1_000);
    await fixture.waitForLog('started');
    fixture.kill('SIGTERM');
    expect(await fixture.exited).toBe(2);
    expect(fixture.logs.find((line) => String(line.msg).startsWith('shutdown timed out'))).toMatchObject({ level: 50, timeoutMs: 1_000 });
  });

  it('a service that cannot start: the ones started are stopped, exit 2', async () => {
    const fixture = runFixture('start-failure');
    expect(await fixture.exited).toBe(2);
    expect(fixture.logs.find((line) => line.msg === 'could not start second')).toMatchObject({ level: 60, err: { message: 'second could not reach its broker' } });
    expect(messages(fixture)).toContain('first: fixture service stopped');
    expect(messages(fixture)).not.toContain('third: fixture service started');
  });

  it.each([
    ['unhandled-rejection', 'unhandled promise rejection; exiting so the orchestrator restarts the process', 'a promise nobody awaited failed'],
    ['uncaught-exception', 'uncaught exception; exiting so the orchestrator restarts the process', 'a callback threw'],
  ])('%s: logged as fatal, exit 2', async (scenario, msg, error) => {
    const fixture = runFixture(scenario);
    expect(await fixture.exited).toBe(2);
    expect(fixture.logs.find((line) => line.msg === msg)).toMatchObject({ level: 60, err: { message: error } });
  });
});
