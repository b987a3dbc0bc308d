// What the benchmarks (bench/<name>.ts) share: a broker to run against, their options,
// the config they load, how they wait for a consumer group, time a side and print a
// table; for the delivery benchmarks, a receiver in a child process and the records
// the router writes for the deliverer. Not a benchmark itself (bench/run.ts skips it).
// Benchmarks are not part of `npm test`: each prints a table against a same-run
// baseline and never fails a build.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseConfigText } from '../src/config/load.js';
import type { Config } from '../src/config/schema.js';
import { Admin as PlatformaticAdmin, Producer as PlatformaticProducer, stringSerializers } from '@platformatic/kafka';
import { createAdmin, createKafka } from '../src/kafka/index.js';
import type { KafkaAdmin, OutboundRecord } from '../src/kafka/index.js';
import { topicLag } from '../src/observability/consumer-lag.js';
import { silentLogger } from '../src/observability/logger.js';

/** A progress line on stderr (stdout carries only the result table). */
export function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

export interface Broker {
  /** Bootstrap address(es), comma-separated. */
  brokers: string;
  /** The broker's JVM, when known: started here, or found listening on the port in KAFKA_BROKERS (brokerPid). */
  pid?: number | undefined;
  stop(): Promise<void>;
}

/**
 * The broker in KAFKA_BROKERS when set (left running on stop), else a local KRaft
 * broker from Kafka's jars (scripts/kafka/broker.mjs) in memory, on the JVM settings
 * of Kafka's own start scripts (`jvm: 'server'`), stopped by `stop()`.
 *
 * NOTE: not the tests' JVM settings (the serial collector, the first JIT tier): on them,
 * the broker serving 1,000 destinations' 6,000 partitions spent as much CPU collecting
 * as answering (9.5 µs per event against 2.3 at one destination; 6.5 against 6.0 on
 * Kafka's settings), and on this machine's two cores that CPU is taken from the
 * deliverer measured (docs/benchmarks.md). A broker in KAFKA_BROKERS on those settings
 * gets a warning.
 */
export async function startOrReuseBroker(options: { heapMb?: number } = {}): Promise<Broker> {
  const given = process.env.KAFKA_BROKERS;
  if (given) {
    const pid = brokerPid(given);
    if (pid !== undefined && runsTestJvm(pid)) {
      log(`the broker at ${given} (pid ${pid}) runs the tests' JVM settings (-XX:+UseSerialGC, -XX:TieredStopAtLevel=1): its CPU, taken from the processes measured, is not a deployment's; start it with \`node scripts/kafka/broker.mjs --in-memory --jvm server\``);
    }
    return { brokers: given, pid, stop: async () => undefined };
  }
  // @ts-expect-error -- plain ESM script shared with the tests and `npm start`
  const { startBroker } = (await import('../scripts/kafka/broker.mjs')) as {
    startBroker(options?: { heapMb?: number; log?: (line: string) => void; inMemory?: boolean; jvm?: 'test' | 'server' }): Promise<Broker>;
  };
  log('starting a local broker in memory, on Kafka\'s JVM settings (set KAFKA_BROKERS to use another)');
  return startBroker({ heapMb: options.heapMb, log: (line) => process.stderr.write(`${line}\n`), inMemory: true, jvm: 'server' });
}

/** Whether the JVM `pid` runs with the serial collector or the first JIT tier only (the tests' broker settings). */
function runsTestJvm(pid: number): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return args.includes('-XX:+UseSerialGC') || args.includes('-XX:TieredStopAtLevel=1');
  } catch {
    return false;
  }
}

type OptionValues<T extends Record<string, number | string>> = { [K in keyof T]: T[K] extends number ? number : string };

/**
 * `--name value` options with their defaults: a number default makes an option that
 * must be a positive integer, a string default a free string. Unknown options are
 * refused (node:util parseArgs).
 */
export function benchOptions<const T extends Record<string, number | string>>(args: string[], defaults: T): OptionValues<T> {
  const { values } = parseArgs({
    args,
    options: Object.fromEntries(Object.entries(defaults).map(([name, value]) => [name, { type: 'string' as const, default: String(value) }])),
  });
  const out: Record<string, number | string> = {};
  const bad: string[] = [];
  for (const [name, fallback] of Object.entries(defaults)) {
    const given = String(values[name]);
    if (typeof fallback === 'string') {
      out[name] = given;
      continue;
    }
    const value = Number(given);
    if (!Number.isInteger(value) || value <= 0) bad.push(`--${name}`);
    out[name] = value;
  }
  if (bad.length > 0) throw new Error(`${bad.join(', ')} must be ${bad.length === 1 ? 'a positive integer' : 'positive integers'}`);
  return out as OptionValues<T>;
}

/** `--batch`: settings.batch.maxEvents from 1 to 4,000 (docs/webhooks.md#batches), or `off` (0). */
export function batchOption(text: string): number {
  if (text === 'off') return 0;
  const maxEvents = Number(text);
  if (!Number.isInteger(maxEvents) || maxEvents < 1 || maxEvents > 4000) throw new Error(`--batch takes maxEvents from 1 to 4000, or off, not ${text}`);
  return maxEvents;
}

/** A config from its YAML shape (durations as strings), through the daemon's own loader. */
export function loadBenchConfig(shape: Record<string, unknown>, file: string): Config {
  // JSON is YAML: no second serializer needed.
  const result = parseConfigText(JSON.stringify(shape), file, {});
  if (!result.ok) throw new Error(result.errors.join('\n'));
  return result.config;
}

/** What the benchmarks ask of the cluster: the port's admin, and the groups' states. */
export interface BenchAdmin extends KafkaAdmin {
  /** Each group's state as the broker names it ('Stable', 'Empty', ...) and its members. */
  describeGroups(groupIds: string[]): Promise<{ groups: { groupId: string; state: string; members: unknown[] }[] }>;
}

/** The port's admin (src/kafka/admin.ts) on `brokers`, and @platformatic/kafka's for the groups' states; connected. */
export async function createBenchAdmin(brokers: string): Promise<BenchAdmin> {
  const settings = { brokers: brokers.split(','), clientId: 'bench-admin', topicPrefix: 'bench.', partitions: 1, replicationFactor: 1 };
  const admin = createAdmin(createKafka(settings, silentLogger()));
  await admin.connect();
  const groups = new PlatformaticAdmin({ clientId: 'bench-admin', bootstrapBrokers: settings.brokers });
  return {
    ...admin,
    async describeGroups(groupIds) {
      const found = await groups.describeGroups({ groups: groupIds });
      return { groups: [...found.values()].map((g) => ({ groupId: g.id, state: g.state, members: [...g.members.values()] })) };
    },
    async disconnect() {
      await Promise.allSettled([groups.close(), admin.disconnect()]);
    },
  };
}

/** Resolves once `groupId` has committed everything `topic` holds (its lag is 0). */
export async function waitForDrained(admin: Pick<KafkaAdmin, 'partitionEnds' | 'committedOffsets'>, groupId: string, topic: string, timeoutMs = 30 * 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ends = await admin.partitionEnds(topic);
    const [committed] = await admin.committedOffsets(groupId, [topic]);
    if (topicLag(ends, committed?.partitions ?? []) === 0) return;
    if (Date.now() > deadline) throw new Error(`group ${groupId} did not drain ${topic} in ${Math.round(timeoutMs / 60_000)} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How many records `topic` has taken: the sum of its partitions' high watermarks. */
export async function recordsIn(admin: Pick<KafkaAdmin, 'partitionEnds'>, topic: string): Promise<number> {
  return (await admin.partitionEnds(topic)).reduce((sum, p) => sum + Number(p.high), 0);
}

/** Wall-clock and CPU time (user + system of this process) since it was made or last restarted. */
export class Stopwatch {
  private startedAt = performance.now();
  private cpuAtStart = process.cpuUsage();

  restart(): void {
    this.startedAt = performance.now();
    this.cpuAtStart = process.cpuUsage();
  }

  read(): { seconds: number; cpuSeconds: number } {
    const cpu = process.cpuUsage(this.cpuAtStart);
    return { seconds: (performance.now() - this.startedAt) / 1000, cpuSeconds: (cpu.user + cpu.system) / 1e6 };
  }
}

/** Text table lines: the first column left-aligned, the others right-aligned, each as wide as its widest cell. */
/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

/** Whether the module at `moduleUrl` is the process's entry point (`tsx bench/<name>.ts …`), not imported by bench/run.ts. */
export function isEntryPoint(moduleUrl: string): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}

/** Runs a benchmark's `main` as a script: a failure is printed and exits 2. */
export function runMain(main: (args: string[]) => Promise<void>, args: string[] = process.argv.slice(2)): void {
  main(args).catch((error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 2;
  });
}

export interface ReceiverProcess {
  port: number;
  /** `http://127.0.0.1:<port><path>` */
  url(path: string): string;
  stop(): void;
}

/**
 * Starts a webhook receiver in a child process, so that it does not share the event
 * loop with what is measured. `source` is CommonJS that makes a node:http `server`; this
 * adds keep-alive and the listen on a free port of 127.0.0.1.
 */
export async function startReceiverProcess(source: string): Promise<ReceiverProcess> {
  const listen = `server.keepAliveTimeout = 60000;\nserver.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));\n`;
  const child = spawn(process.execPath, ['-e', `${source}\n${listen}`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`bench receiver exited (${code})`)));
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
  });
  return { port, url: (path) => `http://127.0.0.1:${port}${path}`, stop: () => child.kill('SIGKILL') };
}

/** A realistic ~700-byte track body, as the router renders it; of user n modulo `users` (5,000). */
export function trackBody(messageId: string, n: number, users = 5000): string {
  return JSON.stringify({
    version: 1,
    type: 'track',
    userId: `user-${n % users}`,
    messageId,
    timestamp: new Date(Date.UTC(2026, 4, 1) + n).toISOString(),
    event: 'Order Completed',
    properties: { orderId: `o-${n}`, total: 99.5, currency: 'EUR', items: [{ sku: 'sku-1', qty: 2 }, { sku: 'sku-2', qty: 1 }] },
    context: {
      ip: '203.0.113.9',
      library: { name: 'analytics-node', version: '3.1.0' },
      userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
      page: { path: '/checkout/complete', url: 'https://shop.example.com/checkout/complete', title: 'Thank you' },
    },
  });
}

/** A `deliveries.<id>` record as the router writes it: trackBody, the user as key, the four delivery headers. */
export function deliveryMessage(messageId: string, n: number, users = 5000): OutboundRecord {
  return {
    key: `user-${n % users}`,
    value: trackBody(messageId, n, users),
    headers: { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '' },
    // As the router writes it: the receipt time as the record timestamp (src/router/plan-call.ts).
    timestamp: String(Date.now()),
  };
}

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on every Linux this runs on). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU seconds (user + system) that process `pid` has used since it started, from
 * /proc/<pid>/stat; undefined when it cannot be read (gone, another user's, no /proc).
 * Its resolution is a clock tick (10 ms): read it over seconds, not milliseconds.
 */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // NOTE: the command name (field 2) is in parentheses and may hold spaces: count from after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 (utime) and 15 (stime) of proc(5); fields[0] is field 3.
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/**
 * The pid of the process listening on the port of the first of `brokers` on this
 * machine (from /proc/net/tcp{,6} and the processes' open sockets), or undefined when
 * it is elsewhere or not this user's. For the broker's CPU per event in the benches:
 * a broker shared with other work charges that work too.
 */
export function brokerPid(brokers: string): number | undefined {
  const port = Number(brokers.split(',')[0]?.split(':').pop());
  if (!Number.isInteger(port)) return undefined;
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cells = line.trim().split(/\s+/);
      // local_address is cells[1] (ADDR:PORT), st is cells[3] (0A: listening), inode is cells[9].
      if (cells[1]?.endsWith(`:${portHex}`) && cells[3] === '0A' && cells[9]) inodes.add(`socket:[${cells[9]}]`);
    }
  }
  if (inodes.size === 0) return undefined;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) return Number(entry);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * A receiver that counts: answers every POST with 200 at once and counts it under the
 * first segment of its path (`/<tag>/...`); `GET /__count/<tag>` answers that count.
 * Source for startReceiverProcess.
 */
export const COUNTING_RECEIVER_SOURCE = `
const http = require('node:http');
const counts = new Map();
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/__count/')) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(String(counts.get(req.url.slice('/__count/'.length)) || 0));
    return;
  }
  // One event per request, or a batch (a JSON array, docs/webhooks.md#batches): one per messageId in it.
  let chunks;
  req.on('data', (chunk) => {
    if (chunks !== undefined) chunks.push(chunk);
    else if (chunk[0] === 0x5b) chunks = [chunk];
  });
  req.on('end', () => {
    const tag = req.url.split('/')[1];
    const events = chunks === undefined ? 1 : Buffer.concat(chunks).toString('utf8').split('"messageId":').length - 1;
    counts.set(tag, (counts.get(tag) || 0) + events);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
`;

/** The repository's root (dist/cli/main.js is there once built). */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The Node flags of every process the benches start as the product runs: the image's (Dockerfile). */
export const NODE_FLAGS = process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean) : ['--max-semi-space-size=64'];

let cpuProfileDir: string | undefined;

/**
 * From now on, the processes startNodeProcess starts write a CPU profile each into `dir`
 * (node --cpu-prof, on a clean exit: they are stopped with SIGTERM): the benches'
 * `--cpu-prof-dir`, for seeing where a pipeline's CPU goes. Node refuses --cpu-prof
 * in NODE_OPTIONS, hence this.
 */
export function profileProcessesInto(dir: string): void {
  cpuProfileDir = dir;
}

/** A process a bench started, by the name its table gives it. */
export interface Running {
  name: string;
  child: ChildProcess;
  /** The last 20,000 characters it wrote to stdout and stderr, when started with `capture` (else ''). */
  output(): string;
}

/**
 * Starts `node NODE_FLAGS ...args` from the repository's root. By default its stdout is
 * dropped and its stderr shown; with `capture`, both are kept (the last 20,000
 * characters, for an error message) and not shown: a role's info logs.
 */
export function startNodeProcess(name: string, args: string[], env: NodeJS.ProcessEnv = process.env, capture = false): Running {
  const profile = cpuProfileDir !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`, `--cpu-prof-name=${name}-\${pid}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...NODE_FLAGS, ...profile, ...args], { cwd: ROOT, env, stdio: ['ignore', capture ? 'pipe' : 'ignore', capture ? 'pipe' : 'inherit'] });
  let text = '';
  const keep = (chunk: Buffer) => {
    text = (text + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.once('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGKILL') log(`${name} (pid ${child.pid}) exited with ${signal ?? code}${capture ? `; its last output: ${text.slice(-2000)}` : ''}`);
  });
  return { name, child, output: () => text };
}

/**
 * Starts one role of the built CLI (dist/cli/main.js, as bin/switchyard runs it: `npm
 * run build` after changing src/) on `config` (its YAML shape) with an admin port of its
 * own, written to a file in `dir`.
 */
export async function startSwitchyardRole(name: string, role: string, config: Record<string, unknown>, dir: string, capture = false): Promise<Running & { adminPort: number }> {
  const adminPort = await freePort();
  const file = join(dir, `${name}-${role}-${adminPort}.json`);
  // JSON is YAML: no second serializer needed.
  writeFileSync(file, JSON.stringify({ ...config, admin: { port: adminPort, host: '127.0.0.1' } }));
  const brokers = (config.kafka as { brokers: string[] }).brokers.join(',');
  return { ...startNodeProcess(name, [join(ROOT, 'dist/cli/main.js'), role, '--config', file], { ...process.env, KAFKA_BROKERS: brokers }, capture), adminPort };
}

/** SIGTERM to each, SIGKILL after 30 s; resolves once all have exited. */
export async function stopProcesses(running: Running[]): Promise<void> {
  await Promise.all(
    running.map(
      ({ child }) =>
        new Promise<void>((done) => {
          if (child.exitCode !== null || child.signalCode !== null) return done();
          const forced = setTimeout(() => child.kill('SIGKILL'), 30_000);
          child.once('exit', () => {
            clearTimeout(forced);
            done();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/** A port of 127.0.0.1 free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Waits until every group is stable with a member (start-up is not what a bench times); fails if a process exits. */
export async function waitForGroups(admin: { describeGroups(groupIds: string[]): Promise<{ groups: { state: string; members: unknown[] }[] }> }, groupIds: string[], running: Running[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = running.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
    if (dead) throw new Error(`${dead.name} exited (${dead.child.signalCode ?? dead.child.exitCode}) before its group joined`);
    const { groups } = await admin.describeGroups(groupIds);
    if (groups.length === groupIds.length && groups.every((g) => g.state === 'Stable' && g.members.length > 0)) return;
    if (Date.now() > deadline) throw new Error(`groups ${groupIds.join(', ')} were not stable within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// ---------------------------------------------------------------------------
// The broker side of the benches on the project's client, @platformatic/kafka
// (the benches that moved off kafkajs: e2e, destinations).

/** An admin client of @platformatic/kafka on `brokers` (comma-separated); close() it after. */
export function benchAdmin(brokers: string, clientId: string): PlatformaticAdmin {
  return new PlatformaticAdmin({ clientId, bootstrapBrokers: brokers.split(',') });
}

/** A plain producer of @platformatic/kafka (string keys, values and headers); close() it after. */
export function benchProducer(brokers: string, clientId: string): PlatformaticProducer<string, string, string, string> {
  return new PlatformaticProducer({ clientId, bootstrapBrokers: brokers.split(','), autocreateTopics: false, serializers: stringSerializers });
}

/**
 * Creates `topics` with `partitions` each, in chunks of 250, and waits until every
 * partition has a leader (from the metadata): with thousands of topics at once, a
 * creation that waits for its own leaders is refused by the broker.
 */
export async function createBenchTopics(admin: PlatformaticAdmin, topics: readonly string[], partitions: number, timeoutMs = 120_000): Promise<void> {
  for (let start = 0; start < topics.length; start += 250) {
    const chunk = topics.slice(start, start + 250);
    await admin.createTopics({ topics: [...chunk], partitions, replicas: 1 });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const led = await admin.metadata({ topics: [...chunk], forceUpdate: true }).then(
        ({ topics: found }) => chunk.every((topic) => found.get(topic)?.partitions.length === partitions && found.get(topic)!.partitions.every((p) => p.leader >= 0)),
        () => false,
      );
      if (led) break;
      if (Date.now() > deadline) throw new Error(`topics ${chunk[0]}… have no leader after ${timeoutMs / 1000} s: is the broker overloaded (KAFKA_BROKERS)?`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Deletes `topics` in chunks of 500; a failure is logged, not thrown (clean-up). */
export async function deleteBenchTopics(admin: PlatformaticAdmin, topics: readonly string[]): Promise<void> {
  for (let start = 0; start < topics.length; start += 500) {
    await admin.deleteTopics({ topics: topics.slice(start, start + 500) }).catch((error: unknown) => log(`deleting topics: ${(error as Error).message}`));
  }
}

/** Waits until every group is stable with a member (start-up is not what a bench times); fails if a process exits. */
export async function waitForStableGroups(admin: PlatformaticAdmin, groupIds: string[], running: Running[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = running.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
    if (dead) throw new Error(`${dead.name} exited (${dead.child.signalCode ?? dead.child.exitCode}) before its group joined`);
    const groups = await admin.describeGroups({ groups: groupIds }).catch(() => new Map<string, { state: string; members: Map<string, unknown> }>());
    if (groupIds.every((id) => groups.get(id)?.state.toUpperCase() === 'STABLE' && groups.get(id)!.members.size > 0)) return;
    if (Date.now() > deadline) throw new Error(`groups ${groupIds.join(', ')} were not stable within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Throws when a file under src/ is newer than dist/cli/main.js: the benches that run
 * the built CLI (as the image does) would measure old code. `npm run build` fixes it.
 */
export function assertBuildIsFresh(): void {
  const built = join(ROOT, 'dist/cli/main.js');
  let builtAt: number;
  try {
    builtAt = statSync(built).mtimeMs;
  } catch {
    throw new Error(`${built} is missing: run \`npm run build\` first (the bench runs the built CLI, as the image does)`);
  }
  const newest = newestMtime(join(ROOT, 'src'));
  if (newest.mtimeMs > builtAt) throw new Error(`${newest.file} is newer than ${built}: run \`npm run build\` first (the bench runs the built CLI, as the image does)`);
}

function newestMtime(dir: string): { file: string; mtimeMs: number } {
  let newest = { file: dir, mtimeMs: 0 };
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const found = entry.isDirectory() ? newestMtime(path) : { file: path, mtimeMs: statSync(path).mtimeMs };
    if (found.mtimeMs > newest.mtimeMs) newest = found;
  }
  return newest;
}

/** Resident set size of `pid` now and its peak so far (VmRSS, VmHWM of /proc/<pid>/status), in MB; undefined once it is gone. */
export function processMemoryMb(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(/^(\S+):\s+(\d+)/m.exec(status.split('\n').find((line) => line.startsWith(`${name}:`)) ?? '')?.[2] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}
