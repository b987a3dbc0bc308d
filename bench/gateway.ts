// `npm run bench -- gateway [--seconds 10] [--connections 32] [--rounds 2] [--partitions 6] [--parts batch,steady] [--steady-posts 20000] [--cpu-prof-dir DIR]`
// (or standalone: `tsx bench/gateway.ts ...`)
//
// Requests/s of 20-call batches (~1 KB per call, as analytics-node sends them) through
// the gateway, against a bare node:http server in the same run that reads the same
// bodies, JSON.parses them and produces each call to Kafka: one send per request on a
// bare @platformatic/kafka producer (its defaults, acks=all), the answer after the ack. Three sides:
//   baseline  the bare server;
//   gateway   the gateway as it runs (concurrent requests' writes merged by the port's producer, src/kafka/producer.ts);
//   unmerged  the gateway with one sendBatch per request, like the baseline: the
//             difference to the baseline is then only what the gateway adds (write-key
//             lookup, validation, merging of context, skew correction, messageIds,
//             headers, limits, metrics).
//
// The load comes from a separate process (undici, N keep-alive connections, one
// request in flight on each), so the client's CPU is not the servers'. Each side gets a
// warm-up, then `--seconds` of load; the order of the sides rotates between rounds.
//
// Then the steady-load row (`--parts steady`): the whole stack as it is deployed, the
// regime a webhook system lives in. `switchyard gateway`, `router` and `deliverer`
// (dist/cli/main.js: `npm run build` after changing src/), each its own process, one
// source, one destination with a shared secret, a 0 ms receiver; `--steady-posts`
// single-event authenticated POSTs (/v1/track, ~700 bytes, no timestamp: the body's
// timestamp is then the gateway's receipt time; 1,000 users, all seen in the warm-up) from `--connections` clients at once
// (undici, one request in flight on each; from this process, which is not measured).
// After a warm-up of a tenth of them, all delivered, it prints events/s (POSTs sent to
// last delivery), POST acknowledgement p50/p99, received → delivered p50/p99 (the
// receiver's clock minus the body's timestamp; same machine, millisecond resolution),
// and CPU per delivered event of each Switchyard process and of the broker's JVM, read
// from /proc/<pid>/stat over that window (a broker shared with other work charges that
// work too). Beside it, in the same run (the order rotating between rounds), the bare
// floor of the same shape: bench/e2e.ts's runIngest (node:http, one kafkajs send per
// POST, acks=all, the answer after the ack), then its bare render and post hops; the
// ratios Switchyard / bare follow the table. `--cpu-prof-dir DIR`: each process writes a
// CPU profile there.
// Starts its own local broker unless KAFKA_BROKERS is set.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import type { Config } from '../src/config/schema.js';
import { staticConfigStore } from '../src/config/store.js';
import { createGatewayService } from '../src/gateway/gateway-service.js';
import { Producer } from '@platformatic/kafka';
import { createKafka } from '../src/kafka/index.js';
import { createMetrics } from '../src/observability/metrics.js';
import { silentLogger } from '../src/observability/logger.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Stopwatch,
  benchOptions,
  formatTable,
  freePort,
  isEntryPoint,
  loadBenchConfig,
  log,
  median,
  processCpuSeconds,
  profileProcessesInto,
  recordsIn,
  runMain,
  startOrReuseBroker,
  startReceiverProcess,
  startSwitchyardRole,
  stopProcesses,
  waitForGroups,
  createBenchAdmin,
} from './support.js';
import type { BenchAdmin, Broker, ReceiverProcess, Running } from './support.js';
import { startBare } from './e2e.js';
import { delivererGroupId, routerGroupId } from '../src/runtime/group-ids.js';
import { topicNames } from '../src/runtime/topics.js';

const HERE = fileURLToPath(import.meta.url);
const WRITE_KEY = 'bench-write-key-0001';
const CALLS_PER_REQUEST = 20;
const DISTINCT_BODIES = 200;
const WARMUP_SECONDS = 3;
/** `gateway`: as it runs in production; `unmerged`: each request's write sent alone, like the baseline's. */
const SIDES = ['baseline', 'gateway', 'unmerged'] as const;

/**
 * The source's limits (docs/configuration.md#sources): configured, so that every request
 * passes through them, and far above what the bench sends, so that none is refused.
 */
const UNREACHED_LIMITS = { callsPerSecond: 1_000_000, bytesPerSecond: '1024MB', burst: 60 };

function benchConfig(brokers: string, prefix: string, partitions: number): Config {
  return loadBenchConfig(
    {
      kafka: { brokers: brokers.split(','), clientId: `bench-${prefix}`, topicPrefix: prefix, partitions },
      gateway: { port: 0, host: '127.0.0.1' },
      sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'], limits: UNREACHED_LIMITS }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/h' }] } }],
    },
    'bench-gateway.yaml',
  );
}

/** A batch body as @segment/analytics-node sends it: 20 calls of ~1 KB, messageIds, timestamps, sentAt. */
function benchBody(n: number): string {
  const sentAt = new Date(Date.UTC(2026, 4, 1, 12) + n * 1000);
  const batch = Array.from({ length: CALLS_PER_REQUEST }, (_, i) => {
    const seq = n * CALLS_PER_REQUEST + i;
    return {
      type: i % 5 === 0 ? 'identify' : 'track',
      userId: `user-${(seq * 7919) % 50_000}`,
      messageId: `bench-${n}-${i}`,
      timestamp: new Date(sentAt.getTime() - 1000 + i).toISOString(),
      ...(i % 5 === 0 ? { traits: { plan: 'pro', seats: seq % 40 } } : { event: 'Order Completed', properties: { seq, total: 99.5, padding: 'p'.repeat(480) } }),
      context: {
        ip: `203.0.113.${seq % 250}`,
        library: { name: '@segment/analytics-node', version: '3.1.0' },
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
        page: { path: '/checkout/complete', url: 'https://shop.example.com/checkout/complete', title: 'Thank you' },
      },
      integrations: {},
      _metadata: { nodeVersion: '20.19.0', jsRuntime: 'node' },
    };
  });
  return JSON.stringify({ batch, writeKey: WRITE_KEY, sentAt: sentAt.toISOString() });
}

// ---------------------------------------------------------------------------
// The baseline: what any HTTP-to-Kafka bridge must do, and nothing more.

async function startBaseline(brokers: string, topic: string): Promise<{ port: number; stop(): Promise<void> }> {
  // A bare @platformatic/kafka producer with its defaults and acks=all.
  const producer = new Producer({ clientId: 'bench-gw-baseline', bootstrapBrokers: brokers.split(','), acks: -1 });
  await producer.metadata({ topics: [topic] });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { batch: Record<string, unknown>[] };
      const messages = body.batch.map((call) => ({
        topic,
        key: Buffer.from((call.userId ?? call.anonymousId) as string),
        value: Buffer.from(JSON.stringify(call)),
      }));
      producer.send({ messages }).then(
        () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"success":true}');
        },
        () => {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end('{"success":false}');
        },
      );
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    port: (server.address() as AddressInfo).port,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      await producer.close();
    },
  };
}

async function startGateway(config: Config, merging: boolean): Promise<{ port: number; stop(): Promise<void> }> {
  const logger = silentLogger();
  const gateway = createGatewayService(
    {
      config: staticConfigStore(config),
      kafka: createKafka(config.kafka, logger),
      metrics: createMetrics({ defaultMetrics: false }),
      logger,
    },
    // Without merging, every request's write is its own sendBatch, as in the baseline.
    merging ? {} : { maxConcurrentSends: Number.POSITIVE_INFINITY },
  );
  await gateway.start();
  return { port: gateway.port(), stop: () => gateway.stop() };
}

// ---------------------------------------------------------------------------
// The load client, in its own process.

interface LoadResult {
  requests: number;
  failed: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  /** Requests sent during the warm-up (not timed, but served: they count in the server's CPU). */
  warmupRequests: number;
}

/** A side's timed result, with the serving process's CPU per call over warm-up and timed load. */
type SideResult = LoadResult & { cpuUsPerCall: number };

interface LoadSpec {
  port: number;
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

async function runLoadClient(spec: LoadSpec): Promise<LoadResult> {
  const bodies = Array.from({ length: DISTINCT_BODIES }, (_, n) => benchBody(n));
  const pool = new Pool(`http://127.0.0.1:${spec.port}`, { connections: spec.connections, pipelining: 1 });
  const authorization = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
  let next = 0;
  const phase = async (seconds: number, record: boolean) => {
    const latencies: number[] = [];
    let requests = 0;
    let failed = 0;
    const deadline = performance.now() + seconds * 1000;
    const clock = new Stopwatch();
    const worker = async () => {
      while (performance.now() < deadline) {
        const body = bodies[next++ % bodies.length]!;
        const sent = performance.now();
        const res = await pool.request({
          path: '/v1/batch',
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization },
          body,
        });
        await res.body.dump();
        if (res.statusCode === 200) requests += 1;
        else failed += 1;
        if (record) latencies.push(performance.now() - sent);
      }
    };
    await Promise.all(Array.from({ length: spec.connections }, worker));
    const elapsed = clock.read().seconds;
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    return { requests, failed, seconds: elapsed, p50Ms: at(0.5), p99Ms: at(0.99) };
  };
  const warmup = await phase(spec.warmupSeconds, false);
  const result = await phase(spec.seconds, true);
  await pool.close();
  return { ...result, warmupRequests: warmup.requests + warmup.failed };
}

function loadFromChild(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', HERE, '--load-client', JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code !== 0) {
        fail(new Error(`the load client exited with ${code}`));
        return;
      }
      try {
        done(JSON.parse(out.trim().split('\n').pop() ?? '') as LoadResult);
      } catch (error) {
        fail(new Error(`the load client printed no result: ${out.slice(-500)}`, { cause: error }));
      }
    });
  });
}

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// The steady-load row: gateway → router → deliverer → receiver, each its own process.

// The receiver of the steady-load row: counts each POST under the first segment of its
// path and keeps how long after the body's timestamp it arrived; `GET /__stats/<tag>`
// answers {count, p50, p99} (ms).
const LATENCY_RECEIVER_SOURCE = `
const http = require('node:http');
const seen = new Map();
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/__stats/')) {
    const lags = (seen.get(req.url.slice('/__stats/'.length)) || []).slice().sort((a, b) => a - b);
    const at = (q) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))] || 0;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ count: lags.length, p50: at(0.5), p99: at(0.99) }));
    return;
  }
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const arrived = Date.now();
    const tag = req.url.split('/')[1];
    let lag = 0;
    try { lag = arrived - Date.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')).timestamp); } catch {}
    if (!seen.has(tag)) seen.set(tag, []);
    seen.get(tag).push(lag);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
`;

/**
 * The steady row's users: all met during the warm-up, so that the measured load is a
 * router that has run for a while (its seen-pair cache knows them: no `seen` record per
 * call, src/audiences/router-hook.ts), not the first minutes of a new deployment.
 */
const STEADY_USERS = 1_000;

/** A single track call as a server-side library posts it: no timestamp (the gateway stamps its receipt time). */
function steadyBody(n: number): string {
  return JSON.stringify({
    userId: `user-${(n * 7919) % STEADY_USERS}`,
    messageId: `steady-${n}`,
    event: 'Order Completed',
    properties: { seq: n, total: 99.5, currency: 'EUR', padding: 'p'.repeat(300) },
    context: {
      ip: `203.0.113.${n % 250}`,
      library: { name: '@segment/analytics-node', version: '3.1.0' },
      page: { path: '/checkout/complete', url: 'https://shop.example.com/checkout/complete', title: 'Thank you' },
    },
  });
}

interface SteadyResult {
  eventsPerSecond: number;
  ackP50Ms: number;
  ackP99Ms: number;
  deliveredP50Ms: number;
  deliveredP99Ms: number;
  failed: number;
  /** µs of CPU per delivered event: gateway, router, deliverer, broker. */
  cpuUs: Record<string, number>;
}

async function receiverStats(receiver: ReceiverProcess, tag: string): Promise<{ count: number; p50: number; p99: number }> {
  const res = await fetch(receiver.url(`/__stats/${tag}`));
  return (await res.json()) as { count: number; p50: number; p99: number };
}

async function waitForReady(adminPort: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`nothing answered 200 on port ${adminPort} within ${timeoutMs / 1000} s (the gateway's /readyz, or the bare intake)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The steady row's pipelines: Switchyard's three roles, and the bare floor of the same shape (bench/e2e.ts's baselines). */
const STEADY_PIPELINES = ['switchyard', 'bare'] as const;
type SteadyPipeline = (typeof STEADY_PIPELINES)[number];

/** The processes of a steady pipeline, and the port its POSTs go to once `ready` resolves. */
async function startSteadyPipeline(
  pipeline: SteadyPipeline,
  broker: Broker,
  admin: BenchAdmin,
  receiver: ReceiverProcess,
  options: { partitions: number; tag: string; dir: string },
): Promise<{ running: Running[]; port: number; ready: () => Promise<void> }> {
  const { tag, partitions } = options;
  const prefix = `bench-gw-${tag}.`;
  const port = await freePort();
  const url = receiver.url(`/${tag}/hooks`);
  if (pipeline === 'bare') {
    const calls = `${prefix}calls`;
    const hop = `${prefix}hop.hooks`;
    await admin.ensureTopics([calls, hop].map((topic) => ({ topic })), { partitions, replicationFactor: 1 });
    const brokers = broker.brokers.split(',');
    const render = { role: 'render' as const, brokers, groupId: `${prefix}render`, input: [calls], outputs: [hop], urls: [] };
    const post = { role: 'post' as const, brokers, groupId: `${prefix}post`, input: [hop], outputs: [], urls: [url] };
    const running = [
      startBare('ingest', { role: 'ingest', brokers, groupId: `${prefix}ingest`, input: [], outputs: [calls], urls: [], port }),
      startBare('route', render),
      startBare('deliver', post),
    ];
    return { running, port, ready: async () => {
      await waitForGroups(admin, [render.groupId, post.groupId], running);
      await waitForReady(port);
    } };
  }
  const config = {
    kafka: { brokers: broker.brokers.split(','), clientId: `bench-${tag}`, topicPrefix: prefix, partitions },
    gateway: { port, host: '127.0.0.1' },
    log: { level: 'warn' },
    sources: [{ id: 'web', writeKey: WRITE_KEY, destinations: ['hooks'], limits: UNREACHED_LIMITS }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url }], sharedSecret: 'bench-secret' } }],
  };
  const running = [
    await startSwitchyardRole('gateway', 'gateway', config, options.dir),
    await startSwitchyardRole('router', 'router', config, options.dir),
    await startSwitchyardRole('deliverer', 'deliverer', config, options.dir),
  ];
  const naming = { kafka: { clientId: config.kafka.clientId, topicPrefix: prefix } };
  return { running, port, ready: async () => {
    await waitForGroups(admin, [routerGroupId(naming), delivererGroupId(naming)], running);
    await waitForReady(running[0]!.adminPort);
  } };
}

async function runSteady(
  pipeline: SteadyPipeline,
  broker: Broker,
  admin: BenchAdmin,
  receiver: ReceiverProcess,
  options: { posts: number; connections: number; partitions: number; round: number; run: string },
): Promise<SteadyResult> {
  const tag = `steady-${pipeline}-${options.run}-${options.round}`;
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-gateway-'));
  const { running, port, ready } = await startSteadyPipeline(pipeline, broker, admin, receiver, { partitions: options.partitions, tag, dir });
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: options.connections, pipelining: 1 });
  try {
    await ready();
    const authorization = `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`;
    let next = 0;
    let failed = 0;
    const post = async (count: number, latencies: number[]) => {
      const end = next + count;
      const worker = async () => {
        while (next < end) {
          const body = steadyBody(next++);
          const sent = performance.now();
          const res = await pool.request({ path: '/v1/track', method: 'POST', headers: { 'content-type': 'application/json', authorization }, body });
          await res.body.dump();
          if (res.statusCode !== 200) failed += 1;
          latencies.push(performance.now() - sent);
        }
      };
      await Promise.all(Array.from({ length: options.connections }, worker));
    };
    const delivered = async (count: number) => {
      const deadline = Date.now() + 10 * 60_000;
      for (;;) {
        const stats = await receiverStats(receiver, tag);
        if (stats.count >= count) return stats;
        if (Date.now() > deadline) throw new Error(`steady load: ${stats.count} of ${count} events delivered in 10 minutes`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const warmup = Math.max(STEADY_USERS, Math.round(options.posts / 10));
    await post(warmup, []);
    await delivered(warmup);
    const pids = running.map(({ name, child }) => [name, child.pid] as const);
    const cpuAt = () => Object.fromEntries([...pids, ['broker', broker.pid] as const].map(([name, pid]) => [name, processCpuSeconds(pid)] as const));
    const before = cpuAt();
    const startedAt = performance.now();
    const latencies: number[] = [];
    await post(options.posts, latencies);
    await delivered(warmup + options.posts);
    const seconds = (performance.now() - startedAt) / 1000;
    const after = cpuAt();
    // Warm-up events are in the receiver's lags too: a tenth, sent before and at the same rate.
    const stats = await receiverStats(receiver, tag);
    latencies.sort((a, b) => a - b);
    const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
    const cpuUs: Record<string, number> = {};
    for (const [name, end] of Object.entries(after)) {
      const start = before[name];
      if (end !== undefined && start !== undefined) cpuUs[name] = ((end - start) * 1e6) / options.posts;
    }
    return { eventsPerSecond: options.posts / seconds, ackP50Ms: at(0.5), ackP99Ms: at(0.99), deliveredP50Ms: stats.p50, deliveredP99Ms: stats.p99, failed, cpuUs };
  } finally {
    await pool.close();
    await stopProcesses(running);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function steadyRow(broker: Broker, admin: BenchAdmin, options: { posts: number; connections: number; partitions: number; rounds: number }): Promise<string[]> {
  const receiver = await startReceiverProcess(LATENCY_RECEIVER_SOURCE);
  const run = randomBytes(4).toString('hex');
  const results: (SteadyResult & { pipeline: SteadyPipeline })[] = [];
  try {
    for (let round = 1; round <= options.rounds; round++) {
      // Rotate which pipeline goes first, so none always gets the warmer broker.
      const order = STEADY_PIPELINES.map((_, i) => STEADY_PIPELINES[(i + round - 1) % STEADY_PIPELINES.length]!);
      for (const pipeline of order) {
        const result = await runSteady(pipeline, broker, admin, receiver, { ...options, round, run });
        results.push({ ...result, pipeline });
        const cpu = Object.entries(result.cpuUs).map(([name, us]) => `${name} ${us.toFixed(0)}`).join(', ');
        log(
          `round ${round} steady ${pipeline}: ${result.eventsPerSecond.toFixed(0)} events/s, ack p50/p99 ${result.ackP50Ms.toFixed(1)}/${result.ackP99Ms.toFixed(1)} ms, ` +
            `delivered p50/p99 ${result.deliveredP50Ms}/${result.deliveredP99Ms} ms, CPU µs per event: ${cpu}`,
        );
      }
    }
  } finally {
    receiver.stop();
  }
  const roles: Record<SteadyPipeline, [string, string, string]> = { switchyard: ['gateway', 'router', 'deliverer'], bare: ['ingest', 'route', 'deliver'] };
  const m = (pipeline: SteadyPipeline, pick: (r: SteadyResult) => number | undefined) => {
    const values = results.filter((r) => r.pipeline === pipeline).map(pick).filter((v): v is number => v !== undefined);
    return values.length > 0 ? median(values) : undefined;
  };
  const ms = (value: number | undefined) => (value === undefined ? '-' : (value / 1000).toFixed(3));
  const total = (pipeline: SteadyPipeline) => m(pipeline, (r) => roles[pipeline].reduce((sum, name) => sum + (r.cpuUs[name] ?? 0), 0));
  const row = (pipeline: SteadyPipeline) => [
    pipeline,
    m(pipeline, (r) => r.eventsPerSecond)!.toFixed(0),
    m(pipeline, (r) => r.ackP50Ms)!.toFixed(1),
    m(pipeline, (r) => r.ackP99Ms)!.toFixed(1),
    m(pipeline, (r) => r.deliveredP50Ms)!.toFixed(0),
    m(pipeline, (r) => r.deliveredP99Ms)!.toFixed(0),
    ms(total(pipeline)),
    ...roles[pipeline].map((name) => `${ms(m(pipeline, (r) => r.cpuUs[name]))} ${name}`),
    ms(m(pipeline, (r) => r.cpuUs.broker)),
    String(results.filter((r) => r.pipeline === pipeline).reduce((sum, r) => sum + r.failed, 0)),
  ];
  const ratio = (pick: (pipeline: SteadyPipeline) => number | undefined) => {
    const [a, b] = [pick('switchyard'), pick('bare')];
    return a === undefined || b === undefined ? '-' : `${(a / b).toFixed(2)}×`;
  };
  return [
    `steady load: ${options.posts} single-event POSTs (/v1/track, ~700 bytes) from ${options.connections} clients at once through three processes to a 0 ms receiver (1 destination); median of ${options.rounds} round(s)`,
    '  switchyard: gateway → router → deliverer; bare: the same shape with nothing but the I/O (bench/e2e.ts runIngest, render, post: kafkajs defaults, acks=all, undici)',
    ...formatTable(
      ['pipeline', 'events/s', 'ack p50 ms', 'ack p99 ms', 'delivered p50 ms', 'delivered p99 ms', 'CPU ms/event', 'intake', 'route', 'deliver', 'broker CPU ms/event', 'failed'],
      [row('switchyard'), row('bare')],
    ),
    `each round (pipeline: events/s; broker ms/event): ${results.map((r) => `${r.pipeline}: ${r.eventsPerSecond.toFixed(0)}; ${ms(r.cpuUs.broker)}`).join(' | ')}`,
    `switchyard / bare: ${ratio((p) => m(p, (r) => r.eventsPerSecond))} events/s, ${ratio(total)} CPU per event, ${ratio((p) => m(p, (r) => r.cpuUs.broker))} broker CPU per event`,
    'targets (switchyard): broker ≤ 0.15 ms and Switchyard ≤ 0.3 ms CPU per delivered event, ack p99 ≤ 30 ms',
    '',
  ];
}

// ---------------------------------------------------------------------------

async function batchRows(broker: Broker, admin: BenchAdmin, options: { seconds: number; connections: number; rounds: number; partitions: number }): Promise<void> {
  const { seconds, connections, rounds, partitions } = options;
  const run = randomBytes(4).toString('hex');
  const gatewayConfig = benchConfig(broker.brokers, `bench-gw-${run}.`, partitions);
  const baselineTopic = `bench-gw-${run}.baseline.calls`;
  // Every topic exists before either side is timed.
  const names = topicNames(gatewayConfig.kafka.topicPrefix);
  await admin.ensureTopics([{ topic: names.calls }, { topic: names.callsInvalid }, { topic: baselineTopic }], {
    partitions,
    replicationFactor: 1,
  });

  const rows: ({ side: string; round: number } & SideResult)[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Rotate which side goes first, so none always gets the warmer broker.
    const order = SIDES.map((_, i) => SIDES[(i + round - 1) % SIDES.length]!);
    for (const side of order) {
      const server =
        side === 'baseline' ? await startBaseline(broker.brokers, baselineTopic) : await startGateway(gatewayConfig, side === 'gateway');
      try {
        // NOTE: the server runs in this process and the load in a child: this process's CPU
        // over the child's life is the server's (and its producer's), per call served.
        const cpuBefore = process.cpuUsage();
        const result = await loadFromChild({ port: server.port, connections, seconds, warmupSeconds: WARMUP_SECONDS });
        const cpu = process.cpuUsage(cpuBefore);
        const cpuUsPerCall = (cpu.user + cpu.system) / Math.max(1, (result.requests + result.failed + result.warmupRequests) * CALLS_PER_REQUEST);
        rows.push({ side, round, ...result, cpuUsPerCall });
        log(`round ${round} ${side}: ${(result.requests / result.seconds).toFixed(0)} requests/s (${result.failed} failed)`);
      } finally {
        await server.stop();
      }
    }
  }

  const best = (side: string) =>
    rows.filter((r) => r.side === side).reduce((a, b) => (b.requests / b.seconds > a.requests / a.seconds ? b : a));
  const baseline = best('baseline');
  const gateway = best('gateway');
  const unmerged = best('unmerged');
  const rate = (r: LoadResult) => r.requests / r.seconds;
  const row = (side: string, r: SideResult) => [side, rate(r).toFixed(0), (rate(r) * CALLS_PER_REQUEST).toFixed(0), r.p50Ms.toFixed(1), r.p99Ms.toFixed(1), r.cpuUsPerCall.toFixed(1), String(r.failed)];
  const failed = rows.reduce((sum, r) => sum + r.failed, 0);
  const stored = await recordsIn(admin, names.calls);
  const accepted = rows.filter((r) => r.side !== 'baseline').reduce((sum, r) => sum + r.requests, 0) * CALLS_PER_REQUEST;
  process.stdout.write(
    [
      '',
      `gateway bench: POST /v1/batch, ${CALLS_PER_REQUEST} calls (~1 KB each) per request, ${connections} connections, ` +
        `${seconds} s per side after ${WARMUP_SECONDS} s warm-up, ${partitions} partitions; best of ${rounds} round(s)`,
      ...formatTable(['side', 'requests/s', 'calls/s', 'p50 ms', 'p99 ms', 'µs CPU/call', 'failed'], [row('baseline', baseline), row('gateway', gateway), row('unmerged', unmerged)]),
      'µs CPU/call: this process\'s CPU (the server and its producer; the load client is another process) per call served, warm-up included',
      `ratio gateway/baseline: ${(rate(gateway) / rate(baseline)).toFixed(2)}× (target ≥ 0.80×); ` +
        `without merging concurrent writes: ${(rate(unmerged) / rate(baseline)).toFixed(2)}×`,
      // Warm-up requests are stored too, so the topic holds at least the timed ones.
      `check: ${failed} failed request(s); the calls topic holds ${stored} records, ≥ ${accepted} from the timed gateway requests (both kinds)`,
      '',
    ].join('\n'),
  );
}

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, { seconds: 10, connections: 32, rounds: 2, partitions: 6, parts: 'batch,steady', 'steady-posts': 20_000, 'cpu-prof-dir': '' });
  if (options['cpu-prof-dir'] !== '') profileProcessesInto(options['cpu-prof-dir']);
  const { seconds, connections, rounds, partitions } = options;
  const parts = options.parts.split(',');
  if (!parts.every((part) => part === 'batch' || part === 'steady')) throw new Error('--parts takes batch, steady or both, comma-separated');

  const broker = await startOrReuseBroker();
  const admin = await createBenchAdmin(broker.brokers);
  try {
    if (parts.includes('batch')) await batchRows(broker, admin, { seconds, connections, rounds, partitions });
    if (parts.includes('steady')) {
      process.stdout.write(['', ...(await steadyRow(broker, admin, { posts: options['steady-posts'], connections, partitions, rounds }))].join('\n'));
    }
  } finally {
    await admin.disconnect();
    await broker.stop();
  }
}

if (isEntryPoint(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args[0] === '--load-client') {
    runLoadClient(JSON.parse(args[1] ?? '{}') as LoadSpec).then(
      (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
      (error: unknown) => {
        process.stderr.write(`bench load client: ${(error as Error).stack ?? String(error)}\n`);
        process.exitCode = 2;
      },
    );
  } else {
    runMain(main, args);
  }
}
