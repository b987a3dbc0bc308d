// `npm run bench -- e2e [--calls 30000] [--dests 3] [--rounds 3] [--partitions 6] [--pipelines single-hop,two-hop,switchyard] [--batch N] [--cpu-prof-dir DIR]`
// (or standalone: `tsx bench/e2e.ts ...`)
//
// The whole pipeline, calls in Kafka → webhooks received, against the two hand-written
// floors of its design, in the same run, on the same broker, to the same receiver:
//
//   single-hop  one kafkajs process: consumes `calls`, renders each call once, POSTs it
//               to the N URLs with undici, commits after the answers;
//   two-hop     the shape of our design, bare: a kafkajs process renders each call once
//               and writes it to N topics (acks=all, one sendBatch per batch, commit
//               after the acks); a second kafkajs process POSTs each record of those
//               topics to its URL and commits after the answers. No validation, retries,
//               signing, dead letters or metrics;
//   switchyard  `switchyard router` and `switchyard deliverer` (dist/cli/main.js, as
//               bin/switchyard runs them: `npm run build` after changing src/), each its
//               own process, on a config of N webhook destinations (one URL each, a
//               shared secret: signed requests) fed by one source.
//
// The baselines' client settings are the ones a user would pick: kafkajs's defaults
// (fetch sizes, waits, a plain, not idempotent producer), `partitionsConsumedConcurrently:
// 3` (the router's), acks=all, commits after the work; undici with one keep-alive Pool
// of 64 connections per destination (Switchyard's default concurrencyPerDestination).
// Every process runs on the same Node with the image's V8 flag (--max-semi-space-size=64).
//
// Each round starts every pipeline's processes on fresh topics and groups, waits until
// their consumer groups are stable (start-up and group joins are not measured), then
// writes the same calls (~800-byte tracks of 5,000 users, all routed to every
// destination) to the input topic and times until the receiver has counted every
// event. CPU per delivered event is read per process from /proc/<pid>/stat over that
// window, the broker's too (its JVM: started here, or found listening on the port of
// KAFKA_BROKERS; a broker shared with other work charges that work as well). The
// pipelines' order rotates between rounds; the table gives medians of the rounds.
// `--cpu-prof-dir DIR` has every pipeline process write a CPU profile there (node
// --cpu-prof, named after its role in the table): where the composed pipeline's CPU goes.
//
// `--batch N` gives Switchyard's destinations `settings.batch: { maxEvents: N, maxBytes: 4MB,
// maxWait: 100ms }` (docs/webhooks.md#batches): each request carries a JSON array of up to N
// events, and the receiver counts the events in it. The baselines stay as they are, one
// event per request: the comparison is Switchyard with batches against what a user would
// write without them.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import type { Admin, EachBatchPayload, Message, TopicMessages } from 'kafkajs';
import { Pool } from 'undici';
import { delivererGroupId, routerGroupId } from '../src/kafka/group-ids.js';
import { topicNames } from '../src/kafka/index.js';
import {
  COUNTING_RECEIVER_SOURCE,
  batchOption,
  benchOptions,
  NODE_FLAGS,
  formatTable,
  freePort,
  isEntryPoint,
  log,
  median,
  processCpuSeconds,
  profileProcessesInto,
  runMain,
  startNodeProcess,
  startOrReuseBroker,
  startReceiverProcess,
  startSwitchyardRole,
  stopProcesses,
  waitForGroups,
} from './support.js';
import type { ReceiverProcess, Running } from './support.js';

const HERE = fileURLToPath(import.meta.url);
const PIPELINES = ['single-hop', 'two-hop', 'switchyard'] as const;
type Pipeline = (typeof PIPELINES)[number];
/** The baselines' settings (the header says why these). */
const CONSUMED_CONCURRENTLY = 3;
const CONNECTIONS_PER_DESTINATION = 64;

// ---------------------------------------------------------------------------
// The calls, and the rendering the baselines do.

/** The n-th call: a ~800-byte track as analytics-node sends it, of one of 5,000 users. */
function e2eCall(n: number): { key: string; value: string } {
  const userId = `user-${(n * 7919) % 5000}`;
  return {
    key: userId,
    value: JSON.stringify({
      type: 'track',
      userId,
      messageId: `e2e-${n}`,
      timestamp: new Date(Date.UTC(2026, 4, 1) + n * 37).toISOString(),
      event: 'Order Completed',
      properties: {
        order_id: `order-${n}`,
        total: 99.5 + (n % 100),
        currency: 'EUR',
        products: [
          { product_id: `p-${n % 500}`, sku: 'SKU-100-A', name: 'Monopoly: 3rd Edition', price: 19.99, quantity: 1 },
          { product_id: `p-${(n + 1) % 500}`, sku: 'SKU-200-B', name: 'Uno Card Game', price: 3.5, quantity: 2 },
        ],
      },
      context: {
        ip: `203.0.113.${n % 250}`,
        library: { name: 'analytics-node', version: '3.1.0' },
        userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
        page: { path: '/checkout/complete', url: 'https://shop.example.com/checkout/complete', title: 'Thank you' },
      },
    }),
  };
}

/** The baselines' rendering: the webhook body of a track call, in the contract's key order (docs/webhooks.md). */
function renderTrack(value: Buffer | null): string {
  const call = JSON.parse(value?.toString('utf8') ?? '{}') as Record<string, unknown>;
  return JSON.stringify({
    version: 1,
    type: call.type,
    userId: call.userId,
    messageId: call.messageId,
    timestamp: call.timestamp,
    event: call.event,
    properties: call.properties,
    context: call.context,
  });
}

// ---------------------------------------------------------------------------
// The baselines' processes (this file run with `--bare <json>`).

export interface BareSpec {
  /** ingest: the gateway's bare floor (the steady row of bench/gateway.ts); the others consume. */
  role: 'single-hop' | 'render' | 'post' | 'ingest';
  brokers: string[];
  groupId: string;
  /** The topics it consumes. */
  input: string[];
  /** render: the topics it writes each call to. */
  outputs: string[];
  /** single-hop: the URLs of each call; post: the URL of each input topic, in the same order. */
  urls: string[];
  /** ingest: the port it listens on (127.0.0.1). */
  port?: number;
}

/**
 * The bare floor of an HTTP intake: POST /v1/track bodies, each JSON.parsed, stamped with
 * its receipt time when it has none, and written as a track call to `outputs[0]` (one
 * send per request, acks=all, keyed by userId); 200 once the broker has it. Any GET
 * answers 200 (the bench's ready probe). No write key, validation, limits or metrics.
 */
async function runIngest(spec: BareSpec): Promise<void> {
  const kafka = new Kafka({ clientId: spec.groupId, brokers: spec.brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const topic = spec.outputs[0]!;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const answer = (status: number) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(status === 200 ? '{"success":true}' : '{"success":false}');
      };
      if (req.method !== 'POST') return answer(200);
      const call = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      const value = JSON.stringify({ ...call, type: 'track', timestamp: call.timestamp ?? new Date().toISOString() });
      producer.send({ topic, acks: -1, messages: [{ key: String(call.userId), value }] }).then(() => answer(200), () => answer(503));
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((done) => server.listen(spec.port, '127.0.0.1', done));
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close();
    void producer.disconnect().then(() => process.exit(0));
  });
}

async function runBare(spec: BareSpec): Promise<void> {
  if (spec.role === 'ingest') return runIngest(spec);
  const kafka = new Kafka({ clientId: spec.groupId, brokers: spec.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: spec.groupId, allowAutoTopicCreation: false });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const pools = new Map<string, Pool>();
  const post = async (url: string, body: string) => {
    const { origin, pathname } = new URL(url);
    let pool = pools.get(url);
    if (pool === undefined) pools.set(url, (pool = new Pool(origin, { connections: CONNECTIONS_PER_DESTINATION })));
    const res = await pool.request({ path: pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body });
    await res.body.dump();
    if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`${url} answered ${res.statusCode}`);
  };
  const commitAfter = async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat }: EachBatchPayload) => {
    resolveOffset(batch.lastOffset());
    await commitOffsetsIfNecessary({
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await heartbeat();
  };
  const eachBatch = async (payload: EachBatchPayload) => {
    const { messages, topic } = payload.batch;
    if (spec.role === 'single-hop') {
      await Promise.all(messages.flatMap((message) => {
        const body = renderTrack(message.value);
        return spec.urls.map((url) => post(url, body));
      }));
    } else if (spec.role === 'render') {
      const rendered: Message[] = messages.map((message) => ({ key: message.key, value: renderTrack(message.value) }));
      const topicMessages: TopicMessages[] = spec.outputs.map((output) => ({ topic: output, messages: rendered }));
      if (rendered.length > 0) await producer.sendBatch({ topicMessages, acks: -1 });
    } else {
      const url = spec.urls[spec.input.indexOf(topic)]!;
      await Promise.all(messages.map((message) => post(url, message.value?.toString('utf8') ?? '')));
    }
    await commitAfter(payload);
  };
  if (spec.role === 'render') await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: spec.input, fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: CONSUMED_CONCURRENTLY, eachBatch });
  const stop = () => {
    void (async () => {
      await consumer.disconnect();
      await producer.disconnect();
      await Promise.all([...pools.values()].map((pool) => pool.close()));
      process.exit(0);
    })();
  };
  process.once('SIGTERM', stop);
}

// ---------------------------------------------------------------------------
// Processes of a pipeline.

/** A baseline's process (this file run with `--bare`), named as in the tables. */
export function startBare(name: string, spec: BareSpec): Running {
  return startNodeProcess(name, ['--import', 'tsx', HERE, '--bare', JSON.stringify(spec)]);
}

interface Round {
  pipeline: Pipeline;
  round: number;
  seconds: number;
  eventsPerSecond: number;
  /** µs of CPU per delivered event, per process name, and `broker`. */
  cpuUs: Record<string, number>;
  received: number;
}

interface Setup {
  brokers: string;
  brokerPid: number | undefined;
  admin: Admin;
  receiver: ReceiverProcess;
  calls: number;
  dests: number;
  partitions: number;
  run: string;
  dir: string;
  messages: Message[][];
  /** Switchyard's destinations' batch.maxEvents; 0: no batches. */
  batch: number;
}

async function startPipeline(setup: Setup, pipeline: Pipeline, tag: string): Promise<{ running: Running[]; groups: string[]; input: string }> {
  const { brokers, admin, receiver, dests, partitions } = setup;
  const prefix = `bench-e2e-${setup.run}-${tag}.`;
  const destinations = Array.from({ length: dests }, (_, i) => `d${i + 1}`);
  const urls = destinations.map((id) => receiver.url(`/${tag}/${id}`));
  const input = topicNames(prefix).calls;
  const create = async (topics: string[]) => {
    await admin.createTopics({ waitForLeaders: true, topics: topics.map((topic) => ({ topic, numPartitions: partitions, replicationFactor: 1 })) });
  };
  if (pipeline === 'single-hop') {
    await create([input]);
    const groupId = `${prefix}single`;
    return { running: [startBare('single', { role: 'single-hop', brokers: brokers.split(','), groupId, input: [input], outputs: [], urls })], groups: [groupId], input };
  }
  if (pipeline === 'two-hop') {
    const hops = destinations.map((id) => `${prefix}hop.${id}`);
    await create([input, ...hops]);
    const render = { role: 'render' as const, brokers: brokers.split(','), groupId: `${prefix}render`, input: [input], outputs: hops, urls: [] };
    const post = { role: 'post' as const, brokers: brokers.split(','), groupId: `${prefix}post`, input: hops, outputs: [], urls };
    return { running: [startBare('route', render), startBare('deliver', post)], groups: [render.groupId, post.groupId], input };
  }
  const config = {
    kafka: { brokers: brokers.split(','), clientId: `bench-e2e-${tag}`, topicPrefix: prefix, partitions },
    gateway: { port: await freePort(), host: '127.0.0.1' },
    log: { level: 'warn' },
    sources: [{ id: 'web', writeKey: 'bench-e2e-write-key', destinations }],
    destinations: destinations.map((id, i) => ({
      id,
      type: 'webhooks',
      settings: {
        webhooks: [{ url: urls[i] }],
        sharedSecret: 'bench-e2e-secret',
        ...(setup.batch > 0 ? { batch: { maxEvents: setup.batch, maxBytes: '4MB', maxWait: '100ms' } } : {}),
      },
    })),
  };
  await create([input]);
  const roles = [await startSwitchyardRole('route', 'router', config, setup.dir), await startSwitchyardRole('deliver', 'deliverer', config, setup.dir)];
  const naming = { kafka: { clientId: config.kafka.clientId, topicPrefix: prefix, groupPrefix: undefined } };
  return { running: roles, groups: [routerGroupId(naming), delivererGroupId(naming)], input };
}

async function receivedCount(receiver: ReceiverProcess, tag: string): Promise<number> {
  const res = await fetch(receiver.url(`/__count/${tag}`));
  return Number(await res.text());
}

async function runRound(setup: Setup, pipeline: Pipeline, round: number): Promise<Round> {
  const tag = `${pipeline}-${round}`;
  const { running, groups, input } = await startPipeline(setup, pipeline, tag);
  try {
    await waitForGroups(setup.admin, groups, running);
    const expected = setup.calls * setup.dests;
    const pids = running.map(({ name, child }) => ({ name, pid: child.pid }));
    const cpuAt = () => Object.fromEntries([...pids.map(({ name, pid }) => [name, processCpuSeconds(pid)] as const), ['broker', processCpuSeconds(setup.brokerPid)] as const]);
    const before = cpuAt();
    const startedAt = performance.now();
    // The calls, written as fast as the broker takes them: the pipeline starts on the first.
    const kafka = new Kafka({ clientId: `bench-e2e-${tag}-writer`, brokers: setup.brokers.split(','), logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    await Promise.all(setup.messages.map((messages) => producer.send({ topic: input, acks: -1, messages })));
    await producer.disconnect();
    const deadline = Date.now() + 10 * 60_000;
    let received = 0;
    while ((received = await receivedCount(setup.receiver, tag)) < expected) {
      const dead = running.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
      if (dead) throw new Error(`${pipeline}: ${dead.name} exited after ${received} of ${expected} events`);
      if (Date.now() > deadline) throw new Error(`${pipeline}: ${received} of ${expected} events received in 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const seconds = (performance.now() - startedAt) / 1000;
    const after = cpuAt();
    const cpuUs: Record<string, number> = {};
    for (const [name, end] of Object.entries(after)) {
      const start = before[name];
      if (end !== undefined && start !== undefined) cpuUs[name] = ((end - start) * 1e6) / expected;
    }
    return { pipeline, round, seconds, eventsPerSecond: expected / seconds, cpuUs, received };
  } finally {
    await stopProcesses(running);
  }
}

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, { calls: 30_000, dests: 3, rounds: 3, partitions: 6, pipelines: PIPELINES.join(','), batch: 'off', 'cpu-prof-dir': '' });
  const batch = batchOption(options.batch);
  if (options['cpu-prof-dir'] !== '') profileProcessesInto(options['cpu-prof-dir']);
  const pipelines = options.pipelines.split(',').filter((p): p is Pipeline => (PIPELINES as readonly string[]).includes(p));
  if (pipelines.length === 0) throw new Error(`--pipelines takes ${PIPELINES.join(', ')}, comma-separated`);

  const broker = await startOrReuseBroker();
  const receiver = await startReceiverProcess(COUNTING_RECEIVER_SOURCE);
  const kafka = new Kafka({ clientId: 'bench-e2e', brokers: broker.brokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-e2e-'));
  try {
    const messages: Message[][] = [];
    for (let start = 0; start < options.calls; start += 2_000) {
      const chunk: Message[] = [];
      for (let n = start; n < Math.min(options.calls, start + 2_000); n++) {
        const call = e2eCall(n);
        chunk.push({ key: call.key, value: call.value, headers: { 'source-id': 'web' } });
      }
      messages.push(chunk);
    }
    const setup: Setup = {
      brokers: broker.brokers,
      brokerPid: broker.pid,
      admin,
      receiver,
      calls: options.calls,
      dests: options.dests,
      partitions: options.partitions,
      run: randomBytes(4).toString('hex'),
      dir,
      messages,
      batch,
    };
    if (setup.brokerPid === undefined) log('the broker\'s pid is not known here: no broker CPU in the table');
    const rounds: Round[] = [];
    for (let round = 1; round <= options.rounds; round++) {
      // Rotate which pipeline goes first, so none always gets the warmer broker.
      const order = pipelines.map((_, i) => pipelines[(i + round - 1) % pipelines.length]!);
      for (const pipeline of order) {
        const result = await runRound(setup, pipeline, round);
        rounds.push(result);
        const cpu = Object.entries(result.cpuUs).map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ');
        log(`round ${round} ${pipeline}: ${result.eventsPerSecond.toFixed(0)} events/s in ${result.seconds.toFixed(2)} s; CPU µs per event: ${cpu}`);
      }
    }

    const of = (pipeline: Pipeline) => rounds.filter((r) => r.pipeline === pipeline);
    const medianCpu = (pipeline: Pipeline, name: string) => {
      const values = of(pipeline).map((r) => r.cpuUs[name]).filter((v): v is number => v !== undefined);
      return values.length > 0 ? median(values) : undefined;
    };
    const nodeCpu = (pipeline: Pipeline) => median(of(pipeline).map((r) => Object.entries(r.cpuUs).filter(([name]) => name !== 'broker').reduce((sum, [, us]) => sum + us, 0)));
    const rate = (pipeline: Pipeline) => median(of(pipeline).map((r) => r.eventsPerSecond));
    const us = (value: number | undefined) => (value === undefined ? '-' : value.toFixed(1));
    const rows = pipelines.map((pipeline) => [
      pipeline,
      rate(pipeline).toFixed(0),
      of(pipeline).map((r) => r.eventsPerSecond.toFixed(0)).join('/'),
      us(nodeCpu(pipeline)),
      us(medianCpu(pipeline, pipeline === 'single-hop' ? 'single' : 'route')),
      pipeline === 'single-hop' ? '-' : us(medianCpu(pipeline, 'deliver')),
      us(medianCpu(pipeline, 'broker')),
    ]);
    const out = [
      '',
      `e2e bench: ${options.calls} calls (~800-byte tracks) × ${options.dests} destinations = ${options.calls * options.dests} events per round, ` +
        `${options.partitions} partitions, 0 ms receiver; median of ${options.rounds} round(s); Node ${process.versions.node}, ${NODE_FLAGS.join(' ')}`,
      batch > 0 ? `switchyard's destinations send batches of up to ${batch} events (maxWait 100ms); the baselines one event per request` : 'one event per request everywhere',
      `baselines: kafkajs defaults, partitionsConsumedConcurrently ${CONSUMED_CONCURRENTLY}, acks=all, commit after the work; undici Pool of ${CONNECTIONS_PER_DESTINATION} connections per destination`,
      ...formatTable(['pipeline', 'events/s', 'each round', 'CPU µs/event', 'route|single', 'deliver', 'broker'], rows),
      'CPU µs/event: the pipeline\'s Node processes together, then each, then the broker\'s JVM, per delivered event, over the timed window',
    ];
    const ratio = (ours: Pipeline, base: Pipeline) => {
      const cpu = nodeCpu(ours) / nodeCpu(base);
      return `events/s ${(rate(ours) / rate(base)).toFixed(2)}×, CPU per delivered event ${cpu.toFixed(2)}×`;
    };
    if (pipelines.includes('switchyard') && pipelines.includes('two-hop')) {
      out.push(`ratio switchyard/two-hop: ${ratio('switchyard', 'two-hop')} (target ≥ 0.85× events/s, ≤ 1.3× CPU)`);
    }
    if (pipelines.includes('switchyard') && pipelines.includes('single-hop')) out.push(`ratio switchyard/single-hop: ${ratio('switchyard', 'single-hop')}`);
    if (pipelines.includes('two-hop') && pipelines.includes('single-hop')) out.push(`  the design's second hop, bare (two-hop/single-hop): ${ratio('two-hop', 'single-hop')}`);
    const extra = rounds.filter((r) => r.received > options.calls * options.dests);
    out.push(`check: every round received all ${options.calls * options.dests} events${extra.length > 0 ? `; more (duplicates) in ${extra.map((r) => `${r.pipeline} round ${r.round}: ${r.received}`).join(', ')}` : ''}`);
    out.push('');
    process.stdout.write(out.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    receiver.stop();
    await admin.disconnect();
    await broker.stop();
  }
}

if (isEntryPoint(import.meta.url)) {
  const args = process.argv.slice(2);
  if (args[0] === '--bare') {
    runBare(JSON.parse(args[1] ?? '{}') as BareSpec).catch((error: unknown) => {
      process.stderr.write(`bench e2e ${args[1] ?? ''}: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(2);
    });
  } else {
    runMain(main, args);
  }
}
