// `npm start` as a user runs it: `npm start -- …` (npm, then `node scripts/start.mjs`),
// with its own Kafka broker (a JVM), the demo receiver and `switchyard all`. Each way it
// can be ended must leave no broker, no daemon and no listener behind (checked by pid and
// port): SIGINT, SIGTERM and SIGHUP sent to npm's pid alone (as pm2, systemd or a closed
// terminal do), its output pipe closing, and the script itself killed outright. A second
// start beside a running one must say so and exit non-zero, a port taken is named with the
// option that avoids it, a healthy first start prints its logs one readable line each with
// no WARN or ERROR line among them (`--json` keeps the JSON lines), and the CLI line it
// prints works as printed.
//
// NOTE: every port is a free one and the state folder a temporary one, so this test
// never meets a real `npm start` (9092, 8080, 9464, 4000, .cache/npm-start) or the run's
// shared broker.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertDistFresh } from '../support/cli-command.js';
import { waitFor } from '../support/wait-for.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
// npm start gives its broker 300 s to start (scripts/start.mjs); the daemon's start follows.
const START_TIMEOUT_MS = 330_000;

interface Instance {
  broker: number;
  daemon: number;
  reaper: number;
  start: number;
}

interface Run {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  exited: Promise<number | string>;
}

let stateDir: string;
let config: string;
let gatewayPort: number;
let adminPort: number;
let receiverPort: number;
const runs: Run[] = [];
const pidsSeen: number[] = [];

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** Running, and not a zombie (an orphan this container's init may never reap). */
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

/** The stat field after the command name: state is the first (0), the parent's pid the second. */
function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** True when something could listen on 127.0.0.1:port now. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () => server.close(() => resolveFree(true)));
  });
}

/**
 * Starts the stack. `npm`: `npm start -- …`, as a user types it (the child is npm, whose
 * pid process managers signal); `script`: `node scripts/start.mjs …` directly.
 */
function npmStart(args: string[], via: 'npm' | 'script' = 'npm'): Run {
  // The environment of a user's shell: without the run's shared broker (npm start starts
  // a broker of its own), without the npm_* settings of an outer `npm test`, and without
  // the node_modules/.bin an outer npm put first on PATH, so npm runs on the machine's
  // own Node (perhaps older than engines.node) as it does for a user.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'KAFKA_BROKERS' && !name.toLowerCase().startsWith('npm_')));
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !/node_modules\/\.bin\/?$/.test(dir))
    .join(':');
  const own = ['--state-dir', stateDir, '--config', config, ...args];
  const [command, argv] = via === 'npm' ? ['npm', ['start', '--', ...own]] : [process.execPath, [join(ROOT, 'scripts', 'start.mjs'), ...own]];
  const child = spawn(command, argv, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number | string>((resolveExit) => child.once('exit', (code, signal) => resolveExit(code ?? signal ?? -1)));
  const run = { child, stdout: () => out, stderr: () => err, exited };
  runs.push(run);
  return run;
}

/** The daemon's "started" line: as JSON (`--json`), or as npm start shows it by default. */
const STARTED = { json: /^\{.*"msg":"started"/m, readable: /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: started \{"services":\[/m };

/** Waits for the daemon's "started" line and returns the pids npm start recorded. */
async function started(run: Run, form: keyof typeof STARTED = 'json'): Promise<Instance> {
  const up = waitFor(() => STARTED[form].test(run.stdout()), { timeoutMs: START_TIMEOUT_MS, what: 'npm start to be up' });
  const early = run.exited.then((code) => {
    throw new Error(`npm start exited (${code}) before it was up`);
  });
  try {
    await Promise.race([up, early]);
  } catch (error) {
    // The broker's own log says why it did not start; the state folder is removed after the run.
    const brokerLog = join(stateDir, 'kafka', 'broker.log');
    const brokerTail = existsSync(brokerLog) ? readFileSync(brokerLog, 'utf8').slice(-3000) : '(no broker log)';
    throw new Error(`${(error as Error).message}; its stderr:\n${run.stderr().slice(-3000)}\nthe end of its stdout (the daemon's log):\n${run.stdout().slice(-3000)}\nthe end of ${brokerLog}:\n${brokerTail}`);
  } finally {
    early.catch(() => undefined);
    up.catch(() => undefined);
  }
  const instance = JSON.parse(readFileSync(join(stateDir, 'instance.json'), 'utf8')) as Instance;
  pidsSeen.push(instance.start, instance.broker, instance.daemon, instance.reaper);
  expect(running(instance.broker)).toBe(true);
  expect(running(instance.daemon)).toBe(true);
  return instance;
}

async function expectAllGone(instance: Instance): Promise<void> {
  for (const [name, pid] of Object.entries(instance)) {
    if (typeof pid !== 'number') continue;
    await waitFor(() => !running(pid), { timeoutMs: 60_000, what: `${name} (pid ${pid}) to be gone` });
  }
  // Nothing listens any more where the stack did.
  for (const port of [gatewayPort, adminPort, receiverPort]) expect(await portFree(port), `port ${port} free`).toBe(true);
}

/** How the run ended, or a failure naming what did not end it. */
async function endOf(run: Run, what: string): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`npm start still runs 60 s after ${what}; its output:\n${run.stdout().slice(-2000)}`)), 60_000);
  });
  try {
    return await Promise.race([run.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** After a failed test: nothing of this run may survive into the next test. */
async function forceEnd(run: Run): Promise<void> {
  if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  await run.exited;
  for (const pid of pidsSeen) if (running(pid)) process.kill(pid, 'SIGKILL');
  await waitFor(() => pidsSeen.every((pid) => !running(pid)), { timeoutMs: 30_000, what: 'every process of the run to be gone' });
}

function levels(stdout: string): { level: number; msg: string }[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { level: number; msg: string });
}

beforeAll(async () => {
  // npm start runs the compiled daemon: the global setup compiled the sources under test (test/support/cli-command.ts).
  assertDistFresh();
  stateDir = mkdtempSync(join(tmpdir(), 'switchyard-npm-start-'));
  gatewayPort = await freePort();
  adminPort = await freePort();
  receiverPort = await freePort();
  // The example config on free ports (its webhooks follow --receiver-port).
  const example = readFileSync(join(ROOT, 'config', 'example.yaml'), 'utf8');
  const text = example.replace(/^(gateway:\n {2}port: )8080$/m, `$1${gatewayPort}`).replace(/^(admin:\n {2}port: )9464$/m, `$1${adminPort}`);
  expect(text).toContain(`port: ${gatewayPort}`);
  expect(text).toContain(`port: ${adminPort}`);
  config = join(stateDir, 'switchyard.yaml');
  writeFileSync(config, text);
}, 180_000);

afterAll(async () => {
  for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  for (const pid of pidsSeen) {
    if (running(pid)) process.kill(pid, 'SIGKILL');
  }
  rmSync(stateDir, { recursive: true, force: true });
}, 60_000);

const portArgs = () => ['--kafka-port', '0', '--receiver-port', String(receiverPort)];
const jsonArgs = () => [...portArgs(), '--json'];

/** Lines of the daemon's logs at WARN or above, as npm start shows them by default. */
const LOUD_READABLE = /^\[\d\d:\d\d:\d\d\.\d{3}\] (WARN|ERROR|FATAL):.*$/gm;

async function track(messageId: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${gatewayPort}/v1/track`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from('web-demo-key:').toString('base64')}` },
    body: JSON.stringify({ userId: 'u-1', event: 'Order Completed', messageId }),
  });
}

describe('npm start', () => {
  it('names a taken receiver port with the option that avoids it, before it starts anything', async () => {
    const holder = createServer();
    await new Promise<void>((listening) => holder.listen(receiverPort, '127.0.0.1', listening));
    try {
      const run = npmStart(portArgs(), 'script');
      expect(await run.exited).toBe(1);
      expect(run.stderr()).toContain(`start: the demo receiver needs 127.0.0.1:${receiverPort}, but `);
      expect(run.stderr()).toContain('or run it on another port: npm start -- --receiver-port N');
      expect(run.stdout()).not.toContain('starting a local Kafka broker');
    } finally {
      await new Promise((closed) => holder.close(closed));
    }
  });

  it(
    'starts clean on a fresh broker (readable lines, no WARN or ERROR), prints a CLI line that works as printed, refuses a second start beside it, and leaves nothing behind on SIGHUP to npm',
    async () => {
      const run = npmStart(['--fresh', ...portArgs()]);
      try {
        const instance = await started(run, 'readable');
        // `exec` in package.json: npm's child is the script itself, not a shell in between.
        expect(parentOf(instance.start)).toBe(run.child.pid);
        // Its own lines go to stdout with the rest (`npm start | tee log` keeps them).
        expect(run.stdout()).toContain('start: starting a local Kafka broker with empty data');
        // The daemon's logs one readable line each, none of them JSON; on a first start
        // (the broker loading its offsets topic) not one at WARN or above.
        expect(levels(run.stdout()), 'JSON lines without --json').toEqual([]);
        expect(run.stdout()).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gateway listening \{"component":"gateway",/m);
        expect(run.stdout().match(LOUD_READABLE) ?? [], 'WARN and ERROR lines on a healthy first start').toEqual([]);
        // The webhook reaches the demo receiver on --receiver-port (the example's URLs follow it).
        expect((await track('npm-start-readable-1')).status).toBe(200);
        await waitFor(() => run.stdout().includes('>>> webhook POST /segment (signature verified)'), { timeoutMs: 60_000, what: 'the demo receiver to print the webhook' });

        // The line for the CLI runs the checkout's own command, and works as printed.
        const hint = /^start: for the CLI against this Kafka: (KAFKA_BROKERS=127\.0\.0\.1:\d+ bin\/switchyard dlq list .*)$/m.exec(run.stdout());
        expect(hint, run.stdout().slice(-2000)).not.toBeNull();
        const cli = spawnSync('sh', ['-c', hint![1]!], { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH } });
        expect(cli.stderr).toBe('');
        expect(cli.stdout).toMatch(/^0 dead letter\(s\) of "hooks-main" in switchyard\.deliveries\.hooks-main\.dlq/);
        expect(cli.status).toBe(0);

        const second = npmStart(portArgs(), 'script');
        expect(await second.exited).toBe(1);
        expect(second.stderr()).toContain(`another npm start is running from this folder`);
        expect(second.stderr()).toContain(`kill ${instance.start}`);
        // The first one is untouched.
        expect(running(instance.broker) && running(instance.daemon)).toBe(true);

        // SIGHUP ends npm itself; the script sees its parent gone and stops the rest.
        run.child.kill('SIGHUP');
        expect(await endOf(run, "SIGHUP to npm's pid")).toBe('SIGHUP');
        await expectAllGone(instance);
        expect(run.stdout()).toContain(`start: stopping (its parent (pid ${run.child.pid}) ended)`);
      } finally {
        await forceEnd(run);
      }
    },
    START_TIMEOUT_MS + 60_000,
  );

  it.each(['SIGINT', 'SIGTERM'] as const)(
    'leaves nothing behind on %s to npm alone (a process manager signals only its pid)',
    async (signal) => {
      const run = npmStart(jsonArgs());
      try {
        const instance = await started(run);
        // --json: the daemon's lines as it writes them, none at WARN or above.
        expect(levels(run.stdout()).filter((line) => line.level >= 40)).toEqual([]);
        run.child.kill(signal);
        // npm passes the signal on and ends with the script, which waits for the daemon and the broker.
        expect(await endOf(run, `${signal} to npm's pid`)).toBe(0);
        expect(running(instance.broker)).toBe(false);
        expect(running(instance.daemon)).toBe(false);
        await expectAllGone(instance);
        expect(run.stdout()).toContain(`start: stopping (${signal})`);
      } finally {
        await forceEnd(run);
      }
    },
    START_TIMEOUT_MS + 60_000,
  );

  it(
    'stops everything when its output pipe closes (a `| tee` that ended), on the data kept from before',
    async () => {
      const run = npmStart(jsonArgs());
      try {
        const instance = await started(run);
        expect(run.stdout()).toContain('start: starting a local Kafka broker on the data kept in');
        // The reader goes away; the next thing npm start prints (the webhook, or a log line
        // of the daemon's that comes first: then the gateway may be gone before the call,
        // refused) hits EPIPE.
        run.child.stdout!.destroy();
        const sent = await track('npm-start-pipe-1').catch((error: unknown) => error);
        if (sent instanceof Response) expect(sent.status).toBe(200);
        else expect(String((sent as Error).cause ?? sent)).toContain('ECONNREFUSED');
        expect(await endOf(run, 'its output pipe closed')).toBe(0);
        // With stdout gone, its last lines go to stderr.
        expect(run.stderr()).toContain('start: stopping (its output went away)');
        expect(running(instance.broker)).toBe(false);
        expect(running(instance.daemon)).toBe(false);
        await expectAllGone(instance);
      } finally {
        await forceEnd(run);
      }
    },
    START_TIMEOUT_MS + 60_000,
  );

  it(
    'leaves nothing behind when the script is killed outright (SIGKILL): its reaper stops the daemon and the broker',
    async () => {
      const run = npmStart(jsonArgs(), 'script');
      try {
        const instance = await started(run);
        run.child.kill('SIGKILL');
        expect(await run.exited).toBe('SIGKILL');
        await expectAllGone(instance);
      } finally {
        await forceEnd(run);
      }
    },
    START_TIMEOUT_MS + 60_000,
  );
});
