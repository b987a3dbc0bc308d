// `npm run bench -- destinations [--scenarios counts,hanging] [--counts 1,100,1000] [--n auto] [--partitions 1]
//   [--in-flight 256] [--ready-timeout 120] [--settle 5] [--idle 10] [--hanging 100] [--timeout 5s] [--batch off]
//   [--waves 3] [--rounds 2] [--cpu-prof-dir DIR] [--tiers 10s,1m,10m,1h]
//   [--destinations 1000] [--backlog 1000] [--backlog-small 10] [--slow 60] [--slow-delay 2000] [--idle-window 30]
//   [--interleave off]`,
//   or standalone: `tsx bench/destinations.ts [same options]`.
//
// `--scenarios` picks the parts: `counts` and `hanging` (below), `backlog` (the
// deliverer's memory with a backlog waiting: runBacklog) and `idle` (its CPU with
// nothing to deliver: runIdle), the last two at D = --destinations. docs/benchmarks.md
// says what each prints.
//
// The deliverer runs from dist/ (dist/cli/main.js, as the image runs it: its RSS is
// that of a deployment, without tsx), and the bench refuses a build older than src/.
//
// `--cpu-prof-dir DIR`: the deliverer writes a CPU profile there (node --cpu-prof; it is
// then stopped with SIGTERM, not SIGKILL), and each wave's window is logged on the
// profile's clock (CLOCK_MONOTONIC µs), to read the samples of the measured wave alone.
//
// `--batch N` (N ≥ 1) gives every destination `settings.batch: { maxEvents: N, maxBytes: 512KB,
// maxWait: 100ms }` (docs/webhooks.md#batches): the same table with batch requests.
//
// NOTE: `--n auto` (the default) is 20,000 events a wave without batches, as before,
// and 100,000 with --batch. At 20,000, D = 1,000 gave each destination 20 events a
// wave: one batch of 20, so the measured wave was one request per destination, timed
// over well under a second at D = 1 (about 0.7 s), and it measured mostly each
// destination's first request of the wave (the first fetch of 700 partitions, the
// connections a burst of 1,000 requests needs beyond those of the warm-up wave), not a
// steady rate. At 100,000, five batches of 20 per destination.
//
// What a destination costs the deliverer: one `switchyard deliverer` process (the built
// CLI, a child process, as Kubernetes runs it) with D destinations, all posting to one
// local keep-alive receiver (a child process, 0 ms), the same total of events at every
// D (split evenly). Per D it prints: time to ready (`/readyz` of the admin port), RSS,
// established TCP connections from the deliverer to the broker, CPU while idle (nothing
// to deliver, over --idle seconds once --settle seconds passed after ready: the start-up's
// last work, such as the first lag sample, is not idleness; the CPU of those first
// seconds is printed beside it), the steady-state rate of the measured waves after a
// warm-up wave (timed at the receiver, first to last arrival of a wave; the median of
// --waves waves, and each wave's), and the duplicates the receiver counted (by message id).
//
// Then the hanging case: at D = --hanging, 10 % of the destinations hang until the
// timeout, and the others' rate is compared with the same healthy destinations run
// without them.
//
// NOTE: --waves is 3 (it was one measured wave): on a quiet 2-core machine, one wave of
// the same code gave D = 1 33,340, 34,564 and 48,635 events/s in three runs, and D = 1,000
// 27,423, 34,938 and 34,411 (the deliverer's CPU per event 17–29 µs at D = 1, the
// collector's share varying from run to run): a ratio of one wave each measured that noise.
//
// NOTE: --rounds is 2: the counts run in order, then again, and each D's rate is the
// median of its rounds. The first runs meet a colder broker (its JIT): D = 1,000 run
// alone on a fresh broker gave 18,868 events/s, against 27,000–35,000 after D = 1; in
// one run of --counts 1,1000,1,1000, D = 1,000 gave 38,489 and then 44,236 events/s,
// D = 1 42,753 and 44,569. One round put every D = 1,000 after a single D = 1.
//
// NOTE: kafka.partitions defaults to 1. Every destination has 6 topics here
// (deliveries, four retry tiers, dlq), so D = 1,000 already means 6,000 partitions on
// one (shared) broker; more per topic would measure the broker, not the deliverer. One
// partition does not cap D = 1: the deliverer keeps concurrencyPerDestination requests
// in flight within a partition.
//
// NOTE: --tiers is the shipped config's four tiers (10s,1m,10m,1h) by default: D = 1,000
// is 6,000 topics, 5,000 of them read by the deliverer. Until 2026-12-02 it was one
// tier (5s, 3 topics a destination); with kafkajs's joins as they were, the four-tier
// deliverer never delivered at D = 1,000.
//
// NOTE: concurrencyPerDestination is --in-flight / D (at least 1): the same requests at
// once to the one receiver at every D. With 64 per destination, D = 100 put 6,400
// requests at once on one node:http process: answers took longer than the 5 s timeout,
// the deliverer gave up on them (5,633 timeouts) and sent them again later, and the
// receiver counted its late answers as 5,161 duplicates; the deliverer itself had seen
// exactly one 2xx per event. That measured the receiver, not the deliverer. The table
// gives the deliverer's timeouts beside the duplicates.
//
// Starts its own local broker (1 GB heap) unless KAFKA_BROKERS is set. NOTE: D = 1,000
// makes 6,000 topics (3,000 with one tier); a small shared broker (the tests' 384 MB heap) can run out of
// heap under that beside other work (it did once on the shared machine): prefer the
// bench's own broker for D = 1,000. Topics are created before
// the deliverer starts (the clock of "ready" does not include them) and deleted after.
//
// NOTE: the second (measured) wave is written while the deliverer is stopped (SIGSTOP,
// then SIGCONT), so the rate is that of the deliverer working through the wave, not that
// of the writing (with the broker's log on disk, this machine once took 30 s to write
// it: bench/support.ts keeps the bench broker's log in memory). A pause longer than the
// session timeout would make the deliverer join its group again first; the rate is
// timed from the first arrival.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MessageToProduce } from '@platformatic/kafka';
import {
  assertBuildIsFresh,
  batchOption,
  benchAdmin,
  benchOptions,
  benchProducer,
  createBenchTopics,
  deleteBenchTopics,
  formatTable,
  isEntryPoint,
  log,
  median,
  processMemoryMb,
  profileProcessesInto,
  runMain,
  startOrReuseBroker,
  startReceiverProcess,
  startSwitchyardRole,
  trackBody,
} from './support.js';
import type { Running } from './support.js';

const SECRET = 'bench-secret';
/** Events per wave (--n auto): without batches, and with --batch (see the NOTE at the top). */
const EVENTS_PER_WAVE = 20_000;
const BATCHED_EVENTS_PER_WAVE = 100_000;
/** The retry tiers of --tiers' default: the shipped config's four (docs/configuration.md#delivery). */
const DEFAULT_TIERS = '10s,1m,10m,1h';
const SCENARIOS = ['counts', 'hanging', 'backlog', 'idle'] as const;
type Scenario = (typeof SCENARIOS)[number];

// The receiver: node:http, keep-alive; /ok/... answers 200 at once and counts the body's
// messageId (a second 200 for one messageId is a duplicate); /hang never answers; GET /stats gives the counts and the arrival times of
// the wave named in ?wave=.
const RECEIVER_SOURCE = `
const http = require('node:http');
const seen = new Map();
let total = 0;
const waves = new Map();
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/stats')) {
    const wave = new URL(req.url, 'http://x').searchParams.get('wave') || '';
    const w = waves.get(wave) || { count: 0, first: 0, last: 0 };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ total, unique: seen.size, wave: w }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.url.startsWith('/hang')) return;
    // One event, or a batch of them (a JSON array): every messageId in the body.
    const ms = [...Buffer.concat(chunks).toString('utf8').matchAll(/"messageId":"(w(\\d+)-[^"]*)"/g)];
    // Counted once the 200 went out ('finish') on a connection the deliverer still held:
    // an answer to a request it already gave up on (timeout) is not a delivery it saw.
    if (ms.length > 0) res.once('finish', () => {
      for (const m of ms) {
        total += 1;
        const n = (seen.get(m[1]) || 0) + 1;
        seen.set(m[1], n);
        if (n === 1) {
          const now = performance.now();
          const w = waves.get(m[2]) || { count: 0, first: now, last: now };
          w.count += 1;
          w.last = now;
          waves.set(m[2], w);
        }
      }
    });
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
`;

interface ReceiverStats {
  total: number;
  unique: number;
  wave: { count: number; first: number; last: number };
}

interface Receiver {
  url(path: string): string;
  stats(wave: number): Promise<ReceiverStats>;
  stop(): void;
}

async function startReceiver(): Promise<Receiver> {
  const receiver = await startReceiverProcess(RECEIVER_SOURCE);
  return {
    ...receiver,
    async stats(wave) {
      const response = await fetch(receiver.url(`/stats?wave=${wave}`));
      return (await response.json()) as ReceiverStats;
    },
  };
}

type Producer = ReturnType<typeof benchProducer>;
type Admin = ReturnType<typeof benchAdmin>;

/** A `deliveries.<id>` record as the router writes it: trackBody, the user as key, the four delivery headers, the receipt time as timestamp. */
function deliveryRecord(topic: string, messageId: string, n: number): MessageToProduce<string, string, string, string> {
  return {
    topic,
    key: `user-${n % 5000}`,
    value: trackBody(messageId, n),
    headers: { 'source-id': 'web', 'message-id': messageId, attempt: '0', 'first-attempt-at': '' },
    timestamp: BigInt(Date.now()),
  };
}

/** `per` events to each of `destinations` (body messageIds `w<wave>-<id>-<i>`), with the headers the router writes; up to 4 requests in flight. */
async function produceWave(producer: Producer, prefix: string, destinations: readonly string[], per: number, wave: number): Promise<void> {
  const sends = new Set<Promise<void>>();
  let failed: unknown;
  let pending: MessageToProduce<string, string, string, string>[] = [];
  const flush = async () => {
    if (pending.length === 0) return;
    const messages = pending;
    pending = [];
    const send = producer.send({ acks: -1, messages }).then(
      () => undefined,
      (error: unknown) => {
        failed ??= error;
      },
    );
    sends.add(send);
    void send.finally(() => sends.delete(send));
    if (sends.size >= 4) await Promise.race(sends);
    if (failed !== undefined) throw failed;
  };
  for (const id of destinations) {
    // The body's messageId names the wave: the receiver counts arrivals per wave.
    // NOTE: at most 1,000 records (~700 KB) per topic and request: the broker refuses a record batch over 1 MB.
    for (let i = 0; i < per; i++) {
      pending.push(deliveryRecord(`${prefix}deliveries.${id}`, `w${wave}-${id}-${i}`, i));
      if (pending.length >= 1_000 || (i + 1) % 1_000 === 0) await flush();
    }
  }
  await flush();
  await Promise.all(sends);
  if (failed !== undefined) throw failed;
}

function topicsOf(prefix: string, id: string, tiers: readonly string[]): string[] {
  return [`${prefix}deliveries.${id}`, ...tiers.map((tier) => `${prefix}deliveries.${id}.retry.${tier}`), `${prefix}deliveries.${id}.dlq`];
}

/** /proc/<pid>/stat utime + stime, in seconds; `thread`: that thread's alone (/proc/<pid>/task/<thread>/stat). */
function cpuSeconds(pid: number, thread?: number): number {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "(comm)": field 3 is state, so utime (14) and stime (15) are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / 100; // NOTE: USER_HZ is 100 on Linux
}

function rssMb(pid: number): number {
  return Math.round(processMemoryMb(pid)?.rss ?? 0);
}

/** ESTABLISHED TCP connections of `pid` to a broker port: its socket inodes matched in /proc/<pid>/net/tcp{,6}. */
function brokerConnections(pid: number, brokerPorts: ReadonlySet<number>): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const match = /^socket:\[(\d+)\]$/.exec(target);
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const file of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${file}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const remotePort = parseInt(cols[2]!.split(':')[1]!, 16);
      if (cols[3] === '01' && brokerPorts.has(remotePort) && inodes.has(cols[9]!)) count += 1;
    }
  }
  return count;
}

interface RunResult {
  d: number;
  readySeconds?: number;
  rssIdleMb?: number;
  rssLoadedMb?: number;
  connections?: number;
  idleCpuPercent?: number;
  /** CPU over the --settle seconds right after ready. */
  settleCpuPercent?: number;
  rate?: number;
  /** The deliverer's CPU time (user + system) per event of a measured wave, from its resumption to the last arrival, in µs: the median. */
  cpuPerEventUs?: number;
  /** The same, of the deliverer's main thread alone (JavaScript; the rest is GC helpers, libuv's pool, the profiler). */
  mainCpuPerEventUs?: number;
  /** The broker's CPU per event over the same windows (its JVM, when its pid is known), the median. */
  brokerCpuPerEventUs?: number;
  /** The measured waves' rates (events/s), in the order run. */
  rates?: number[];
  duplicates?: number;
  received?: number;
  /** switchyard_delivery_attempts_total summed over the destinations, by outcome (what a duplicate came from). */
  attempts?: Record<string, number>;
  note?: string;
}

/**
 * Where the deliverer's memory is, from its own metrics: the records it holds
 * (`switchyard_deliverer_buffered_bytes` / `_records`), the V8 heap used and
 * allocated, and memory outside the heap (buffers): for the backlog's progress lines.
 */
async function memoryBreakdown(adminPort: number): Promise<string> {
  const text = await fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.text(), () => '');
  const value = (name: string): number => {
    let sum = 0;
    for (const line of text.split('\n')) if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    return sum;
  };
  const mb = (bytes: number) => Math.round(bytes / 1048576);
  return `held ${value('switchyard_deliverer_buffered_records')} records ${mb(value('switchyard_deliverer_buffered_bytes'))} MB; heap used ${mb(value('nodejs_heap_size_used_bytes'))} of ${mb(value('nodejs_heap_size_total_bytes'))} MB, external ${mb(value('nodejs_external_memory_bytes'))} MB`;
}

/** `switchyard_delivery_attempts_total` of the admin port, summed by outcome. */
async function attemptOutcomes(adminPort: number): Promise<Record<string, number>> {
  const text = await fetch(`http://127.0.0.1:${adminPort}/metrics`).then((r) => r.text(), () => '');
  const outcomes: Record<string, number> = {};
  for (const match of text.matchAll(/^switchyard_delivery_attempts_total\{[^}]*outcome="([^"]+)"[^}]*\} (\S+)$/gm)) {
    outcomes[match[1]!] = (outcomes[match[1]!] ?? 0) + Number(match[2]);
  }
  return outcomes;
}

interface RunOptions {
  brokers: string;
  receiver: Receiver;
  healthy: number;
  hanging: number;
  /** Events per destination and wave. */
  perDestination: number;
  partitions: number;
  /** Requests at once over all destinations: concurrencyPerDestination is this / D (at least 1). */
  inFlight: number;
  readyTimeoutS: number;
  settleS: number;
  idleS: number;
  /** delivery.timeout, also how long a hanging destination holds each request. */
  timeout: string;
  /** settings.batch.maxEvents of every destination; 0: no batches. */
  batch: number;
  /** Where the deliverer writes a CPU profile (node --cpu-prof); '' for none. */
  cpuProfDir: string;
  /** Measured waves after the warm-up wave; rate and CPU per event are their medians. */
  waves: number;
  /** delivery.retryTiers: each is one more topic per destination that the deliverer reads. */
  tiers: readonly string[];
  /** delivery.bufferBudget; '' for the shipped default. */
  bufferBudget: string;
  /** The broker's JVM, when known: its CPU per event is given beside the deliverer's. */
  brokerPid: number | undefined;
}

/** concurrencyPerDestination at D destinations: the same requests at once at every D, at least one per destination. */
function concurrencyAt(inFlight: number, d: number): number {
  return Math.max(1, Math.floor(inFlight / d));
}

async function waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(50);
  }
  return false;
}

/** What a deliverer run needs, whatever it measures. */
interface DelivererSetup {
  brokers: string;
  partitions: number;
  tiers: readonly string[];
  timeout: string;
  /** settings.batch.maxEvents of every destination; 0: no batches. */
  batch: number;
  concurrencyPerDestination: number;
  /** delivery.bufferBudget; '' for the shipped default. */
  bufferBudget: string;
}

/** D destinations' topics made on the broker, a producer, and the deliverer's config; stop() deletes them. */
interface Prepared {
  ids: string[];
  prefix: string;
  producer: Producer;
  /** Starts `switchyard deliverer` (dist/cli/main.js, a child process, as the image runs it) on the config. */
  start(): Promise<Running & { adminPort: number }>;
  stop(deliverer: Running | undefined): Promise<void>;
}

/**
 * Makes D destinations' topics (deliveries, the retry tiers, dlq) and the config of a
 * deliverer whose destination `id` posts to `urlOf(id)`, signed with a shared secret.
 * Every setting not named here is the shipped default (docs/configuration.md).
 */
async function prepare(setup: DelivererSetup, d: number, urlOf: (id: string) => string): Promise<Prepared> {
  const run = randomBytes(4).toString('hex');
  const prefix = `bench-dest-${run}.`;
  const width = String(d).length;
  const ids = Array.from({ length: d }, (_, i) => `d${String(i).padStart(width, '0')}`);
  const admin: Admin = benchAdmin(setup.brokers, `bench-dest-${run}`);
  const producer = benchProducer(setup.brokers, `bench-dest-${run}`);
  const topics = ids.flatMap((id) => topicsOf(prefix, id, setup.tiers));
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-dest-'));
  const config = {
    kafka: { brokers: setup.brokers.split(','), clientId: `bench-dest-${run}`, topicPrefix: prefix, partitions: setup.partitions },
    delivery: { timeout: setup.timeout, retryTiers: [...setup.tiers], maxRetryWindow: '1h', concurrencyPerDestination: setup.concurrencyPerDestination, ...(setup.bufferBudget !== '' ? { bufferBudget: setup.bufferBudget } : {}) },
    sources: [{ id: 'web' }], // a config needs a source; this bench only delivers
    destinations: ids.map((id) => ({
      id,
      type: 'webhooks',
      settings: {
        webhooks: [{ url: urlOf(id) }],
        sharedSecret: SECRET,
        ...(setup.batch > 0 ? { batch: { maxEvents: setup.batch, maxBytes: '512KB', maxWait: '100ms' } } : {}),
      },
    })),
  };
  const stop = async (deliverer: Running | undefined) => {
    if (deliverer !== undefined && deliverer.child.exitCode === null && deliverer.child.signalCode === null) {
      const exited = new Promise((done) => deliverer.child.once('exit', done));
      // NOTE: node writes a CPU profile only on a clean exit (--cpu-prof-dir).
      deliverer.child.kill(profiling ? 'SIGTERM' : 'SIGKILL');
      await exited;
    }
    await producer.close().catch(() => undefined);
    await deleteBenchTopics(admin, topics);
    await admin.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    log(`D=${d}: creating ${topics.length} topics`);
    await createBenchTopics(admin, topics, setup.partitions);
    // NOTE: a broker answers NOT_LEADER_OR_FOLLOWER for a new partition for a moment
    // after its metadata names a leader, and @platformatic/kafka then retries the whole
    // produce request: the partitions that took it the first time get the records again
    // (measured: 200 records to 20 new topics were written as 580). Waited out here, the
    // backlog holds each event once, and the duplicates counted are the deliverer's.
    await sleep(5_000);
  } catch (error) {
    await stop(undefined);
    throw error;
  }
  // Its logs (the shipped level, info) are kept for an error message, not shown.
  return { ids, prefix, producer, start: () => startSwitchyardRole('deliverer', 'deliverer', config, dir, true), stop };
}

/** Whether --cpu-prof-dir was given: the deliverer is then stopped with SIGTERM (see prepare). */
let profiling = false;

/** Resolves true once /readyz answers 200, false after `timeoutS`; throws if the deliverer exits. */
async function waitReady(deliverer: Running & { adminPort: number }, timeoutS: number): Promise<boolean> {
  return waitUntil(async () => {
    if (deliverer.child.exitCode !== null || deliverer.child.signalCode !== null) throw new Error(`the deliverer exited: ${deliverer.output().slice(-2000)}`);
    return (await fetch(`http://127.0.0.1:${deliverer.adminPort}/readyz`).catch(() => undefined))?.status === 200;
  }, timeoutS * 1000);
}

/** A deliverer of a counts run, started and past its idle measurement: its waves come next (runWave). */
interface StartedRun {
  options: RunOptions;
  result: RunResult;
  prepared: Prepared;
  deliverer: (Running & { adminPort: number }) | undefined;
  /** Events of the healthy destinations in a wave: what the receiver counts. */
  perHealthy: number;
  waves: { rate: number; cpu: number; mainCpu: number; brokerCpu: number }[];
}

/**
 * Starts one deliverer run: `healthy` destinations to /ok, `hanging` ones to /hang (the
 * events of each wave split evenly over all of them; only the healthy ones' arrivals are
 * measured); waits for ready and measures idle CPU. `result.note` says why it has no waves (not ready).
 */
async function startRun(options: RunOptions): Promise<StartedRun> {
  const d = options.healthy + options.hanging;
  // The last `hanging` destinations hang (ids sort as they are made).
  const isHanging = (id: string) => Number(id.slice(1)) >= options.healthy;
  const prepared = await prepare({ ...options, concurrencyPerDestination: concurrencyAt(options.inFlight, d) }, d, (id) => options.receiver.url(isHanging(id) ? `/hang/${id}` : `/ok/${id}`));
  const healthyIds = prepared.ids.filter((id) => !isHanging(id));
  const brokerPorts = new Set(options.brokers.split(',').map((b) => Number(b.split(':').pop())));
  const run: StartedRun = { options, result: { d }, prepared, deliverer: undefined, perHealthy: options.perDestination * healthyIds.length, waves: [] };
  const { result } = run;
  try {
    const started = performance.now();
    const deliverer = await prepared.start();
    run.deliverer = deliverer;
    const pid = deliverer.child.pid!;
    const ready = await waitReady(deliverer, options.readyTimeoutS);
    if (!ready) {
      result.note = `not ready in ${options.readyTimeoutS} s`;
      const why = await fetch(`http://127.0.0.1:${deliverer.adminPort}/readyz`).then((r) => r.text(), (error: unknown) => String(error));
      log(`D=${d}: not ready in ${options.readyTimeoutS} s; /readyz: ${why.slice(0, 600)}; last output: ${deliverer.output().slice(-1500)}`);
      result.rssIdleMb = rssMb(pid);
      result.connections = brokerConnections(pid, brokerPorts);
      return run;
    }
    result.readySeconds = (performance.now() - started) / 1000;
    log(`D=${d}: ready in ${result.readySeconds.toFixed(1)} s; measuring idle CPU for ${options.idleS} s after ${options.settleS} s`);
    const cpuAtReady = cpuSeconds(pid);
    await sleep(options.settleS * 1000);
    const cpuBefore = cpuSeconds(pid);
    result.settleCpuPercent = ((cpuBefore - cpuAtReady) / options.settleS) * 100;
    const idleStart = performance.now();
    await sleep(options.idleS * 1000);
    result.idleCpuPercent = ((cpuSeconds(pid) - cpuBefore) / ((performance.now() - idleStart) / 1000)) * 100;
    result.rssIdleMb = rssMb(pid);
    result.connections = brokerConnections(pid, brokerPorts);
    return run;
  } catch (error) {
    await prepared.stop(run.deliverer);
    throw error;
  }
}

/** One wave of a started run (wave 1 is the warm-up: not measured, written while the deliverer runs). */
async function runWave(run: StartedRun, wave: number): Promise<void> {
  const { options, prepared, perHealthy } = run;
  const { d } = run.result;
  const pid = run.deliverer!.child.pid!;
  const brokerCpu = () => (options.brokerPid === undefined ? 0 : cpuSeconds(options.brokerPid));
  log(`D=${d}: wave ${wave}, ${options.perDestination * d} events`);
  // A measured wave is written while the deliverer is stopped (SIGSTOP): its rate is
  // then the deliverer's, not the writing's (see the NOTE at the top).
  const measured = wave > 1;
  if (measured) process.kill(pid, 'SIGSTOP');
  const producing = performance.now();
  try {
    await produceWave(prepared.producer, prepared.prefix, prepared.ids, options.perDestination, wave);
  } finally {
    if (measured) process.kill(pid, 'SIGCONT');
  }
  log(`D=${d}: wave ${wave} written to Kafka in ${((performance.now() - producing) / 1000).toFixed(1)} s`);
  const cpuAtStart = cpuSeconds(pid);
  const mainCpuAtStart = cpuSeconds(pid, pid);
  const brokerCpuAtStart = brokerCpu();
  const resumedAt = process.hrtime.bigint();
  const done = await waitUntil(async () => (await options.receiver.stats(wave)).wave.count >= perHealthy, 600_000);
  if (!done) throw new Error(`D=${d}: wave ${wave} not delivered in 10 minutes: ${JSON.stringify(await options.receiver.stats(wave))}`);
  if (measured) {
    // The CPU read first, as the wave ends: the stats request after it is not the wave's.
    const cpu = ((cpuSeconds(pid) - cpuAtStart) * 1e6) / perHealthy;
    const mainCpu = ((cpuSeconds(pid, pid) - mainCpuAtStart) * 1e6) / perHealthy;
    const brokerCpuUs = ((brokerCpu() - brokerCpuAtStart) * 1e6) / perHealthy;
    const { wave: arrivals } = await options.receiver.stats(wave);
    run.waves.push({ rate: (arrivals.count - 1) / ((arrivals.last - arrivals.first) / 1000), cpu, mainCpu, brokerCpu: brokerCpuUs });
  }
  // The wave on the clock of a CPU profile's timestamps (CLOCK_MONOTONIC, µs): to read only its samples.
  if (options.cpuProfDir !== '') log(`D=${d}: wave ${wave} window (monotonic µs) ${resumedAt / 1000n}..${process.hrtime.bigint() / 1000n}`);
}

/** The run's figures from its waves and the receiver's counts; stops the deliverer and deletes its topics. */
async function finishRun(run: StartedRun): Promise<RunResult> {
  const { result } = run;
  try {
    if (result.note !== undefined) return result;
    const pid = run.deliverer!.child.pid!;
    result.rates = run.waves.map((w) => w.rate);
    result.rate = median(result.rates);
    result.cpuPerEventUs = median(run.waves.map((w) => w.cpu));
    result.mainCpuPerEventUs = median(run.waves.map((w) => w.mainCpu));
    if (run.options.brokerPid !== undefined) result.brokerCpuPerEventUs = median(run.waves.map((w) => w.brokerCpu));
    result.rssLoadedMb = rssMb(pid);
    // Late duplicates (a redelivery after the last first arrival) would be missed without a pause.
    await sleep(2_000);
    const after = await run.options.receiver.stats(1);
    result.received = after.total;
    result.duplicates = after.total - after.unique;
    result.attempts = await attemptOutcomes(run.deliverer!.adminPort);
    return result;
  } finally {
    await run.prepared.stop(run.deliverer);
  }
}

/** One deliverer run, start to finish: its waves one after the other. */
async function runOnce(options: RunOptions): Promise<RunResult> {
  const run = await startRun(options);
  if (run.result.note === undefined) {
    try {
      for (let wave = 1; wave <= 1 + options.waves; wave++) await runWave(run, wave);
    } catch (error) {
      await run.prepared.stop(run.deliverer);
      throw error;
    }
  }
  return finishRun(run);
}

/**
 * `--interleave`: every D of the round at once, each its own deliverer and receiver, the
 * waves taking turns (D = 1's wave, then D = 1,000's, then D = 1,000's, then D = 1's, ...):
 * each D's waves meet the same moments of the machine, so a ratio of neighbouring waves
 * is not a ratio of two minutes of a machine whose speed drifts. The deliverers not in
 * their wave are idle (under 2 % of a core each).
 */
async function runInterleaved(optionsOf: readonly RunOptions[]): Promise<RunResult[]> {
  const runs: StartedRun[] = [];
  try {
    for (const options of optionsOf) runs.push(await startRun(options));
    const live = runs.filter((run) => run.result.note === undefined);
    const waves = Math.max(0, ...live.map((run) => run.options.waves));
    for (let wave = 1; wave <= 1 + waves; wave++) {
      for (const run of wave % 2 === 1 ? live : [...live].reverse()) await runWave(run, wave);
    }
  } catch (error) {
    await Promise.all(runs.map((run) => run.prepared.stop(run.deliverer)));
    throw error;
  }
  const results: RunResult[] = [];
  for (const run of runs) results.push(await finishRun(run));
  return results;
}

// ---------------------------------------------------------------------------
// The backlog scenario: a deliverer started on a backlog, with slow receivers, then fast ones.

// The backlog's receiver: answers /ok/... after the delay POST /__delay?ms=N set (0 at
// first), counts each messageId of the body once the 200 went out (a second 200 for one
// messageId is a duplicate); GET /__stats gives the counts.
const BACKLOG_RECEIVER_SOURCE = `
const http = require('node:http');
const seen = new Set();
let total = 0;
let delayMs = 0;
const server = http.createServer((req, res) => {
  if (req.url.startsWith('/__delay')) {
    delayMs = Number(new URL(req.url, 'http://x').searchParams.get('ms')) || 0;
    res.writeHead(200);
    res.end('ok');
    return;
  }
  if (req.method === 'GET' && req.url.startsWith('/__stats')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ total, unique: seen.size }));
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const ids = [...Buffer.concat(chunks).toString('utf8').matchAll(/"messageId":"([^"]*)"/g)].map((m) => m[1]);
    const answer = () => {
      res.once('finish', () => {
        for (const id of ids) {
          total += 1;
          seen.add(id);
        }
      });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  });
});
`;

interface BacklogOptions {
  setup: DelivererSetup;
  d: number;
  /** Events waiting in each destination's topic before the deliverer starts. */
  perDestination: number;
  /** The slow phase: from the deliverer's start to this many seconds after it is ready. */
  slowS: number;
  /** How long the receiver takes to answer in the slow phase. */
  slowDelayMs: number;
  readyTimeoutS: number;
}

interface BacklogResult {
  perDestination: number;
  readySeconds: number;
  /** The highest RSS sampled (every 200 ms) in the slow phase, and VmHWM at its end (the kernel's peak since the start). */
  slowPeakMb: number;
  slowHwmMb: number;
  /** Events delivered by the end of the slow phase. */
  slowDelivered: number;
  /** The highest RSS sampled in the fast phase. */
  fastPeakMb: number;
  fastSeconds: number;
  expected: number;
  unique: number;
  duplicates: number;
  /** switchyard_delivery_attempts_total by outcome at the end (where a duplicate came from). */
  attempts: Record<string, number>;
}

async function runBacklog(options: BacklogOptions): Promise<BacklogResult> {
  const { d, perDestination } = options;
  const receiver = await startReceiverProcess(BACKLOG_RECEIVER_SOURCE);
  const stats = async () => (await (await fetch(receiver.url('/__stats'))).json()) as { total: number; unique: number };
  const setDelay = async (ms: number) => void (await fetch(receiver.url(`/__delay?ms=${ms}`), { method: 'POST' })).body?.cancel();
  const prepared = await prepare(options.setup, d, (id) => receiver.url(`/ok/${id}`)).catch((error: unknown) => {
    receiver.stop();
    throw error;
  });
  let deliverer: (Running & { adminPort: number }) | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    const expected = d * perDestination;
    const producing = performance.now();
    await produceWave(prepared.producer, prepared.prefix, prepared.ids, perDestination, 1);
    log(`backlog D=${d} × ${perDestination}: ${expected} events written in ${((performance.now() - producing) / 1000).toFixed(1)} s; receivers answer after ${options.slowDelayMs} ms`);
    await setDelay(options.slowDelayMs);
    const started = performance.now();
    deliverer = await prepared.start();
    const pid = deliverer.child.pid!;
    let peak = 0;
    sampler = setInterval(() => {
      peak = Math.max(peak, processMemoryMb(pid)?.rss ?? 0);
    }, 200);
    if (!(await waitReady(deliverer, options.readyTimeoutS))) throw new Error(`backlog D=${d}: the deliverer was not ready in ${options.readyTimeoutS} s; its last output: ${deliverer.output().slice(-1500)}`);
    const readySeconds = (performance.now() - started) / 1000;
    for (let waited = 0; waited < options.slowS; waited += 10) {
      await sleep(Math.min(10, options.slowS - waited) * 1000);
      if (deliverer.child.exitCode !== null || deliverer.child.signalCode !== null) throw new Error(`backlog D=${d}: the deliverer exited (${deliverer.child.signalCode ?? deliverer.child.exitCode}) in the slow phase: ${deliverer.output().slice(-1500)}`);
      log(`backlog D=${d} × ${perDestination}: slow phase, ${Math.min(options.slowS, waited + 10)} of ${options.slowS} s after ready: RSS ${rssMb(pid)} MB (peak ${Math.round(peak)}; ${await memoryBreakdown(deliverer.adminPort)}), ${(await stats()).unique} of ${expected} delivered`);
    }
    const slowPeakMb = Math.max(peak, processMemoryMb(pid)?.rss ?? 0);
    const slowHwmMb = processMemoryMb(pid)?.peak ?? Number.NaN;
    const slowDelivered = (await stats()).unique;
    peak = 0;
    await setDelay(0);
    const fastStart = performance.now();
    let nextProgress = fastStart + 10_000;
    const done = await waitUntil(async () => {
      if (deliverer!.child.exitCode !== null || deliverer!.child.signalCode !== null) throw new Error(`backlog D=${d}: the deliverer exited in the fast phase: ${deliverer!.output().slice(-1500)}`);
      const { unique } = await stats();
      if (performance.now() >= nextProgress) {
        nextProgress += 10_000;
        log(`backlog D=${d} × ${perDestination}: fast phase, ${Math.round((performance.now() - fastStart) / 1000)} s: RSS ${rssMb(pid)} MB (${await memoryBreakdown(deliverer!.adminPort)}), ${unique} of ${expected} delivered`);
      }
      return unique >= expected;
    }, 30 * 60_000);
    const fastSeconds = (performance.now() - fastStart) / 1000;
    clearInterval(sampler);
    if (!done) log(`backlog D=${d} × ${perDestination}: not every event delivered in 30 minutes of the fast phase`);
    // Late duplicates (a redelivery after the last first arrival) would be missed without a pause.
    await sleep(2_000);
    const after = await stats();
    const attempts = await attemptOutcomes(deliverer.adminPort);
    return { perDestination, readySeconds, slowPeakMb, slowHwmMb, slowDelivered, fastPeakMb: peak, fastSeconds, expected, unique: after.unique, duplicates: after.total - after.unique, attempts };
  } finally {
    clearInterval(sampler);
    await prepared.stop(deliverer);
    receiver.stop();
  }
}

// ---------------------------------------------------------------------------
// The idle scenario: a deliverer with D destinations and nothing to deliver.

interface IdleResult {
  readySeconds: number;
  settleCpuPercent: number;
  idleCpuPercent: number;
  rssMb: number;
}

async function runIdle(setup: DelivererSetup, d: number, readyTimeoutS: number, settleS: number, windowS: number): Promise<IdleResult> {
  // No request is ever sent: the URL only has to be valid.
  const prepared = await prepare(setup, d, (id) => `http://127.0.0.1:9/ok/${id}`);
  let deliverer: (Running & { adminPort: number }) | undefined;
  try {
    const started = performance.now();
    deliverer = await prepared.start();
    const pid = deliverer.child.pid!;
    if (!(await waitReady(deliverer, readyTimeoutS))) throw new Error(`idle D=${d}: the deliverer was not ready in ${readyTimeoutS} s; its last output: ${deliverer.output().slice(-1500)}`);
    const readySeconds = (performance.now() - started) / 1000;
    log(`idle D=${d}: ready in ${readySeconds.toFixed(1)} s; CPU over ${windowS} s after ${settleS} s`);
    const atReady = cpuSeconds(pid);
    await sleep(settleS * 1000);
    const before = cpuSeconds(pid);
    const windowStart = performance.now();
    await sleep(windowS * 1000);
    const idleCpuPercent = ((cpuSeconds(pid) - before) / ((performance.now() - windowStart) / 1000)) * 100;
    return { readySeconds, settleCpuPercent: ((before - atReady) / settleS) * 100, idleCpuPercent, rssMb: rssMb(pid) };
  } finally {
    await prepared.stop(deliverer);
  }
}

/** With --interleave: per round and D, each wave's rate over the first D's wave of the same number (they ran next to each other), and the median of all. */
function pairedRatios(results: readonly (RunResult & { round: number })[], firstD: number): string {
  const all: number[] = [];
  const parts: string[] = [];
  for (const r of results) {
    const base = results.find((b) => b.round === r.round && b.d === firstD);
    if (r.d === firstD || base?.rates === undefined || r.rates === undefined) continue;
    const ratios = r.rates.map((rate, i) => rate / base.rates![i]!).filter(Number.isFinite);
    all.push(...ratios);
    parts.push(`round ${r.round} D=${r.d} ${ratios.map((ratio) => `${ratio.toFixed(2)}×`).join('/')}`);
  }
  return all.length === 0 ? '-' : `${parts.join('; ')}; the median of ${all.length}: ${median(all).toFixed(2)}×`;
}

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, {
    counts: '1,100,1000',
    n: 'auto',
    partitions: 1,
    'in-flight': 256,
    'ready-timeout': 120,
    settle: 5,
    idle: 10,
    hanging: '100',
    timeout: '5s',
    batch: 'off',
    waves: 3,
    rounds: 2,
    'cpu-prof-dir': '',
    tiers: DEFAULT_TIERS,
    scenarios: 'counts,hanging',
    destinations: 1000,
    backlog: 1000,
    'backlog-small': 10,
    slow: 60,
    'slow-delay': 2000,
    'idle-window': 30,
    'buffer-budget': '',
    interleave: 'off',
  });
  const scenarios = options.scenarios.split(',');
  const unknownScenarios = scenarios.filter((name) => !(SCENARIOS as readonly string[]).includes(name));
  if (unknownScenarios.length > 0) throw new Error(`--scenarios takes ${SCENARIOS.join(', ')}, comma-separated; not ${unknownScenarios.join(', ')}`);
  const runs = (scenario: Scenario) => scenarios.includes(scenario);
  if (!Number.isInteger(options.rounds) || options.rounds < 1) throw new Error(`--rounds takes a positive integer (times the counts run, in order), not ${options.rounds}`);
  if (!Number.isInteger(options.waves) || options.waves < 1) throw new Error(`--waves takes a positive integer (measured waves after the warm-up wave), not ${options.waves}`);
  const batch = batchOption(options.batch);
  const n = options.n === 'auto' ? (batch > 0 ? BATCHED_EVENTS_PER_WAVE : EVENTS_PER_WAVE) : Number(options.n);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--n takes a positive integer (events per wave), or auto, not ${options.n}`);
  const counts = options.counts.split(',').map(Number);
  if (counts.some((c) => !Number.isInteger(c) || c <= 0)) throw new Error(`--counts takes positive integers, comma-separated, not ${options.counts}`);
  if (options.interleave !== 'off' && options.interleave !== 'on') throw new Error(`--interleave takes on or off, not ${options.interleave}`);
  const interleave = options.interleave === 'on';
  const hangingAt = options.hanging === 'none' || !runs('hanging') ? [] : options.hanging.split(',').map(Number);
  if (hangingAt.some((c) => !Number.isInteger(c) || c < 10)) throw new Error(`--hanging takes D values of 10 or more (comma-separated) or "none", not ${options.hanging}`);

  assertBuildIsFresh();
  if (options['cpu-prof-dir'] !== '') {
    profileProcessesInto(options['cpu-prof-dir']);
    profiling = true;
  }
  const broker = await startOrReuseBroker({ heapMb: 1024 });
  // Each run gets a fresh receiver: its duplicate counts are per run.
  const common = {
    brokers: broker.brokers,
    partitions: options.partitions,
    inFlight: options['in-flight'],
    readyTimeoutS: options['ready-timeout'],
    settleS: options.settle,
    idleS: options.idle,
    timeout: options.timeout,
    batch,
    cpuProfDir: options['cpu-prof-dir'],
    waves: options.waves,
    tiers: options.tiers.split(','),
    bufferBudget: options['buffer-budget'],
    brokerPid: broker.pid,
  };
  const withReceiver = async (healthy: number, hanging: number, d: number): Promise<RunResult> => {
    const receiver = await startReceiver();
    try {
      return await runOnce({ ...common, receiver, healthy, hanging, perDestination: Math.max(1, Math.floor(n / d)) });
    } finally {
      receiver.stop();
    }
  };
  try {
    const results: (RunResult & { round: number })[] = [];
    for (let round = 1; round <= (runs('counts') ? options.rounds : 0); round++) {
      if (interleave) {
        const receivers = await Promise.all(counts.map(() => startReceiver()));
        try {
          const roundResults = await runInterleaved(counts.map((d, i) => ({ ...common, receiver: receivers[i]!, healthy: d, hanging: 0, perDestination: Math.max(1, Math.floor(n / d)) })));
          for (const result of roundResults) {
            log(`round ${round}, D=${result.d} (interleaved): ${JSON.stringify(result)}`);
            results.push({ ...result, round });
          }
        } finally {
          for (const receiver of receivers) receiver.stop();
        }
        continue;
      }
      for (const d of counts) {
        const result = await withReceiver(d, 0, d);
        log(`round ${round}, D=${d}: ${JSON.stringify(result)}`);
        results.push({ ...result, round });
      }
    }
    const hangingRows: string[][] = [];
    for (const d of hangingAt) {
      const hanging = Math.round(d / 10);
      // The same healthy destinations, with the same events each, without and with the
      // hanging ones; --rounds times, the order alternating (as with the counts, the
      // second run of a pair met a warmer broker).
      const alone: number[] = [];
      const beside: number[] = [];
      // Why a run gave no rate, per side (alone, beside).
      const notes: [string[], string[]] = [[], []];
      for (let round = 1; round <= options.rounds; round++) {
        for (const hangingNow of round % 2 === 1 ? [0, hanging] : [hanging, 0]) {
          const result = await withReceiver(d - hanging, hangingNow, d);
          log(`hanging D=${d}, round ${round}, ${hangingNow} hanging: ${JSON.stringify(result)}`);
          if (result.rate === undefined) notes[hangingNow === 0 ? 0 : 1].push(result.note ?? 'no rate');
          else (hangingNow === 0 ? alone : beside).push(result.rate);
        }
      }
      const [aloneRate, besideRate] = [alone, beside].map((rates) => (rates.length > 0 ? median(rates) : undefined));
      hangingRows.push([
        `D=${d}, ${hanging} hanging`,
        aloneRate === undefined ? (notes[0][0] ?? '-') : Math.round(aloneRate).toString(),
        besideRate === undefined ? (notes[1][0] ?? '-') : Math.round(besideRate).toString(),
        aloneRate && besideRate ? `${(besideRate / aloneRate).toFixed(2)}×` : '-',
        '≥ 0.90×',
      ]);
    }
    // The first D's rate in each round: each run's "vs" column is against its own round's.
    const baseOf = (round: number) => results.find((r) => r.round === round)?.rate;
    const firstD = counts[0]!;
    const rateOfD = (d: number) => {
      const rates = results.filter((r) => r.d === d && r.rate !== undefined).map((r) => r.rate!);
      return rates.length > 0 ? median(rates) : undefined;
    };
    const firstRate = rateOfD(firstD);
    const summary = [...new Set(counts)].map((d) => {
      const rate = rateOfD(d);
      return `D=${d} ${rate === undefined ? '-' : Math.round(rate)}${rate !== undefined && firstRate !== undefined ? ` (${(rate / firstRate).toFixed(2)}×)` : ''}`;
    });
    const atOnce = (d: number) => concurrencyAt(options['in-flight'], d) * d;
    const cell = (value: number | undefined, digits = 0) => (value === undefined ? '-' : value.toFixed(digits));
    const countsLines = results.length === 0 ? [] : [
        '',
        `destinations bench: one \`switchyard deliverer\` (dist/, a child process), retry tiers ${options.tiers}, ${n} events per wave split evenly over D destinations, ${options.partitions} partition(s) per topic, concurrencyPerDestination ${options['in-flight']} / D (at least 1), one node:http receiver (0 ms)${batch > 0 ? `; batches of up to ${batch} events (maxWait 100ms)` : ''}`,
        ...formatTable(
          ['round', 'D', 'per dest', 'at once', 'ready s', 'RSS idle MB', 'RSS loaded MB', 'broker conns', `CPU % first ${options.settle} s`, 'idle CPU %', `events/s (median of ${options.waves})`, 'each wave', `vs D=${firstD}`, 'µs CPU/ev', 'main thread', 'broker µs/ev', 'duplicates', 'timeouts'],
          results.map((r) =>
            r.note !== undefined
              ? [String(r.round), String(r.d), String(Math.max(1, Math.floor(n / r.d))), String(atOnce(r.d)), r.note, cell(r.rssIdleMb), '-', cell(r.connections), '-', '-', '-', '-', '-', '-', '-', '-', '-', '-']
              : [
                  String(r.round),
                  String(r.d),
                  String(Math.max(1, Math.floor(n / r.d))),
                  String(atOnce(r.d)),
                  cell(r.readySeconds, 1),
                  cell(r.rssIdleMb),
                  cell(r.rssLoadedMb),
                  cell(r.connections),
                  cell(r.settleCpuPercent, 1),
                  cell(r.idleCpuPercent, 1),
                  cell(r.rate),
                  r.rates === undefined ? '-' : r.rates.map((rate) => Math.round(rate)).join('/'),
                  baseOf(r.round) && r.rate ? `${(r.rate / baseOf(r.round)!).toFixed(2)}×` : '-',
                  cell(r.cpuPerEventUs, 1),
                  cell(r.mainCpuPerEventUs, 1),
                  cell(r.brokerCpuPerEventUs, 1),
                  r.duplicates === undefined || r.received === undefined ? '-' : `${r.duplicates} of ${r.received - r.duplicates}`,
                  cell(r.attempts?.['timeout'] ?? 0),
                ],
          ),
        ),
        'at once: requests in flight at most (concurrencyPerDestination × D); at least one per destination, so past --in-flight destinations it grows with D (and so do the connections to the receiver: one per request in flight). ' +
          `CPU % first ${options.settle} s: right after ready (the start-up's last work); idle CPU %: the ${options.idle} s after that, nothing to deliver; ` +
          `events/s: of each measured wave (after a warm-up wave), first to last arrival at the receiver; the median of ${options.waves}, and each wave's; per dest: events per destination and wave; ` +
          'µs CPU/ev: the deliverer process\'s CPU time per event of a measured wave (its resumption to the last arrival), the median; main thread: the same of its main thread alone (JavaScript; the rest is GC helper threads, libuv\'s pool, the profiler\'s thread); broker µs/ev: the broker JVM\'s CPU per event over the same windows, the median (- when its pid is unknown); duplicates: 2xx answers past the first for a message id, of the events delivered (all waves); timeouts: requests the deliverer gave up on (delivery.timeout), sent again later',
        `events/s of each D, the median of its ${options.rounds} round(s) (vs D=${firstD}): ${summary.join(', ')}`,
        ...(interleave ? [`interleaved: each measured wave against D=${firstD}'s wave of the same turn, round by round: ${pairedRatios(results, firstD)}`] : []),
        'targets: ready < 10 s; connections independent of D; idle CPU < 2 % of a core; D=1000 ≥ 0.90× D=1; zero duplicates',
      ];
    const hangingLines = [
        ...(hangingRows.length > 0
          ? [
              '',
              `hanging: the healthy destinations' rate (events/s) alone, and beside 10 % of destinations whose URL hangs until the ${options.timeout} timeout; medians of ${options.rounds} round(s)`,
              ...formatTable(['run', 'alone/s', 'beside hanging/s', 'ratio', 'target'], hangingRows),
            ]
          : []),
      ];
    const setup: DelivererSetup = { ...common, concurrencyPerDestination: concurrencyAt(options['in-flight'], options.destinations) };
    const backlogLines: string[] = [];
    if (runs('backlog')) {
      const backlogRuns: (BacklogResult & { round: number })[] = [];
      for (let round = 1; round <= options.rounds; round++) {
        // The order alternates between rounds: the second run of a pair meets a warmer broker.
        const sizes = round % 2 === 1 ? [options.backlog, options['backlog-small']] : [options['backlog-small'], options.backlog];
        for (const perDestination of sizes) {
          const result = await runBacklog({ setup, d: options.destinations, perDestination, slowS: options.slow, slowDelayMs: options['slow-delay'], readyTimeoutS: options['ready-timeout'] });
          log(`backlog round ${round}, ${perDestination} per destination: ${JSON.stringify(result)}`);
          backlogRuns.push({ ...result, round });
        }
      }
      const peakOf = (round: number, per: number) => backlogRuns.find((r) => r.round === round && r.perDestination === per)?.slowPeakMb;
      const ratios = backlogRuns.filter((r) => r.perDestination === options.backlog).map((r) => r.slowPeakMb / (peakOf(r.round, options['backlog-small']) ?? Number.NaN));
      const big = backlogRuns.filter((r) => r.perDestination === options.backlog);
      const allDelivered = backlogRuns.every((r) => r.unique >= r.expected);
      backlogLines.push(
        '',
        `backlog: ${options.destinations} destinations with events waiting in each (written before the deliverer starts), retry tiers ${options.tiers}, concurrencyPerDestination ${setup.concurrencyPerDestination}; ` +
          `receivers answer after ${options['slow-delay']} ms until ${options.slow} s after ready (slow phase), then at once (fast phase); ${options.rounds} round(s)`,
        ...formatTable(
          ['round', 'per dest', 'events', 'ready s', 'peak RSS slow MB', 'VmHWM slow MB', 'delivered slow', 'peak RSS fast MB', 'fast s', 'fast events/s', 'all delivered', 'duplicates', 'attempts by outcome'],
          backlogRuns.map((r) => [
            String(r.round),
            String(r.perDestination),
            String(r.expected),
            r.readySeconds.toFixed(1),
            r.slowPeakMb.toFixed(0),
            r.slowHwmMb.toFixed(0),
            String(r.slowDelivered),
            // Nothing left for the fast phase: no figures of it.
            r.slowDelivered >= r.expected ? '-' : r.fastPeakMb.toFixed(0),
            r.slowDelivered >= r.expected ? '-' : r.fastSeconds.toFixed(1),
            r.slowDelivered >= r.expected ? '-' : ((r.unique - r.slowDelivered) / r.fastSeconds).toFixed(0),
            r.unique >= r.expected ? 'yes' : `no (${r.unique})`,
            String(r.duplicates),
            Object.entries(r.attempts).map(([outcome, count]) => `${outcome} ${count}`).join(', ') || '-',
          ]),
        ),
        'peak RSS: the deliverer process\'s VmRSS sampled every 200 ms (slow: from its start to the end of the slow phase); VmHWM slow: the kernel\'s peak at the end of the slow phase; all delivered: every event of the backlog received (by messageId) after the fast phase',
        `peak RSS in the slow phase, ${options.backlog} vs ${options['backlog-small']} per destination, round by round: ${ratios.map((ratio) => `${ratio.toFixed(2)}×`).join(', ')}; ` +
          `the ${options.backlog}-per-destination peaks: ${big.map((r) => r.slowPeakMb.toFixed(0)).join(', ')} MB; every event delivered: ${allDelivered ? 'yes' : 'NO'}`,
        'targets: peak RSS ≤ 400 MB in the slow phase, ≤ 1.25× the small backlog\'s; every event delivered',
      );
    }
    const idleLines: string[] = [];
    if (runs('idle')) {
      const idleRuns: IdleResult[] = [];
      for (let round = 1; round <= options.rounds; round++) {
        const result = await runIdle(setup, options.destinations, options['ready-timeout'], options.settle, options['idle-window']);
        log(`idle round ${round}: ${JSON.stringify(result)}`);
        idleRuns.push(result);
      }
      idleLines.push(
        '',
        `idle: a deliverer with ${options.destinations} destinations (retry tiers ${options.tiers}: ${options.destinations * (options.tiers.split(',').length + 1)} topics read) and nothing to deliver; ` +
          `its CPU over ${options['idle-window']} s, ${options.settle} s after ready, as % of one core (/proc/<pid>/stat)`,
        ...formatTable(
          ['round', 'ready s', `CPU % first ${options.settle} s`, 'idle CPU %', 'RSS MB'],
          idleRuns.map((r, i) => [String(i + 1), r.readySeconds.toFixed(1), r.settleCpuPercent.toFixed(1), r.idleCpuPercent.toFixed(2), String(r.rssMb)]),
        ),
        `idle CPU, the median of ${idleRuns.length}: ${median(idleRuns.map((r) => r.idleCpuPercent)).toFixed(2)} % (target < 2 % of a core)`,
      );
    }
    process.stdout.write([...countsLines, ...hangingLines, ...backlogLines, ...idleLines, ''].join('\n'));
  } finally {
    await broker.stop();
  }
}

if (isEntryPoint(import.meta.url)) runMain(main);
