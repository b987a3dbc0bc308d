// `npm run bench -- destinations [--counts 1,100,1000] [--n auto] [--partitions 1] [--in-flight 256]
//   [--ready-timeout 120] [--settle 5] [--idle 10] [--hanging 100] [--timeout 5s] [--batch off] [--waves 3]
//   [--rounds 2] [--cpu-prof-dir DIR] [--tiers 5s]`,
//   or standalone: `tsx bench/destinations.ts [same options]`.
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
// What a destination costs the deliverer: one `switchyard deliverer` process (the real
// CLI, a child process, as Kubernetes runs it) with D destinations, all posting to one
// local keep-alive receiver (a child process, 0 ms), the same total of events at every
// D (split evenly). Per D it prints: time to ready (`/readyz` of the admin port), RSS,
// established TCP connections from the deliverer to the broker, CPU while idle (nothing
// to deliver, over --idle seconds once --settle seconds passed after ready: the start-up's
// last work, such as the first lag sample, is not idleness; the CPU of those first
// seconds is printed beside it), the steady-state rate of the measured waves after a
// warm-up wave (timed at the receiver, first to last arrival of a wave; the median of
// --waves waves, with their range), and the duplicates the receiver counted (by message id).
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
// NOTE: kafka.partitions defaults to 1. Every destination has 3 topics here
// (deliveries, one retry tier, dlq), so D = 1,000 already means 3,000 partitions on one
// (shared) broker; more per topic would measure the broker, not the deliverer. One
// partition does not cap D = 1: the deliverer keeps concurrencyPerDestination requests
// in flight within a partition.
//
// NOTE: --tiers is one tier (5s) by default, for the 3 topics a destination above; the
// default config has four (10s,1m,10m,1h), and `--tiers 10s,1m,10m,1h` measures that
// shape: D = 1,000 is then 6,000 topics, 5,000 of them read by the deliverer. With
// kafkajs's joins as they were, that deliverer never delivered (src/kafka/join-fix.ts).
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
// makes 3,000 topics; a small shared broker (the tests' 384 MB heap) can run out of
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
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin } from '@platformatic/kafka';
import { createAdmin, createKafka, createProducer } from '../src/kafka/index.js';
import type { KafkaAdmin, OutboundRecord, RecordProducer, TopicRecords } from '../src/kafka/index.js';
import { silentLogger } from '../src/observability/logger.js';
import { startDaemon, writeConfigFile } from '../test/support/daemon.js';
import type { Daemon } from '../test/support/daemon.js';
import { batchOption, benchOptions, deliveryMessage, formatTable, freePort, isEntryPoint, log, median, runMain, startOrReuseBroker, startReceiverProcess } from './support.js';

const SECRET = 'bench-secret';
/** Events per wave (--n auto): without batches, and with --batch (see the NOTE at the top). */
const EVENTS_PER_WAVE = 20_000;
const BATCHED_EVENTS_PER_WAVE = 100_000;
/** The retry tiers of --tiers' default: one, so that D = 1,000 is 3,000 topics (see the NOTE on kafka.partitions). */
const ONE_TIER = '5s';

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

/** `per` events to each of `destinations`, with the headers the router writes. */
async function produceWave(producer: RecordProducer, prefix: string, destinations: readonly string[], per: number, wave: number): Promise<void> {
  const pending: TopicRecords[] = [];
  let size = 0;
  const flush = async () => {
    if (size === 0) return;
    await producer.send(pending.splice(0));
    size = 0;
  };
  for (const id of destinations) {
    // The body's messageId names the wave: the receiver counts arrivals per wave.
    const messages: OutboundRecord[] = [];
    for (let i = 0; i < per; i++) messages.push(deliveryMessage(`w${wave}-${id}-${i}`, i));
    // NOTE: at most 1,000 records (~700 KB) per topic and request: the broker refuses a record batch over 1 MB.
    for (let start = 0; start < messages.length; start += 1_000) {
      const chunk = messages.slice(start, start + 1_000);
      pending.push({ topic: `${prefix}deliveries.${id}`, messages: chunk });
      size += chunk.length;
      if (size >= 1_000) await flush();
    }
  }
  await flush();
}

function topicsOf(prefix: string, id: string, tiers: readonly string[]): string[] {
  return [`${prefix}deliveries.${id}`, ...tiers.map((tier) => `${prefix}deliveries.${id}.retry.${tier}`), `${prefix}deliveries.${id}.dlq`];
}

async function createTopics(admin: KafkaAdmin, topics: readonly string[], partitions: number): Promise<void> {
  // The port's topic creation: requests the broker accepts at any scale, leaders awaited.
  await admin.ensureTopics(
    topics.map((topic) => ({ topic })),
    { partitions, replicationFactor: 1 },
  );
}

async function deleteTopics(admin: Admin, topics: readonly string[]): Promise<void> {
  for (let start = 0; start < topics.length; start += 500) {
    await admin.deleteTopics({ topics: topics.slice(start, start + 500) }).catch((error: unknown) => log(`deleting topics: ${(error as Error).message}`));
  }
}

/** The V8 heap flags this process runs with (`--max-semi-space-size=…`), for a child started as the image starts a role. */
function v8FlagsOfThisProcess(): string {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(' ')].filter((arg) => arg.startsWith('--max-semi-space-size')).join(' ');
}

/** /proc/<pid>/stat utime + stime, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "(comm)": field 3 is state, so utime (14) and stime (15) are at 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / 100; // NOTE: USER_HZ is 100 on Linux
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
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
  /** The measured waves' rates (events/s), in the order run. */
  rates?: number[];
  duplicates?: number;
  received?: number;
  /** switchyard_delivery_attempts_total summed over the destinations, by outcome (what a duplicate came from). */
  attempts?: Record<string, number>;
  note?: string;
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

/**
 * One deliverer run: `healthy` destinations to /ok, `hanging` ones to /hang; the events
 * of each wave split evenly over all of them. Measures only the healthy ones' arrivals.
 */
async function runOnce(options: RunOptions): Promise<RunResult> {
  const d = options.healthy + options.hanging;
  const run = randomBytes(4).toString('hex');
  const prefix = `bench-dest-${run}.`;
  const width = String(d).length;
  const ids = Array.from({ length: d }, (_, i) => `d${String(i).padStart(width, '0')}`);
  const hangingIds = new Set(ids.slice(options.healthy));
  const healthyIds = ids.filter((id) => !hangingIds.has(id));
  const client = createKafka({ brokers: options.brokers.split(','), clientId: `bench-dest-${run}`, topicPrefix: prefix, partitions: options.partitions, replicationFactor: 1 }, silentLogger());
  const admin = createAdmin(client);
  await admin.connect();
  const deleter = new Admin({ clientId: `bench-dest-${run}`, bootstrapBrokers: options.brokers.split(','), timeout: 120_000 });
  const producer = createProducer(client);
  await producer.connect();
  const topics = ids.flatMap((id) => topicsOf(prefix, id, options.tiers));
  const adminPort = await freePort();
  const file = writeConfigFile({
    kafka: { brokers: options.brokers.split(','), clientId: `bench-dest-${run}`, topicPrefix: prefix, partitions: options.partitions },
    admin: { port: adminPort, host: '127.0.0.1' },
    delivery: { timeout: options.timeout, retryTiers: [...options.tiers], maxRetryWindow: '1h', concurrencyPerDestination: concurrencyAt(options.inFlight, d) },
    sources: [{ id: 'web' }], // a config needs a source; this bench only delivers
    destinations: ids.map((id) => ({
      id,
      type: 'webhooks',
      settings: {
        webhooks: [{ url: options.receiver.url(hangingIds.has(id) ? `/hang/${id}` : `/ok/${id}`) }],
        sharedSecret: SECRET,
        ...(options.batch > 0 ? { batch: { maxEvents: options.batch, maxBytes: '512KB', maxWait: '100ms' } } : {}),
      },
    })),
  });
  const brokerPorts = new Set(options.brokers.split(',').map((b) => Number(b.split(':').pop())));
  const result: RunResult = { d };
  let daemon: Daemon | undefined;
  try {
    // Inside the try: topics made before a failure are deleted too.
    log(`D=${d} (${options.hanging} hanging): creating ${topics.length} topics`);
    await createTopics(admin, topics, options.partitions);
    const started = performance.now();
    // The deliverer runs with this process's V8 flags (package.json's bench script: the image's).
    const profile = options.cpuProfDir === '' ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfDir}`, `--cpu-prof-name=deliverer-d${d}-\${pid}.cpuprofile`];
    daemon = startDaemon(['deliverer', '--config', file], { LOG_LEVEL: 'warn', NODE_OPTIONS: v8FlagsOfThisProcess() }, profile);
    const pid = daemon.process.pid!;
    const ready = await waitUntil(async () => {
      if (daemon!.process.exitCode !== null) throw new Error(`the deliverer exited: ${daemon!.output().slice(-2000)}`);
      return (await fetch(`http://127.0.0.1:${adminPort}/readyz`).catch(() => undefined))?.status === 200;
    }, options.readyTimeoutS * 1000);
    if (!ready) {
      result.note = `not ready in ${options.readyTimeoutS} s`;
      const why = await fetch(`http://127.0.0.1:${adminPort}/readyz`).then((r) => r.text(), (error: unknown) => String(error));
      log(`D=${d}: not ready in ${options.readyTimeoutS} s; /readyz: ${why.slice(0, 600)}; last output: ${daemon.output().slice(-1500)}`);
      result.rssIdleMb = rssMb(pid);
      result.connections = brokerConnections(pid, brokerPorts);
      return result;
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

    const perHealthy = options.perDestination * healthyIds.length;
    const rates: number[] = [];
    const cpuPerEvent: number[] = [];
    for (let wave = 1; wave <= 1 + options.waves; wave++) {
      log(`D=${d}: wave ${wave}, ${options.perDestination * d} events`);
      // A measured wave is written while the deliverer is stopped (SIGSTOP): its rate is
      // then the deliverer's, not the writing's (see the NOTE at the top).
      const measured = wave > 1;
      if (measured) process.kill(pid, 'SIGSTOP');
      const producing = performance.now();
      try {
        await produceWave(producer, prefix, ids, options.perDestination, wave);
      } finally {
        if (measured) process.kill(pid, 'SIGCONT');
      }
      log(`D=${d}: wave ${wave} written to Kafka in ${((performance.now() - producing) / 1000).toFixed(1)} s`);
      const cpuAtStart = cpuSeconds(pid);
      const resumedAt = process.hrtime.bigint();
      const done = await waitUntil(async () => (await options.receiver.stats(wave)).wave.count >= perHealthy, 600_000);
      if (!done) throw new Error(`D=${d}: wave ${wave} not delivered in 10 minutes: ${JSON.stringify(await options.receiver.stats(wave))}`);
      if (measured) {
        cpuPerEvent.push(((cpuSeconds(pid) - cpuAtStart) * 1e6) / perHealthy);
        const { wave: arrivals } = await options.receiver.stats(wave);
        rates.push((arrivals.count - 1) / ((arrivals.last - arrivals.first) / 1000));
      }
      // The wave on the clock of a CPU profile's timestamps (CLOCK_MONOTONIC, µs): to read only its samples.
      if (options.cpuProfDir !== '') log(`D=${d}: wave ${wave} window (monotonic µs) ${resumedAt / 1000n}..${process.hrtime.bigint() / 1000n}`);
    }
    result.rates = rates;
    result.rate = median(rates);
    result.cpuPerEventUs = median(cpuPerEvent);
    result.rssLoadedMb = rssMb(pid);
    // Late duplicates (a redelivery after the last first arrival) would be missed without a pause.
    await sleep(2_000);
    const after = await options.receiver.stats(1);
    result.received = after.total;
    result.duplicates = after.total - after.unique;
    result.attempts = await attemptOutcomes(adminPort);
    return result;
  } finally {
    if (daemon) {
      // NOTE: node writes the CPU profile only on a clean exit.
      daemon.kill(options.cpuProfDir === '' ? 'SIGKILL' : 'SIGTERM');
      await daemon.exited;
    }
    await producer.disconnect();
    await deleteTopics(deleter, topics);
    await deleter.close();
    await admin.disconnect();
  }
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
    tiers: ONE_TIER,
  });
  if (!Number.isInteger(options.rounds) || options.rounds < 1) throw new Error(`--rounds takes a positive integer (times the counts run, in order), not ${options.rounds}`);
  if (!Number.isInteger(options.waves) || options.waves < 1) throw new Error(`--waves takes a positive integer (measured waves after the warm-up wave), not ${options.waves}`);
  const batch = batchOption(options.batch);
  const n = options.n === 'auto' ? (batch > 0 ? BATCHED_EVENTS_PER_WAVE : EVENTS_PER_WAVE) : Number(options.n);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--n takes a positive integer (events per wave), or auto, not ${options.n}`);
  const counts = options.counts.split(',').map(Number);
  if (counts.some((c) => !Number.isInteger(c) || c <= 0)) throw new Error(`--counts takes positive integers, comma-separated, not ${options.counts}`);
  const hangingAt = options.hanging === 'none' ? [] : options.hanging.split(',').map(Number);
  if (hangingAt.some((c) => !Number.isInteger(c) || c < 10)) throw new Error(`--hanging takes D values of 10 or more (comma-separated) or "none", not ${options.hanging}`);

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
    for (let round = 1; round <= options.rounds; round++) {
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
    process.stdout.write(
      [
        '',
        `destinations bench: one \`switchyard deliverer\` (CLI child process), ${n} events per wave split evenly over D destinations, ${options.partitions} partition(s) per topic, concurrencyPerDestination ${options['in-flight']} / D (at least 1), one node:http receiver (0 ms)${batch > 0 ? `; batches of up to ${batch} events (maxWait 100ms)` : ''}`,
        ...formatTable(
          ['round', 'D', 'at once', 'ready s', 'RSS idle MB', 'RSS loaded MB', 'broker conns', `CPU % first ${options.settle} s`, 'idle CPU %', `events/s (median of ${options.waves})`, 'range', `vs D=${firstD}`, 'µs CPU/ev', 'duplicates', 'timeouts'],
          results.map((r) =>
            r.note !== undefined
              ? [String(r.round), String(r.d), String(atOnce(r.d)), r.note, cell(r.rssIdleMb), '-', cell(r.connections), '-', '-', '-', '-', '-', '-', '-', '-']
              : [
                  String(r.round),
                  String(r.d),
                  String(atOnce(r.d)),
                  cell(r.readySeconds, 1),
                  cell(r.rssIdleMb),
                  cell(r.rssLoadedMb),
                  cell(r.connections),
                  cell(r.settleCpuPercent, 1),
                  cell(r.idleCpuPercent, 1),
                  cell(r.rate),
                  r.rates === undefined ? '-' : `${Math.round(Math.min(...r.rates))}–${Math.round(Math.max(...r.rates))}`,
                  baseOf(r.round) && r.rate ? `${(r.rate / baseOf(r.round)!).toFixed(2)}×` : '-',
                  cell(r.cpuPerEventUs, 1),
                  r.duplicates === undefined || r.received === undefined ? '-' : `${r.duplicates} of ${r.received - r.duplicates}`,
                  cell(r.attempts?.['timeout'] ?? 0),
                ],
          ),
        ),
        'at once: requests in flight at most (concurrencyPerDestination × D); at least one per destination, so past --in-flight destinations it grows with D (and so do the connections to the receiver: one per request in flight). ' +
          `CPU % first ${options.settle} s: right after ready (the start-up's last work); idle CPU %: the ${options.idle} s after that, nothing to deliver; ` +
          `events/s: of each measured wave (after a warm-up wave), first to last arrival at the receiver; the median and the range of ${options.waves}; ` +
          'µs CPU/ev: the deliverer process\'s CPU time per event of a measured wave (its resumption to the last arrival), the median; duplicates: 2xx answers past the first for a message id, of the events delivered (all waves); timeouts: requests the deliverer gave up on (delivery.timeout), sent again later',
        `events/s of each D, the median of its ${options.rounds} round(s) (vs D=${firstD}): ${summary.join(', ')}`,
        'targets: ready < 10 s; connections independent of D; idle CPU < 2 % of a core; D=1000 ≥ 0.90× D=1; zero duplicates',
        ...(hangingRows.length > 0
          ? [
              '',
              `hanging: the healthy destinations' rate (events/s) alone, and beside 10 % of destinations whose URL hangs until the ${options.timeout} timeout; medians of ${options.rounds} round(s)`,
              ...formatTable(['run', 'alone/s', 'beside hanging/s', 'ratio', 'target'], hangingRows),
            ]
          : []),
        '',
      ].join('\n'),
    );
  } finally {
    await broker.stop();
  }
}

if (isEntryPoint(import.meta.url)) runMain(main);
