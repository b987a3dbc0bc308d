// `npm run bench -- e2e [--calls 30000] [--dests 3] [--rounds 3] [--warmup on] [--partitions 6]
//   [--pipelines single-hop,two-hop,two-hop-kafkajs,switchyard,switchyard-at-least-once] [--calls-written before] [--batch N] [--cpu-prof-dir DIR]`
// (or standalone: `tsx bench/e2e.ts ...`)
//
// The whole pipeline, calls in Kafka → webhooks received, against the hand-written
// floors of its design, in the same run, on the same broker, to the same receiver:
//
//   single-hop  one process: consumes `calls`, renders each call once, POSTs it to the
//               N URLs with undici, commits after the answers;
//   two-hop     the shape of our design, bare: a process renders each call once and
//               writes it to N topics (acks=all, one send per batch, commit after the
//               acks); a second process POSTs each record of those topics to its URL and
//               commits after the answers. No validation, retries, signing, dead letters
//               or metrics;
//   switchyard  `switchyard router` and `switchyard deliverer` (dist/cli/main.js, as the
//               image runs them: `npm run build` after changing src/), each its own
//               process, on a config of N webhook destinations (one URL each, a shared
//               secret: signed requests) fed by one source, every other setting the
//               shipped default (docs/configuration.md);
//   switchyard-at-least-once  the same with `kafka.transactions: false` and
//               `router.dedupeWindow: 0`: the router writes, then commits, and routes every
//               copy. Against `switchyard`: what exactly once between Switchyard's own
//               topics costs (docs/kafka.md#transactions).
//
// The bare hops run on @platformatic/kafka, the project's client (the library's
// defaults: fetch sizes, waits, a plain producer), each process's messages taken as
// they come in batches of what is queued, up to 3 batches at once, commits in order
// after the work. `single-hop-kafkajs` and `two-hop-kafkajs` are the same hops on
// kafkajs (its defaults, `partitionsConsumedConcurrently: 3`, eachBatch): the peers'
// reference, kept from the earlier bench; they are skipped with a message when kafkajs
// is not installed (it is no dependency of the project). Every bare hop posts with
// undici, one keep-alive Pool of 64 connections per destination (Switchyard's default
// concurrencyPerDestination). Every process runs on the same Node with the image's V8
// flag (--max-semi-space-size=64, the Dockerfile's NODE_OPTIONS).
//
// `--calls-written before` (the default): each round writes the calls to the input
// topic first, then starts the pipeline's processes on them, as a deployment meets a
// backlog: the figures are counted from the processes' start (their whole CPU,
// start-up and joins included) and, beside them, from the first delivery (the
// receiver's first arrival) to the last. `--calls-written during`: the bench of
// before this change: the processes start, their groups become stable (not timed),
// then the calls are written and the timing runs from the first call written.
//
// CPU per delivered event is read per process from /proc/<pid>/stat, the broker's too
// (its JVM: started here, or found listening on the port of KAFKA_BROKERS; a broker
// shared with other work charges that work as well). The pipelines' order rotates
// between rounds; the tables give every round, then the medians.
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
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MessageToProduce } from '@platformatic/kafka';
import {
  assertBuildIsFresh,
  batchOption,
  benchAdmin,
  benchOptions,
  benchProducer,
  createBenchTopics,
  deleteBenchTopics,
  NODE_FLAGS,
  formatTable,
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
  waitForStableGroups,
} from './support.js';
import type { ReceiverProcess, Running } from './support.js';
import { CONNECTIONS_PER_DESTINATION, kafkajsInstalled } from './bare/hops.js';
import type { BareSpec } from './bare/hops.js';
import { delivererGroupId, routerGroupId } from '../src/runtime/group-ids.js';
import { topicNames } from '../src/runtime/topics.js';

const PIPELINES = ['single-hop', 'two-hop', 'single-hop-kafkajs', 'two-hop-kafkajs', 'switchyard', 'switchyard-at-least-once'] as const;
type Pipeline = (typeof PIPELINES)[number];
const DEFAULT_PIPELINES: readonly Pipeline[] = ['single-hop', 'two-hop', 'two-hop-kafkajs', 'switchyard'];
/** The bare hops' processes: plain Node (its type stripping), no tsx and nothing of src/ to load. */
const BARE_HOPS = fileURLToPath(new URL('./bare/hops.ts', import.meta.url));

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

// ---------------------------------------------------------------------------
// Processes of a pipeline.

/** A baseline's process (bench/bare/hops.ts), named as in the tables. */
export function startBare(name: string, spec: BareSpec): Running {
  return startNodeProcess(name, [BARE_HOPS, JSON.stringify(spec)]);
}

/**
 * The receiver: answers every POST with 200 at once and counts its events (one, or
 * each messageId of a batch) under the first segment of its path (`/<tag>/...`), with
 * the wall-clock times (ms) of the first and the last; `GET /__stats/<tag>` gives them.
 */
const RECEIVER_SOURCE = `
const http = require('node:http');
const tags = new Map();
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url.startsWith('/__stats/')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(tags.get(req.url.slice('/__stats/'.length)) || { count: 0, first: 0, last: 0 }));
    return;
  }
  let chunks;
  req.on('data', (chunk) => {
    if (chunks !== undefined) chunks.push(chunk);
    else if (chunk[0] === 0x5b) chunks = [chunk];
  });
  req.on('end', () => {
    const tag = req.url.split('/')[1];
    const events = chunks === undefined ? 1 : Buffer.concat(chunks).toString('utf8').split('"messageId":').length - 1;
    const now = Date.now();
    const t = tags.get(tag) || { count: 0, first: now, last: now };
    t.count += events;
    t.last = now;
    tags.set(tag, t);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
`;

interface Arrivals {
  count: number;
  /** Date.now() of the first and the last arrival. */
  first: number;
  last: number;
}

async function arrivals(receiver: ReceiverProcess, tag: string): Promise<Arrivals> {
  const res = await fetch(receiver.url(`/__stats/${tag}`));
  return (await res.json()) as Arrivals;
}

/** A round's figures over one window. */
interface Window {
  seconds: number;
  eventsPerSecond: number;
  /** µs of CPU per delivered event, per process name, and `broker`. */
  cpuUs: Record<string, number>;
}

interface Round {
  pipeline: Pipeline;
  round: number;
  /** From the first call written (--calls-written during), or from the processes' start (before). */
  main: Window;
  /** From the first delivery to the last (--calls-written before only). */
  fromFirst?: Window;
  received: number;
}

type Admin = ReturnType<typeof benchAdmin>;

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
  messages: MessageToProduce<string, string, string, string>[][];
  /** Switchyard's destinations' batch.maxEvents; 0: no batches. */
  batch: number;
  /** Whether the calls are written before the processes start (else once their groups are stable). */
  writtenBefore: boolean;
  /** Every topic made, for the clean-up. */
  topics: string[];
}

async function createPipelineTopics(setup: Setup, pipeline: Pipeline, tag: string): Promise<{ prefix: string; input: string; hops: string[] }> {
  const prefix = `bench-e2e-${setup.run}-${tag}.`;
  const input = topicNames(prefix).calls;
  const hops = pipeline.startsWith('two-hop') ? Array.from({ length: setup.dests }, (_, i) => `${prefix}hop.d${i + 1}`) : [];
  await createBenchTopics(setup.admin, [input, ...hops], setup.partitions);
  setup.topics.push(input, ...hops);
  return { prefix, input, hops };
}

async function startPipeline(setup: Setup, pipeline: Pipeline, tag: string, topics: { prefix: string; input: string; hops: string[] }): Promise<{ running: Running[]; groups: string[] }> {
  const { brokers, receiver, dests } = setup;
  const { prefix, input, hops } = topics;
  const destinations = Array.from({ length: dests }, (_, i) => `d${i + 1}`);
  const urls = destinations.map((id) => receiver.url(`/${tag}/${id}`));
  const client = pipeline.endsWith('-kafkajs') ? ('kafkajs' as const) : ('platformatic' as const);
  if (pipeline.startsWith('single-hop')) {
    const groupId = `${prefix}single`;
    return { running: [startBare('single', { role: 'single-hop', client, brokers: brokers.split(','), groupId, input: [input], outputs: [], urls })], groups: [groupId] };
  }
  if (pipeline.startsWith('two-hop')) {
    const render = { role: 'render' as const, client, brokers: brokers.split(','), groupId: `${prefix}render`, input: [input], outputs: hops, urls: [] };
    const post = { role: 'post' as const, client, brokers: brokers.split(','), groupId: `${prefix}post`, input: hops, outputs: [], urls };
    return { running: [startBare('route', render), startBare('deliver', post)], groups: [render.groupId, post.groupId] };
  }
  // What a user writes: brokers, one topic prefix per round (the rounds' isolation) and
  // the partitions of the bench's shape; the sources and destinations. Nothing else:
  // the shipped defaults for the rest (log level, retry tiers, concurrency, timeouts).
  const atLeastOnce = pipeline === 'switchyard-at-least-once';
  const config = {
    kafka: { brokers: brokers.split(','), topicPrefix: prefix, partitions: setup.partitions, ...(atLeastOnce ? { transactions: false } : {}) },
    ...(atLeastOnce ? { router: { dedupeWindow: '0' } } : {}),
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
  // Their logs (info, the default level) are kept for an error message, not shown.
  const roles = [await startSwitchyardRole('route', 'router', config, setup.dir, true), await startSwitchyardRole('deliver', 'deliverer', config, setup.dir, true)];
  const naming = { kafka: { clientId: 'switchyard', topicPrefix: prefix, groupPrefix: undefined } };
  return { running: roles, groups: [routerGroupId(naming), delivererGroupId(naming)] };
}

async function writeCalls(setup: Setup, input: string, tag: string): Promise<void> {
  const producer = benchProducer(setup.brokers, `bench-e2e-${tag}-writer`);
  try {
    await Promise.all(setup.messages.map((messages) => producer.send({ acks: -1, messages: messages.map((message) => ({ ...message, topic: input })) })));
  } finally {
    await producer.close();
  }
}

async function runRound(setup: Setup, pipeline: Pipeline, round: number): Promise<Round> {
  const tag = `${pipeline}-${round}`;
  const topics = await createPipelineTopics(setup, pipeline, tag);
  const expected = setup.calls * setup.dests;
  if (setup.writtenBefore) await writeCalls(setup, topics.input, tag);
  const startedAt = Date.now();
  const { running, groups } = await startPipeline(setup, pipeline, tag, topics);
  try {
    const pids = running.map(({ name, child }) => ({ name, pid: child.pid }));
    const cpuAt = () => Object.fromEntries([...pids.map(({ name, pid }) => [name, processCpuSeconds(pid)] as const), ['broker', processCpuSeconds(setup.brokerPid)] as const]);
    // The processes' CPU from their start: 0 at spawn; the broker's from now.
    let before: Record<string, number | undefined> = { ...Object.fromEntries(pids.map(({ name }) => [name, 0])), broker: processCpuSeconds(setup.brokerPid) };
    let timedFrom = startedAt;
    if (!setup.writtenBefore) {
      await waitForStableGroups(setup.admin, groups, running);
      before = cpuAt();
      timedFrom = Date.now();
      await writeCalls(setup, topics.input, tag);
    }
    const deadline = Date.now() + 10 * 60_000;
    let atFirst: Record<string, number | undefined> | undefined;
    let seen: Arrivals;
    while ((seen = await arrivals(setup.receiver, tag)).count < expected) {
      if (seen.count > 0 && atFirst === undefined) atFirst = cpuAt();
      const dead = running.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
      if (dead) throw new Error(`${pipeline}: ${dead.name} exited after ${seen.count} of ${expected} events: ${dead.output().slice(-2000)}`);
      if (Date.now() > deadline) throw new Error(`${pipeline}: ${seen.count} of ${expected} events received in 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const after = cpuAt();
    const window = (from: Record<string, number | undefined>, seconds: number): Window => {
      const cpuUs: Record<string, number> = {};
      for (const [name, end] of Object.entries(after)) {
        const start = from[name];
        if (end !== undefined && start !== undefined) cpuUs[name] = ((end - start) * 1e6) / expected;
      }
      return { seconds, eventsPerSecond: expected / seconds, cpuUs };
    };
    const result: Round = { pipeline, round, main: window(before, (seen.last - timedFrom) / 1000), received: seen.count };
    // NOTE: the CPU "at the first delivery" is read at the first poll (every 20 ms) that saw one.
    if (setup.writtenBefore) result.fromFirst = window(atFirst ?? after, Math.max(0.001, (seen.last - seen.first) / 1000));
    return result;
  } finally {
    await stopProcesses(running);
  }
}

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, { calls: 30_000, dests: 3, rounds: 3, warmup: 'on', partitions: 6, pipelines: DEFAULT_PIPELINES.join(','), 'calls-written': 'before', batch: 'off', 'cpu-prof-dir': '' });
  const batch = batchOption(options.batch);
  if (options['cpu-prof-dir'] !== '') profileProcessesInto(options['cpu-prof-dir']);
  if (options['calls-written'] !== 'before' && options['calls-written'] !== 'during') throw new Error(`--calls-written takes before or during, not ${options['calls-written']}`);
  if (options.warmup !== 'on' && options.warmup !== 'off') throw new Error(`--warmup takes on or off, not ${options.warmup}`);
  const asked = options.pipelines.split(',');
  const unknown = asked.filter((p) => !(PIPELINES as readonly string[]).includes(p));
  if (unknown.length > 0 || asked.length === 0) throw new Error(`--pipelines takes ${PIPELINES.join(', ')}, comma-separated; not ${unknown.join(', ')}`);
  let pipelines = asked as Pipeline[];
  if (pipelines.some((p) => p.endsWith('-kafkajs')) && !(await kafkajsInstalled())) {
    log('kafkajs is not installed (no dependency of the project): the *-kafkajs rows are skipped. `npm install --no-save kafkajs@2.2.4` brings them back');
    pipelines = pipelines.filter((p) => !p.endsWith('-kafkajs'));
  }
  if (pipelines.some((p) => p.startsWith('switchyard'))) assertBuildIsFresh();

  const broker = await startOrReuseBroker();
  const receiver = await startReceiverProcess(RECEIVER_SOURCE);
  const admin = benchAdmin(broker.brokers, 'bench-e2e');
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-bench-e2e-'));
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
    messages: [],
    batch,
    writtenBefore: options['calls-written'] === 'before',
    topics: [],
  };
  try {
    for (let start = 0; start < options.calls; start += 2_000) {
      const chunk: MessageToProduce<string, string, string, string>[] = [];
      for (let n = start; n < Math.min(options.calls, start + 2_000); n++) {
        const call = e2eCall(n);
        chunk.push({ topic: '', key: call.key, value: call.value, headers: { 'source-id': 'web' } });
      }
      setup.messages.push(chunk);
    }
    if (setup.brokerPid === undefined) log('the broker\'s pid is not known here: no broker CPU in the table');
    // NOTE: a warm-up round of each pipeline first, not counted: a fresh broker on Kafka's
    // JVM settings spends seconds compiling in the first rounds (its JIT's compiler
    // threads, about 3 s of CPU over three rounds), charged to whichever pipeline first
    // takes a path (transactions: only Switchyard); a deployment's broker is warm.
    // `--warmup off` leaves it out.
    if (options.warmup === 'on') {
      for (const pipeline of pipelines) {
        const result = await runRound(setup, pipeline, 0);
        log(`warm-up ${pipeline}: ${result.main.eventsPerSecond.toFixed(0)} events/s (not counted)`);
      }
    }
    const rounds: Round[] = [];
    for (let round = 1; round <= options.rounds; round++) {
      // Rotate which pipeline goes first, so none always gets the warmer broker.
      const order = pipelines.map((_, i) => pipelines[(i + round - 1) % pipelines.length]!);
      for (const pipeline of order) {
        const result = await runRound(setup, pipeline, round);
        rounds.push(result);
        const cpu = (w: Window) => Object.entries(w.cpuUs).map(([name, us]) => `${name} ${us.toFixed(1)}`).join(', ');
        log(`round ${round} ${pipeline}: ${result.main.eventsPerSecond.toFixed(0)} events/s in ${result.main.seconds.toFixed(2)} s; CPU µs per event: ${cpu(result.main)}` +
          (result.fromFirst ? `; from the first delivery: ${result.fromFirst.eventsPerSecond.toFixed(0)} events/s, ${cpu(result.fromFirst)}` : ''));
      }
    }
    process.stdout.write(report(rounds, pipelines, options, setup).join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
    receiver.stop();
    await deleteBenchTopics(admin, setup.topics);
    await admin.close();
    await broker.stop();
  }
}

/** The first process's column of a pipeline: `single` for the single hops, else `route`. */
const firstColumn = (pipeline: Pipeline) => (pipeline.startsWith('single-hop') ? 'single' : 'route');
const nodeCpuOf = (w: Window) => Object.entries(w.cpuUs).filter(([name]) => name !== 'broker').reduce((sum, [, us]) => sum + us, 0);
const us = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? '-' : value.toFixed(1));

function report(rounds: Round[], pipelines: Pipeline[], options: { calls: number; dests: number; partitions: number; rounds: number }, setup: Setup): string[] {
  const windows: { title: string; pick: (r: Round) => Window | undefined }[] = setup.writtenBefore
    ? [
        { title: 'counted from the processes\' start (calls written before it; start-up and joins included)', pick: (r) => r.main },
        { title: 'counted from the first delivery to the last', pick: (r) => r.fromFirst },
      ]
    : [{ title: 'counted from the first call written (the processes started and joined before)', pick: (r) => r.main }];
  const out = [
    '',
    `e2e bench: ${options.calls} calls (~800-byte tracks) × ${options.dests} destinations = ${options.calls * options.dests} events per round, ` +
      `${options.partitions} partitions, 0 ms receiver in its own process; ${options.rounds} round(s); Node ${process.versions.node}, ${NODE_FLAGS.join(' ')}`,
    setup.batch > 0 ? `switchyard's destinations send batches of up to ${setup.batch} events (maxWait 100ms); the baselines one event per request` : 'one event per request everywhere; switchyard signs each (sharedSecret)',
    'bare hops: single-hop, two-hop on @platformatic/kafka (library defaults, up to 3 batches at once, commit after the work); *-kafkajs on kafkajs (defaults, partitionsConsumedConcurrently 3); ' +
      `undici Pool of ${CONNECTIONS_PER_DESTINATION} connections per destination. switchyard: router and deliverer processes, dist/, shipped defaults`,
  ];
  for (const { title, pick } of windows) {
    const of = (pipeline: Pipeline) => rounds.filter((r) => r.pipeline === pipeline).map(pick).filter((w): w is Window => w !== undefined);
    const medianOf = (values: number[]) => (values.length > 0 ? median(values) : undefined);
    const rate = (pipeline: Pipeline) => medianOf(of(pipeline).map((w) => w.eventsPerSecond));
    const nodeCpu = (pipeline: Pipeline) => medianOf(of(pipeline).map(nodeCpuOf));
    const cpuOf = (pipeline: Pipeline, name: string) => medianOf(of(pipeline).map((w) => w.cpuUs[name]).filter((v): v is number => v !== undefined));
    out.push('', `${title}; every round, then the medians:`);
    out.push(
      ...formatTable(
        ['pipeline', 'round', 'events/s', 'seconds', 'CPU µs/event', 'route|single', 'deliver', 'broker'],
        [
          ...rounds.flatMap((r) => {
            const w = pick(r);
            return w === undefined ? [] : [[r.pipeline, String(r.round), w.eventsPerSecond.toFixed(0), w.seconds.toFixed(2), us(nodeCpuOf(w)), us(w.cpuUs[firstColumn(r.pipeline)]), us(w.cpuUs['deliver']), us(w.cpuUs['broker'])]];
          }),
          ...pipelines.map((pipeline) => [
            pipeline,
            'median',
            rate(pipeline)?.toFixed(0) ?? '-',
            '',
            us(nodeCpu(pipeline)),
            us(cpuOf(pipeline, firstColumn(pipeline))),
            pipeline.startsWith('single-hop') ? '-' : us(cpuOf(pipeline, 'deliver')),
            us(cpuOf(pipeline, 'broker')),
          ]),
        ],
      ),
    );
    const ratio = (ours: Pipeline, base: Pipeline) => {
      const [a, b, ca, cb] = [rate(ours), rate(base), nodeCpu(ours), nodeCpu(base)];
      if (a === undefined || b === undefined || ca === undefined || cb === undefined) return '-';
      return `events/s ${(a / b).toFixed(2)}×, CPU per delivered event ${(ca / cb).toFixed(2)}×`;
    };
    const has = (p: Pipeline) => pipelines.includes(p);
    if (has('switchyard') && has('two-hop')) out.push(`ratio switchyard/two-hop: ${ratio('switchyard', 'two-hop')} (target ≥ 0.9× events/s)`);
    if (has('switchyard') && has('two-hop-kafkajs')) out.push(`ratio switchyard/two-hop-kafkajs (the peers' reference): ${ratio('switchyard', 'two-hop-kafkajs')}`);
    if (has('switchyard') && has('single-hop')) out.push(`ratio switchyard/single-hop: ${ratio('switchyard', 'single-hop')}`);
    if (has('switchyard') && has('switchyard-at-least-once')) {
      out.push(`ratio switchyard/switchyard-at-least-once: ${ratio('switchyard', 'switchyard-at-least-once')} (the cost of transactions and the dedupe window; target ≥ 0.9×)`);
    }
    if (has('two-hop') && has('two-hop-kafkajs')) out.push(`  the bare two-hop on @platformatic/kafka vs on kafkajs: ${ratio('two-hop', 'two-hop-kafkajs')}`);
    if (has('two-hop') && has('single-hop')) out.push(`  the design's second hop, bare (two-hop/single-hop): ${ratio('two-hop', 'single-hop')}`);
  }
  out.push('CPU µs/event: the pipeline\'s Node processes together, then each, then the broker\'s JVM, per delivered event, over the window');
  const extra = rounds.filter((r) => r.received > options.calls * options.dests);
  out.push(`check: every round received all ${options.calls * options.dests} events${extra.length > 0 ? `; more (duplicates) in ${extra.map((r) => `${r.pipeline} round ${r.round}: ${r.received}`).join(', ')}` : ''}`);
  out.push('');
  return out;
}

if (isEntryPoint(import.meta.url)) runMain(main);
