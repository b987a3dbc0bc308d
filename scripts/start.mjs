#!/usr/bin/env node
// `npm start`: the embedded default on one machine — a local Kafka broker
// (unless KAFKA_BROKERS is set), a demo webhook receiver on :4000, and
// `switchyard all --config config/example.yaml`.
//
//   npm start [-- --fresh] [--json] [--config PATH] [--kafka-port N] [--receiver-port N] [--state-dir DIR]
//
// It stops everything it started on Ctrl-C, SIGTERM, SIGHUP (a closed terminal), when
// its parent ends, and when its output goes away (`npm start | tee log`, then Ctrl-C);
// a reaper process stops the broker and the daemon should this script itself be killed.
// NOTE: package.json runs it as `exec node scripts/start.mjs`. npm runs a script through
// `sh -c` and passes a SIGINT or SIGTERM sent to its own pid (pm2, systemd, a test) only
// to that shell, which waits for its child or dies without telling it; with `exec` the
// shell becomes this script, so the signal lands here. A SIGHUP ends npm itself: this
// script then sees its parent gone (PARENT_POLL_MS).
//
// Its own lines (`start: …`) go to stdout with the daemon's logs and the webhooks, so
// `npm start | tee log` keeps them; usage errors and the reasons it could not start go
// to stderr, and so does everything once stdout is gone. The daemon's pino JSON lines are
// shown one line each, readable (pino-pretty), unless --json asks for them as they are.
// The broker's data lives in .cache/npm-start/kafka and is kept across runs (--fresh
// starts from nothing); .cache/npm-start/instance.json names the running instance.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prettyFactory } from 'pino-pretty';
import { startBroker } from './kafka/broker.mjs';
import { startDemoReceiver } from './demo-receiver.mjs';
import { canListen, isAlive, isAliveAs, listenerOf, terminate } from './processes.mjs';
import { startReaper } from './reaper.mjs';

/** How long the local broker may take to start before npm start gives up. */
const BROKER_START_TIMEOUT_MS = 300_000;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** Where the user typed `npm start`: npm runs scripts in the package's folder and names the user's in INIT_CWD. */
const userDir = process.env.INIT_CWD ?? process.cwd();
/** A path as the user best reads it: relative to userDir, unless that climbs out. */
const shown = (path) => {
  const rel = relative(userDir, path);
  return rel && !rel.startsWith('..') ? rel : path;
};

const EXIT_USAGE = 1;
const EXIT_RUNTIME = 2;
/** How long the daemon may take to drain (its own shutdownTimeout is 25 s in the example). */
const DAEMON_STOP_GRACE_MS = 40_000;
const PARENT_POLL_MS = 1_000;

const USAGE = `usage: npm start [-- OPTIONS]
  --fresh              start the local broker with empty data (removes the kept data first)
  --json               print the daemon's logs as the JSON lines it writes (default: one readable line each)
  --config PATH        the daemon's config (default config/example.yaml)
  --kafka-port N       the local broker's port (default 9092; 0 = a free port)
  --receiver-port N    the demo receiver's port (default 4000; the example config's webhooks follow it)
  --state-dir DIR      where the broker's data and the instance file live (default .cache/npm-start)
With KAFKA_BROKERS set, no local broker is started and that Kafka is used.`;

// ---- output that survives its reader going away --------------------------------------

/**
 * Writes to stdout/stderr that never throw. When the reader goes away (EPIPE from a
 * `| tee` that ended, EIO from a closed terminal) `onGone` is called once and later
 * writes to that stream are dropped.
 */
function guardedStream(stream, onGone) {
  let gone = false;
  const markGone = () => {
    if (gone) return;
    gone = true;
    onGone();
  };
  stream.on('error', markGone);
  return {
    gone: () => gone,
    write(text) {
      if (gone) return;
      try {
        stream.write(text);
      } catch {
        markGone();
      }
    },
  };
}

/**
 * The daemon's output as a person reads it: each pino JSON line as one line
 * `[12:00:03.412] INFO: started {"services":[…]}` (UTC; an error's stack follows it,
 * indented), anything else as it is. Chunks are cut anywhere: lines are put back together.
 */
function readableLogs(write, { colorize }) {
  const pretty = prettyFactory({ colorize, singleLine: true, translateTime: 'HH:MM:ss.l', ignore: 'service,pid,hostname' });
  let rest = '';
  const line = (text) => write(text.startsWith('{') ? pretty(text) : `${text}\n`);
  return {
    write(chunk) {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop();
      for (const text of lines) line(text);
    },
    end() {
      if (rest !== '') line(rest);
      rest = '';
    },
  };
}

// ---- arguments ----------------------------------------------------------------------

function parseArgs(argv) {
  const options = { fresh: false, json: false, config: join(root, 'config', 'example.yaml'), kafkaPort: 9092, receiverPort: 4000, stateDir: join(root, '.cache', 'npm-start') };
  const port = (flag, value) => {
    const n = Number(value);
    if (value === undefined || !Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`${flag} needs a port number (0-65535), got ${value ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = argv[i + 1];
    switch (arg) {
      case '--fresh':
        options.fresh = true;
        break;
      case '--json':
        options.json = true;
        break;
      case '--config':
        if (!value) throw new UsageError('--config needs a path');
        options.config = resolve(userDir, value);
        i++;
        break;
      case '--kafka-port':
        options.kafkaPort = port(arg, value);
        i++;
        break;
      case '--receiver-port':
        options.receiverPort = port(arg, value);
        if (options.receiverPort === 0) throw new UsageError('--receiver-port needs a fixed port: the config names it in its webhook URLs (the example through ${DEMO_RECEIVER_PORT})');
        i++;
        break;
      case '--state-dir':
        if (!value) throw new UsageError('--state-dir needs a path');
        options.stateDir = resolve(userDir, value);
        i++;
        break;
      case '--help':
      case '-h':
        options.help = true;
        break;
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  return options;
}

class UsageError extends Error {}

// ---- the instance file --------------------------------------------------------------

const ROLES = [
  { key: 'start', marker: 'start.mjs', what: 'npm start' },
  { key: 'daemon', marker: 'main.js', what: 'switchyard' },
  { key: 'broker', marker: 'kafka.Kafka', what: 'Kafka broker' },
];

/**
 * The instance file: which processes the running `npm start` owns. Created exclusively,
 * so of two starts at once one wins; a file whose processes are all gone is stale and
 * replaced.
 */
function claimInstance(file, record) {
  mkdirSync(dirname(file), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, JSON.stringify(record), { flag: 'wx' });
      return { ok: true };
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    let other;
    try {
      other = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      other = {};
    }
    const alive = ROLES.filter((role) => isAliveAs(other[role.key], role.marker));
    if (alive.length > 0) return { ok: false, other, alive };
    rmSync(file, { force: true });
  }
  return { ok: false, other: {}, alive: [] };
}

function describeOther(file, other, alive) {
  const list = alive.map((role) => `${role.what} pid ${other[role.key]}`).join(', ');
  const since = other.startedAt ? ` since ${other.startedAt}` : '';
  const stopHint = alive.some((role) => role.key === 'start')
    ? `Stop it with Ctrl-C in its terminal, or: kill ${other.start}`
    : `Its npm start is gone; stop what it left with: kill ${alive.map((role) => other[role.key]).join(' ')}`;
  const brokers = other.brokers ? ` Its Kafka: KAFKA_BROKERS=${other.brokers}.` : '';
  return `another npm start is running from this folder${since} (${list}).${brokers}\n  ${stopHint}\n  (its instance file: ${file})`;
}

async function describeTakenPort(port, host, what, instead) {
  const holder = listenerOf(port);
  const command = holder && holder.command.length > 120 ? `${holder.command.split(' ')[0]} … ${holder.command.slice(-80)}` : holder?.command;
  const who = holder
    ? `pid ${holder.pid} (${command}) listens there`
    : `something listens there (find it with: lsof -i :${port}  or  ss -ltnp 'sport = :${port}')`;
  let hint = holder ? `stop it (kill ${holder.pid}) and run npm start again` : 'stop it and run npm start again';
  if (holder?.command.includes('kafka.Kafka')) hint = `a Kafka broker, perhaps left by an earlier npm start or npm run kafka: ${hint}`;
  else if (holder?.command.includes('main.js')) hint = `a switchyard daemon, perhaps left by an earlier npm start: ${hint}`;
  return `${what} needs ${host}:${port}, but ${who}.\n  ${hint}; or ${instead}`;
}

// ---- main ---------------------------------------------------------------------------

async function main() {
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`start: ${error.message}\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }

  let stopRequested;
  // Until everything runs: remember the request; a broker still starting is stopped at
  // once (its start then fails, and the catch below stops the rest).
  let brokerStarting;
  let stop = (why) => {
    stopRequested ??= why;
    if (brokerStarting) void terminate(brokerStarting);
  };
  const out = guardedStream(process.stdout, () => stop('its output went away'));
  const err = guardedStream(process.stderr, () => stop('its output went away'));
  /** Progress: to stdout, with everything else the run prints (stderr once stdout is gone). */
  const say = (line) => (out.gone() ? err : out).write(`start: ${line}\n`);
  /** Why it could not start or run: to stderr. */
  const complain = (line) => err.write(`start: ${line}\n`);
  // From here on a signal, the parent's end or a closed output stops what was started.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(signal));
  const parent = process.ppid;
  if (parent > 1) {
    setInterval(() => {
      if (!isAlive(parent)) stop(`its parent (pid ${parent}) ended`);
    }, PARENT_POLL_MS).unref();
  }

  const cli = join(root, 'dist', 'cli', 'main.js');
  // The daemon, and the operator console's page script (its own project: browser code).
  for (const [built, project] of [
    [cli, 'tsconfig.build.json'],
    [join(root, 'dist', 'console', 'app.js'), join('console', 'tsconfig.json')],
  ]) {
    if (existsSync(built)) continue;
    say(`building (${shown(built)} is missing)`);
    const build = spawnSync('npx', ['tsc', '-p', project], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (build.status !== 0) return EXIT_RUNTIME;
  }

  // The config as the daemon will read it, to check its ports before starting anything.
  const { loadConfigFile } = await import(pathToFileURL(join(root, 'dist', 'config', 'load.js')).href);
  const env = { ...process.env };
  // The example config has no built-in admin token (docs/operations.md#security): unless
  // the user set one, this run gets a random one, kept in the state folder for curl.
  const adminTokenGenerated = !env.SWITCHYARD_ADMIN_TOKEN;
  if (adminTokenGenerated) env.SWITCHYARD_ADMIN_TOKEN = randomBytes(24).toString('hex');
  // The example config's webhook URLs name the demo receiver's port through this variable.
  env.DEMO_RECEIVER_PORT = String(options.receiverPort);
  const ownBroker = !env.KAFKA_BROKERS;
  if (ownBroker) env.KAFKA_BROKERS = `127.0.0.1:${options.kafkaPort || 9092}`;
  const loaded = loadConfigFile(options.config, env);
  if (!loaded.ok) {
    for (const line of loaded.errors) complain(line);
    return EXIT_USAGE;
  }
  const config = loaded.config;

  const instanceFile = join(options.stateDir, 'instance.json');
  const record = { start: process.pid, startedAt: new Date().toISOString(), config: options.config };
  const claim = claimInstance(instanceFile, record);
  if (!claim.ok) {
    complain(describeOther(instanceFile, claim.other, claim.alive));
    return EXIT_USAGE;
  }
  const saveRecord = () => writeFileSync(instanceFile, JSON.stringify(record));
  const adminTokenFile = join(options.stateDir, 'admin-token');
  if (adminTokenGenerated) writeFileSync(adminTokenFile, `${env.SWITCHYARD_ADMIN_TOKEN}\n`, { mode: 0o600 });
  const releaseInstance = () => {
    try {
      if (JSON.parse(readFileSync(instanceFile, 'utf8')).start === process.pid) rmSync(instanceFile, { force: true });
    } catch {
      // gone already
    }
  };

  const wanted = [
    ...(ownBroker && options.kafkaPort !== 0
      ? [{ port: options.kafkaPort, host: '127.0.0.1', what: 'the local Kafka broker', instead: 'start it on another port: npm start -- --kafka-port N (0: a free one)' }]
      : []),
    { port: options.receiverPort, host: '127.0.0.1', what: 'the demo receiver', instead: 'run it on another port: npm start -- --receiver-port N' },
    {
      port: config.gateway.port,
      host: config.gateway.host,
      what: `the gateway (gateway.port in ${shown(options.config)})`,
      instead: 'give gateway.port another value in a copy of the config: npm start -- --config PATH',
    },
    {
      port: config.admin.port,
      host: config.admin.host,
      what: `the admin server (admin.port in ${shown(options.config)})`,
      instead: 'give admin.port another value in a copy of the config: npm start -- --config PATH',
    },
  ];
  for (const { port, host, what, instead } of wanted) {
    if (port !== 0 && !(await canListen(port, host))) {
      releaseInstance();
      complain(await describeTakenPort(port, host, what, instead));
      return EXIT_USAGE;
    }
  }

  if (stopRequested) {
    releaseInstance();
    return 0;
  }

  // NOTE: from here on, anything started is also handed to the reaper, which stops it
  // should this script end without doing so (SIGKILL, a crash).
  const reaper = startReaper();
  record.reaper = reaper.pid;
  saveRecord();
  const watch = { add: reaper.watch, remove: reaper.forget };
  let broker;
  let brokerPid;
  let receiver;
  let daemon;

  const stopEverything = async (why, code) => {
    stop = () => undefined;
    if (why) say(`stopping (${why})`);
    if (daemon && daemon.exitCode === null && daemon.signalCode === null) {
      say('stopping switchyard');
      const exited = new Promise((resolveExit) => daemon.once('exit', resolveExit));
      daemon.kill('SIGTERM');
      const timer = setTimeout(() => daemon.kill('SIGKILL'), DAEMON_STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    receiver?.close();
    if (broker) {
      say('stopping the Kafka broker (its data stays for the next start)');
      await broker.stop({ keepData: true });
    } else if (brokerPid) {
      // Stopped while the broker was still starting.
      await terminate(brokerPid);
    }
    releaseInstance();
    return code;
  };

  try {
    let brokers = env.KAFKA_BROKERS;
    if (ownBroker) {
      const kafkaDir = join(options.stateDir, 'kafka');
      const kept = existsSync(join(kafkaDir, 'data', 'meta.properties'));
      if (options.fresh && existsSync(kafkaDir)) rmSync(kafkaDir, { recursive: true, force: true });
      const where = shown(kafkaDir);
      say(
        options.fresh || !kept
          ? `starting a local Kafka broker with empty data in ${where}`
          : `starting a local Kafka broker on the data kept in ${where} (npm start -- --fresh starts empty)`,
      );
      broker = await startBroker({
        port: options.kafkaPort === 0 ? undefined : options.kafkaPort,
        // NOTE: a JVM starting on a machine busy with other work (a test suite starting
        // brokers of its own) has taken over the default 2 minutes; wait longer before
        // giving up.
        startTimeoutMs: BROKER_START_TIMEOUT_MS,
        log: say,
        detached: true,
        baseDir: kafkaDir,
        watch: {
          add: (pid) => {
            brokerPid = pid;
            brokerStarting = pid;
            record.broker = pid;
            saveRecord();
            watch.add(pid);
          },
          remove: watch.remove,
        },
      });
      brokerStarting = undefined;
      brokers = broker.brokers;
      record.brokers = brokers;
      saveRecord();
      say(`Kafka ready at ${brokers} (pid ${broker.pid}, log ${shown(broker.logFile)})`);
    }
    if (stopRequested) return await stopEverything(stopRequested, 0);

    const secret = process.env.HOOKS_MAIN_SECRET ?? 'demo-shared-secret';
    receiver = await startDemoReceiver({ port: options.receiverPort, secret, print: (line) => out.write(`\n>>> ${line}\n\n`) });
    say(`demo receiver listening on http://127.0.0.1:${options.receiverPort}`);

    daemon = spawn(process.execPath, [cli, 'all', '--config', options.config], {
      cwd: root,
      env: { ...process.env, KAFKA_BROKERS: brokers, SWITCHYARD_ADMIN_TOKEN: env.SWITCHYARD_ADMIN_TOKEN, DEMO_RECEIVER_PORT: env.DEMO_RECEIVER_PORT },
      // NOTE: its output passes through this script rather than being inherited: when
      // the reader goes away only this script notices (and stops everything), instead of
      // the daemon dying on EPIPE mid-drain while the broker runs on.
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: Ctrl-C reaches only this script, which stops the daemon
      // first and the broker after it.
      detached: true,
    });
    if (options.json) daemon.stdout.on('data', (chunk) => out.write(chunk));
    else {
      const logs = readableLogs((text) => out.write(text), { colorize: Boolean(process.stdout.isTTY) });
      daemon.stdout.setEncoding('utf8');
      daemon.stdout.on('data', (chunk) => logs.write(chunk));
      daemon.stdout.on('end', () => logs.end());
    }
    daemon.stderr.on('data', (chunk) => err.write(chunk));
    const daemonPid = daemon.pid;
    if (daemonPid !== undefined) {
      watch.add(daemonPid);
      record.daemon = daemonPid;
      saveRecord();
    }
    const daemonExited = new Promise((resolveExit) => daemon.once('exit', (code, signal) => resolveExit({ code, signal })));
    void daemonExited.then(() => daemonPid !== undefined && watch.remove(daemonPid));
    say(
      `switchyard all (pid ${daemonPid}): gateway http://127.0.0.1:${config.gateway.port}, admin http://127.0.0.1:${config.admin.port}/metrics`,
    );
    say(`for the CLI against this Kafka: KAFKA_BROKERS=${brokers} ${shown(join(root, 'bin', 'switchyard'))} dlq list --destination hooks-main --config ${shown(options.config)}`);
    if (adminTokenGenerated) {
      say(`admin API token for this run (SWITCHYARD_ADMIN_TOKEN was not set): curl -H "Authorization: Bearer $(cat ${shown(adminTokenFile)})" ...`);
    }
    say(`operator console: http://127.0.0.1:${config.admin.port}/console (it asks for the admin token)`);
    say('Ctrl-C stops everything');

    const stopped = new Promise((resolveStop) => {
      stop = (why) => resolveStop({ why });
      if (stopRequested) stop(stopRequested);
    });
    const ended = await Promise.race([stopped, daemonExited.then((exit) => ({ exit }))]);
    if (ended.exit) {
      complain(`switchyard exited (${ended.exit.signal ?? ended.exit.code})`);
      return await stopEverything(undefined, ended.exit.code || EXIT_RUNTIME);
    }
    return await stopEverything(ended.why, 0);
  } catch (error) {
    if (stopRequested) return await stopEverything(stopRequested, 0);
    complain(error.message);
    return await stopEverything(undefined, EXIT_RUNTIME);
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`start: ${error.stack ?? error}\n`);
    process.exit(EXIT_RUNTIME);
  },
);
