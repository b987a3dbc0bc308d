#!/usr/bin/env node
// A single-node KRaft Kafka broker run from Apache Kafka's own jars, for tests,
// benchmarks and `npm start` on machines without a Docker engine.
//
//   node scripts/kafka/broker.mjs [--port N] [--in-memory] [--jvm server]
//     prints the bootstrap address; Ctrl-C, SIGTERM or SIGHUP stops it. --in-memory: its
//     data in /dev/shm (see startBroker); --jvm server: Kafka's own JVM settings (see JVM).
//
// The jars are resolved from Maven Central with Maven (scripts/kafka/pom.xml)
// into .cache/kafka/<version>/lib, once. Java 17+ and Maven must be on PATH.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { canListen } from '../processes.mjs';
import { startReaper } from '../reaper.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, '..', '..');
const pomFile = join(here, 'pom.xml');

function kafkaVersion() {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(pomFile, 'utf8'));
  if (!match) throw new Error(`${pomFile}: no <kafka.version> property`);
  return match[1];
}

/** Resolves the broker jars into the cache (once) and returns the lib folder. */
export function ensureKafkaJars({ log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  const version = kafkaVersion();
  const lib = join(projectRoot, '.cache', 'kafka', version, 'lib');
  const marker = join(lib, '.complete');
  if (existsSync(marker)) return lib;
  log(`kafka: resolving Apache Kafka ${version} jars from Maven Central into ${lib} (first run only)`);
  mkdirSync(lib, { recursive: true });
  // NOTE: Debian's Maven 3.8 prints colour resets (ESC[0m) even with -B and
  // -Dstyle.color=never, so its output is taken and passed on without escape codes.
  const mvn = spawnSync(
    'mvn',
    ['-q', '-B', '-Dstyle.color=never', '-f', pomFile, 'dependency:copy-dependencies', `-DoutputDirectory=${lib}`, '-DincludeScope=runtime'],
    { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  const said = stripVTControlCharacters(`${mvn.stdout ?? ''}${mvn.stderr ?? ''}`);
  for (const line of said.split('\n')) if (line.trim() !== '') log(`maven: ${line.trimEnd()}`);
  if (mvn.error) {
    throw new Error(`kafka: could not run Maven (${mvn.error.message}); install Maven and Java 17+, or set KAFKA_BROKERS to an existing broker`);
  }
  if (mvn.status !== 0) {
    throw new Error(`kafka: Maven failed to resolve the broker jars (exit ${mvn.status}); see its output above`);
  }
  writeFileSync(marker, new Date().toISOString());
  return lib;
}

export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

function clusterId() {
  // KRaft wants a base64url-encoded 16-byte UUID (22 characters, no padding).
  // NOTE: one in 64 of those starts with "-", which the storage tool's argument parser
  // takes for an option ("--cluster-id: expected one argument"): draw again.
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function serverProperties({ port, controllerPort, dataDir }) {
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${dataDir}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    // NOTE: the default of 50 offsets partitions makes the first group join slow on a laptop.
    'offsets.topic.num.partitions=8',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    // NOTE: a killed process's open transaction ends once its timeout passed and this check
    // runs (10 s by default): checked every second, its partitions wait ~10 s, not ~20 s (docs/kafka.md#transactions).
    'transaction.abort.timed.out.transaction.cleanup.interval.ms=1000',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=true',
    'log.segment.bytes=67108864',
    '',
  ].join('\n');
}

const LOG4J = [
  'status = warn',
  'appender.out.type = Console',
  'appender.out.name = out',
  'appender.out.layout.type = PatternLayout',
  'appender.out.layout.pattern = [%d] %p %m (%c)%n',
  'rootLogger.level = info',
  'rootLogger.appenderRef.out.ref = out',
  'logger.state.name = state.change.logger',
  'logger.state.level = warn',
  '',
].join('\n');

function waitForPort(port, deadline) {
  return new Promise((resolveWait, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolveWait();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`kafka: nothing listens on port ${port}`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

/** How long a start on kept data waits for its controller port to be free again. */
const CONTROLLER_PORT_WAIT_MS = 60_000;

/**
 * The controller port an earlier run in `baseDir` used, once it can be bound again.
 * NOTE: the port came from the ephemeral range, so another process's outgoing
 * connection may hold it as its local port for a while (a test opening thousands of
 * loopback connections beside npm start did): the start waits for it rather than move
 * the kept quorum to another port, on which the broker never starts.
 */
async function previousControllerPort(propsFile, log) {
  if (!existsSync(propsFile)) return undefined;
  const match = /^controller\.quorum\.voters=1@127\.0\.0\.1:(\d+)$/m.exec(readFileSync(propsFile, 'utf8'));
  const port = match ? Number(match[1]) : undefined;
  if (port === undefined) return undefined;
  const deadline = Date.now() + CONTROLLER_PORT_WAIT_MS;
  let said = false;
  while (!(await canListen(port, '127.0.0.1'))) {
    if (Date.now() > deadline) {
      log?.(`kafka: the kept data's controller port ${port} is still in use after ${CONTROLLER_PORT_WAIT_MS / 1000} s; starting on another port (if the broker then does not start, start with fresh data)`);
      return undefined;
    }
    if (!said) log?.(`kafka: waiting for the kept data's controller port ${port} to be free`);
    said = true;
    await new Promise((resolveWait) => setTimeout(resolveWait, 250));
  }
  return port;
}

/**
 * Starts a broker and resolves once it logged "Kafka Server started" and
 * accepts connections. `restart()` stops it and starts it again on the same
 * ports and data (for broker-restart tests); `stop()` kills it by its pid and,
 * unless keepData, removes the data folder.
 * `detached` (for `npm start`) keeps a terminal's Ctrl-C from reaching the JVM.
 * `baseDir` (for `npm start`) keeps config, data and log there across runs instead of
 * in a fresh temporary folder; `stop()` then never removes it.
 * `watch` is told each JVM pid as it starts ({ add(pid), remove(pid) }), for a reaper,
 * and the temporary folder (removeAtEnd(dir), when it has it). Without one, the broker
 * gets a reaper of its own: should the calling process end without stop() (a test runner
 * stopped by SIGINT, which skips its teardown), the reaper stops the JVM and removes the
 * temporary folder.
 * `inMemory` makes the fresh temporary folder in /dev/shm where the machine has it.
 *
 * NOTE: inMemory is for the tests, benches and chaos harness: on a disk like this
 * machine's a broker writes slowly for a while after the kernel flushed its index pages
 * (each page written again faults, in system time): 20,000 records to 1,000 fresh topics
 * took 31 s to write 15 s after the first 20,000 took 1 s (0.5 s in memory), and a broker
 * restart once took over 2 minutes. That measures the disk, not Switchyard.
 * `jvm`: the JVM settings (JVM below): 'test' by default, 'server' for benchmarks.
 */
export async function startBroker({ port, heapMb, startTimeoutMs = 120_000, log, detached = false, baseDir: keptDir, inMemory = false, watch: given, jvm = 'test' } = {}) {
  const jvmSettings = Object.hasOwn(JVM, jvm) ? JVM[jvm] : undefined;
  if (jvmSettings === undefined) throw new Error(`kafka: jvm takes ${Object.keys(JVM).join(' or ')}, not ${jvm}`);
  const lib = ensureKafkaJars({ log });
  const watch = given ?? reaperWatch(startReaper());
  const brokerPort = port ?? (await freePort());
  const parentDir = inMemory && existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const baseDir = keptDir ?? mkdtempSync(join(parentDir, 'switchyard-kafka-'));
  mkdirSync(baseDir, { recursive: true });
  if (keptDir === undefined) watch.removeAtEnd?.(baseDir);
  const dataDir = join(baseDir, 'data');
  const propsFile = join(baseDir, 'server.properties');
  const log4jFile = join(baseDir, 'log4j2.properties');
  const logFile = join(baseDir, 'broker.log');
  // NOTE: kept data remembers its controller quorum; the same controller port keeps a
  // restart from looking like a moved voter.
  const controllerPort = (await previousControllerPort(propsFile, log)) ?? (await freePort());
  writeFileSync(propsFile, serverProperties({ port: brokerPort, controllerPort, dataDir }));
  writeFileSync(log4jFile, LOG4J);
  const classpath = `${lib}/*`;
  const jvmArgs = [
    ...jvmSettings.args(heapMb ?? jvmSettings.heapMb),
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${log4jFile}`,
    '-cp',
    classpath,
  ];
  // Kept data was formatted by an earlier run (its meta.properties holds the cluster id).
  if (!existsSync(join(dataDir, 'meta.properties'))) {
    const format = spawnSync('java', [...jvmArgs, 'kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', propsFile], {
      encoding: 'utf8',
    });
    if (format.error) throw new Error(`kafka: could not run java (${format.error.message}); install Java 17+`);
    if (format.status !== 0) throw new Error(`kafka: formatting the storage failed:\n${format.stdout}\n${format.stderr}`);
  }

  let child;
  const STARTED_LINE = 'Kafka Server started';
  const launch = async () => {
    const out = createWriteStream(logFile, { flags: 'a' });
    // NOTE: detached puts the JVM in its own process group, so a terminal's Ctrl-C
    // reaches only the parent, which stops the broker last, after its clients.
    child = spawn('java', [...jvmArgs, 'kafka.Kafka', propsFile], { stdio: ['ignore', 'pipe', 'pipe'], detached });
    const { pid } = child;
    if (pid !== undefined) {
      watch?.add(pid);
      child.once('exit', () => watch?.remove(pid));
    }
    const started = new Promise((resolveStart, reject) => {
      let seen = '';
      const timer = setTimeout(
        () => reject(new Error(`kafka: broker did not start within ${startTimeoutMs} ms; see ${logFile}`)),
        startTimeoutMs,
      );
      const onData = (chunk) => {
        out.write(chunk);
        // NOTE: the whole chunk is searched, with the end of the one before (a line cut in
        // two): a chunk of more than 4 KB (a broker loading many partitions of kept data
        // logs them in bursts) once hid the line when only the last 4 KB were kept.
        const text = seen + chunk.toString('utf8');
        seen = text.slice(-STARTED_LINE.length);
        if (text.includes(STARTED_LINE)) {
          clearTimeout(timer);
          resolveStart();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', (chunk) => out.write(chunk));
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        out.end();
        reject(new Error(`kafka: broker exited (${signal ?? code}) before it started; see ${logFile}`));
      });
    });
    await started;
    await waitForPort(brokerPort, Date.now() + 30_000);
  };

  const kill = () =>
    new Promise((resolveKill) => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolveKill();
      const forced = setTimeout(() => child.kill('SIGKILL'), 15_000);
      child.once('exit', () => {
        clearTimeout(forced);
        resolveKill();
      });
      child.kill('SIGTERM');
    });

  await launch();
  const brokers = `127.0.0.1:${brokerPort}`;
  return {
    brokers,
    port: brokerPort,
    logFile,
    dataDir: baseDir,
    get pid() {
      return child?.pid;
    },
    async restart() {
      await kill();
      await launch();
    },
    async stopProcess() {
      await kill();
    },
    async startProcess() {
      await launch();
    },
    async stop({ keepData = false } = {}) {
      await kill();
      if (!keepData && keptDir === undefined) rmSync(baseDir, { recursive: true, force: true });
    },
  };
}

/**
 * The broker's JVM settings: the default heap (MB) and the arguments for a heap size.
 * - test: quick to start and small (the tests start brokers often, on a 2-core machine):
 *   the serial collector and the first JIT tier only.
 * - server: what Kafka's own start scripts give a broker (kafka-server-start.sh's 1 GB
 *   heap, kafka-run-class.sh's G1 flags, every JIT tier), as a deployment runs it. For
 *   benchmarks: on the test settings, a broker serving 6,000 partitions spent as much CPU
 *   in its serial collector as in its request handlers (docs/benchmarks.md).
 */
const JVM = {
  test: { heapMb: 384, args: (heapMb) => [`-Xms${Math.min(heapMb, 256)}m`, `-Xmx${heapMb}m`, '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'] },
  server: {
    heapMb: 1024,
    args: (heapMb) => [
      `-Xms${heapMb}m`,
      `-Xmx${heapMb}m`,
      '-server',
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-XX:InitiatingHeapOccupancyPercent=35',
      '-XX:+ExplicitGCInvokesConcurrent',
      '-XX:MaxInlineLevel=15',
    ],
  },
};

function reaperWatch(reaper) {
  return { add: reaper.watch, remove: reaper.forget, removeAtEnd: reaper.removeAtEnd };
}

async function main() {
  const usage = 'usage: node scripts/kafka/broker.mjs [--port N] [--in-memory] [--jvm test|server]   (N = 0 picks a free port)\n';
  let values;
  try {
    ({ values } = parseArgs({ options: { port: { type: 'string', default: '9092' }, 'in-memory': { type: 'boolean', default: false }, jvm: { type: 'string', default: 'test' } } }));
  } catch (error) {
    process.stderr.write(`${error.message}\n${usage}`);
    process.exit(1);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || !Object.hasOwn(JVM, values.jvm)) {
    process.stderr.write(usage);
    process.exit(1);
  }
  // The reaper stops the JVM should this script end without stopping it (a SIGKILL).
  const reaper = startReaper();
  let stopping = false;
  let broker;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Stopped while starting: the reaper stops the JVM as this process ends.
    if (!broker) process.exit(130);
    broker.stop().then(() => process.exit(0), () => process.exit(2));
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, stop);
  broker = await startBroker({ port: port === 0 ? undefined : port, watch: reaperWatch(reaper), inMemory: values['in-memory'], jvm: values.jvm });
  process.stdout.write(`${broker.brokers}\n`);
  process.stderr.write(`kafka: broker ready at ${broker.brokers} (pid ${broker.pid}, log ${broker.logFile}); Ctrl-C stops it\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  });
}
