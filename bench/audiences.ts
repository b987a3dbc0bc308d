// `npm run bench -- audiences [--profiles 1000000] [--calls 100000] [--partitions 6] [--parts memory,restore,route]`
// (also standalone: `tsx bench/audiences.ts …`)
//
// 1. memory: heap per profile with 10 audiences, profiles built by the real engine
//    from synthetic calls (traits, counted events with windows), and the changelog
//    bytes per profile.
// 2. restore: those profiles written to a real changelog topic, then read back and
//    re-evaluated as a processor does when it is assigned partitions.
// 3. route: calls/s through the real router, (a) alone (no audience hook: the
//    same-run baseline), (b) with the audience processor and no audiences, (c) with
//    the processor and 10 audiences. Timed until every group has drained its input.
//
// Starts its own local broker unless KAFKA_BROKERS is set.
import { randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import vm from 'node:vm';
import { parseCallBytes } from '../src/calls/index.js';
import type { Config } from '../src/config/schema.js';
import { staticConfigStore } from '../src/config/store.js';
import { createKafka, createProducer } from '../src/kafka/index.js';
import type { KafkaClient, OutboundRecord } from '../src/kafka/index.js';
import { createMetrics } from '../src/observability/metrics.js';
import { silentLogger } from '../src/observability/logger.js';
import { createRouterService, routerGroupId } from '../src/router/router-service.js';
import type { Service } from '../src/runtime/service.js';
import { createAudienceService } from '../src/audiences/audience-service.js';
import { CALL_OFFSETS_KEY, applyRecords, createPartitionState, loadProfile, sweepProfiles } from '../src/audiences/engine.js';
import type { PartitionState } from '../src/audiences/engine.js';
import { audienceCallMessage, audienceTopicNames } from '../src/audiences/records.js';
import { restoreChangelog } from '../src/audiences/restore.js';
import { compileAudiences } from '../src/audiences/rules.js';
import { createAudienceHook } from '../src/audiences/router-hook.js';
import { SeenPairCache } from '../src/audiences/seen-cache.js';
import { createSeenFollower } from '../src/audiences/seen-follower.js';
import { Stopwatch, benchOptions, createBenchAdmin, formatTable, isEntryPoint, loadBenchConfig, log, recordsIn, runMain, startOrReuseBroker, waitForDrained } from './support.js';
import type { BenchAdmin } from './support.js';
import { audiencesGroupId } from '../src/runtime/group-ids.js';
import { createTopology } from '../src/runtime/topology.js';
import { topicNames } from '../src/runtime/topics.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const TEN_AUDIENCES = [
  { name: 'Pro Users', rule: { trait: 'plan', in: ['pro', 'enterprise'] } },
  { name: 'Free Users', rule: { trait: 'plan', equals: 'free' } },
  { name: 'Has Email', rule: { trait: 'email', exists: true } },
  { name: 'Big Companies', rule: { trait: 'company_size', gte: 100 } },
  { name: 'Buyers', rule: { event: 'Order Completed', atLeast: 3 } },
  { name: 'Recent Buyers', rule: { event: 'Order Completed', atLeast: 2, within: '7d' } },
  { name: 'Whales', rule: { all: [{ trait: 'plan', in: ['pro', 'enterprise'] }, { event: 'Order Completed', atLeast: 5, within: '30d' }] } },
  { name: 'Churn Risk', rule: { all: [{ trait: 'plan', exists: true }, { not: { event: 'Order Completed', atLeast: 1, within: '30d' } }] } },
  { name: 'Browsers', rule: { event: 'Product Viewed', atLeast: 10, within: '1d' } },
  { name: 'New Signups', rule: { event: 'Signed Up', atLeast: 1, within: '14d' } },
];

const NOW = Date.now();
const DAY = 86_400_000;

function benchConfig(brokers: string, prefix: string, clientId: string, partitions: number, audiences: number): Config {
  return loadBenchConfig(
    {
      // NOTE: fresh consumer groups per run and side, as the client id names them.
      kafka: { brokers: brokers.split(','), clientId, topicPrefix: prefix, groupPrefix: `${clientId}.`, partitions },
      sources: [{ id: 'web', destinations: ['d1'] }],
      destinations: ['d1', 'aud'].map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }] } })),
      audiences: TEN_AUDIENCES.slice(0, audiences).map((a) => ({ ...a, sources: ['web'], destinations: ['aud'] })),
    },
    'bench-audiences.yaml',
  );
}

/** The calls of one synthetic user: an identify with 4 traits, then a mix of counted events and pages. */
function userCalls(u: number): string[] {
  const userId = `user-${u}`;
  const calls = [
    JSON.stringify({
      type: 'identify',
      userId,
      timestamp: new Date(NOW - 20 * DAY).toISOString(),
      traits: { plan: ['free', 'pro', 'enterprise'][u % 3], email: `${userId}@example.com`, company_size: (u * 37) % 500, name: `User ${u}` },
    }),
  ];
  const events = [
    ...Array.from({ length: u % 7 }, (_, i) => ['Order Completed', NOW - ((i * 5 + u) % 40) * DAY] as const),
    ...Array.from({ length: u % 13 }, (_, i) => ['Product Viewed', NOW - ((i * 3 + u) % 48) * 3_600_000] as const),
    ...(u % 4 === 0 ? [['Signed Up', NOW - (u % 30) * DAY] as const] : []),
  ];
  for (const [event, at] of events) calls.push(JSON.stringify({ type: 'track', userId, event, timestamp: new Date(at).toISOString(), properties: { value: u % 100 } }));
  return calls;
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

// ---------------------------------------------------------------------------
// 1 + 2: memory and restore

interface MemoryResult {
  profiles: number;
  bytesPerProfile: number;
  changelogBytesPerProfile: number;
  applySeconds: number;
  records: number;
}

/** Builds the profiles through the engine, partition by partition. */
function buildProfiles(count: number, partitions: number, config: Config): { states: PartitionState[]; records: number; seconds: number } {
  const set = compileAudiences(config);
  const states = Array.from({ length: partitions }, (_, p) => createPartitionState(p));
  const offsets = new Array<number>(partitions).fill(0);
  let records = 0;
  const clock = new Stopwatch();
  for (let u = 0; u < count; u++) {
    const p = u % partitions;
    const state = states[p]!;
    const batch = userCalls(u).map((text) => {
      const parsed = parseCallBytes(Buffer.from(text));
      if (!parsed.ok) throw new Error(parsed.error);
      return { offset: offsets[p]!++, value: audienceCallMessage(parsed.call, 'web', NOW).value };
    });
    records += batch.length;
    applyRecords(state, batch, set, NOW);
  }
  return { states, records, seconds: clock.read().seconds };
}

async function writeChangelog(client: KafkaClient, topic: string, states: PartitionState[]): Promise<number> {
  const producer = createProducer(client);
  await producer.connect();
  let bytes = 0;
  try {
    for (const state of states) {
      let messages: OutboundRecord[] = [];
      const flush = async () => {
        if (messages.length > 0) await producer.send([{ topic, messages }]);
        messages = [];
      };
      for (const [key, value] of state.profiles) {
        bytes += value.length + key.length;
        messages.push({ key, value, partition: state.partition });
        if (messages.length >= 2_000) await flush();
      }
      messages.push({ key: CALL_OFFSETS_KEY, value: '{}', partition: state.partition });
      await flush();
    }
  } finally {
    await producer.disconnect();
  }
  return bytes;
}

async function memoryAndRestore(client: KafkaClient, admin: BenchAdmin | undefined, options: { profiles: number; partitions: number; prefix: string; brokers: string; restore: boolean }) {
  const config = benchConfig(options.brokers, options.prefix, 'bench-mem', options.partitions, 10);
  const before = heapUsed();
  const built = buildProfiles(options.profiles, options.partitions, config);
  const after = heapUsed();
  const memory: MemoryResult = {
    profiles: options.profiles,
    bytesPerProfile: (after - before) / options.profiles,
    changelogBytesPerProfile: 0,
    applySeconds: built.seconds,
    records: built.records,
  };
  log(`built ${options.profiles} profiles from ${built.records} records in ${built.seconds.toFixed(1)} s; heap ${((after - before) / 1e6).toFixed(0)} MB`);
  if (!options.restore) return { memory };

  const topic = audienceTopicNames(options.prefix).profiles;
  await admin!.ensureTopics([{ topic, compacted: true }], { partitions: options.partitions, replicationFactor: 1 });
  const writing = new Stopwatch();
  memory.changelogBytesPerProfile = (await writeChangelog(client, topic, built.states)) / options.profiles;
  log(`wrote the changelog in ${writing.read().seconds.toFixed(1)} s`);
  built.states.length = 0;

  const baseline = heapUsed();
  const states = new Map<number, PartitionState>();
  const set = compileAudiences(config);
  const reading = new Stopwatch();
  await restoreChangelog({
    kafka: client,
    topic,
    partitions: Array.from({ length: options.partitions }, (_, p) => p),
    logger: silentLogger(),
    onRecord(partition, key, value) {
      let state = states.get(partition);
      if (!state) states.set(partition, (state = createPartitionState(partition)));
      const problem = loadProfile(state, key, value);
      if (problem) throw new Error(problem);
    },
    onPartitionDone: () => undefined,
  });
  const readSeconds = reading.read().seconds;
  const evaluating = new Stopwatch();
  let changes = 0;
  for (const state of states.values()) changes += sweepProfiles(state, state.profiles.keys(), set, NOW, true).changes.length;
  const evalSeconds = evaluating.read().seconds;
  const restoredHeap = heapUsed() - baseline;
  const restored = [...states.values()].reduce((n, s) => n + s.profiles.size, 0);
  log(`restored ${restored} profiles: read ${readSeconds.toFixed(1)} s, evaluated in ${evalSeconds.toFixed(1)} s (${changes} changes: expected 0)`);
  return { memory, restore: { restored, readSeconds, evalSeconds, bytesPerProfile: restoredHeap / restored, changes } };
}

// ---------------------------------------------------------------------------
// 3: routing throughput

type RouteSide = 'router' | 'audiences-0' | 'audiences-10';

async function produceCalls(client: KafkaClient, topic: string, n: number): Promise<void> {
  const producer = createProducer(client);
  await producer.connect();
  try {
    let batch: OutboundRecord[] = [];
    let u = 0;
    let produced = 0;
    while (produced < n) {
      for (const value of userCalls(u++ % 20_000)) {
        if (produced >= n) break;
        const userId = (JSON.parse(value) as { userId: string }).userId;
        batch.push({ key: userId, value, headers: { 'source-id': 'web' } });
        produced += 1;
        if (batch.length >= 2_000) {
          await producer.send([{ topic, messages: batch }]);
          batch = [];
        }
      }
    }
    if (batch.length > 0) await producer.send([{ topic, messages: batch }]);
  } finally {
    await producer.disconnect();
  }
}

async function routeSide(side: RouteSide, options: { brokers: string; calls: number; partitions: number; admin: BenchAdmin; run: string }) {
  const prefix = `bench-${options.run}-${side}.`;
  const config = benchConfig(options.brokers, prefix, `bench-${options.run}-${side}`, options.partitions, side === 'audiences-10' ? 10 : 0);
  const names = topicNames(prefix);
  const logger = silentLogger();
  const client = createKafka(config.kafka, logger);
  await options.admin.ensureTopics(createTopology(prefix).router(config), { partitions: options.partitions, replicationFactor: 1 });
  await produceCalls(client, names.calls, options.calls);

  const deps = { config: staticConfigStore(config), kafka: client, metrics: createMetrics({ defaultMetrics: false }), logger };
  const services: Service[] = [];
  if (side !== 'router') {
    const audiences = createAudienceService(deps);
    const cache = new SeenPairCache(1_000_000);
    const hook = createAudienceHook(prefix, () => deps.config.current(), cache);
    services.push(
      audiences,
      createSeenFollower(deps, cache),
      createRouterService({ ...deps, audiences: hook, onDeletion: (userId, sourceIds) => audiences.eraseUser(userId, sourceIds) }),
    );
  } else {
    services.push(createRouterService(deps));
  }
  // CPU from the start of the services (restores included); time from when they run.
  const cpuClock = new Stopwatch();
  for (const service of services) await service.start();
  const clock = new Stopwatch();
  try {
    await waitForDrained(options.admin, routerGroupId(config), names.calls);
    if (side !== 'router') await waitForDrained(options.admin, audiencesGroupId(config), audienceTopicNames(prefix).events);
    const { seconds } = clock.read();
    const { cpuSeconds } = cpuClock.read();
    const identifies = side === 'router' ? 0 : await recordsIn(options.admin, names.deliveries('aud'));
    return { side, seconds, cpuSeconds, identifies };
  } finally {
    for (const service of [...services].reverse()) await service.stop();
  }
}

// ---------------------------------------------------------------------------

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, { profiles: 1_000_000, calls: 100_000, partitions: 6, parts: 'memory,restore,route' });
  const { profiles, calls, partitions } = options;
  const parts = new Set(options.parts.split(','));

  const needsKafka = parts.has('restore') || parts.has('route');
  const broker = needsKafka ? await startOrReuseBroker({ heapMb: 1024 }) : { brokers: 'localhost:9092', stop: async () => undefined };
  const run = randomBytes(4).toString('hex');
  const client = createKafka(benchConfig(broker.brokers, `bench-${run}.`, `bench-${run}`, partitions, 0).kafka, silentLogger());
  const admin = needsKafka ? await createBenchAdmin(broker.brokers) : undefined;
  const out: string[] = [''];
  try {
    if (parts.has('memory') || parts.has('restore')) {
      const result = await memoryAndRestore(client, admin, { profiles, partitions, prefix: `bench-${run}.`, brokers: broker.brokers, restore: parts.has('restore') });
      const m = result.memory;
      out.push(`audiences bench: 10 audiences (trait, event-count and windowed rules), ${m.profiles} profiles of ~${(m.records / m.profiles).toFixed(1)} calls each`);
      out.push(`  memory, built by the engine:  ${Math.round(m.bytesPerProfile)} bytes of heap per profile (${((m.bytesPerProfile * m.profiles) / 1e9).toFixed(2)} GB in all)`);
      out.push(`  engine apply (no I/O):        ${Math.round(m.records / m.applySeconds)} records/s`);
      if (result.restore) {
        const r = result.restore;
        out.push(`  changelog:                    ${Math.round(m.changelogBytesPerProfile)} bytes per profile`);
        out.push(
          `  restore of ${r.restored} profiles:   read+parse ${r.readSeconds.toFixed(1)} s (${Math.round(r.restored / r.readSeconds)} profiles/s), ` +
            `re-evaluate ${r.evalSeconds.toFixed(1)} s; ${Math.round(r.bytesPerProfile)} bytes of heap per restored profile; ${r.changes} spurious changes`,
        );
      }
    }
    if (parts.has('route')) {
      const rows = [];
      for (const side of ['router', 'audiences-0', 'audiences-10'] as const) {
        const row = await routeSide(side, { brokers: broker.brokers, calls, partitions, admin: admin!, run });
        log(`${side}: ${row.seconds.toFixed(2)} s`);
        rows.push(row);
      }
      const baseline = rows[0]!.seconds;
      out.push(`route: ${calls} calls (~200 B), 1 source → 1 destination, ${partitions} partitions; until every group drained`);
      out.push(
        ...formatTable(
          ['side', 'seconds', 'calls/s', 'vs router', 'node CPU s', 'identifies'],
          rows.map((row) => {
            const label = row.side === 'router' ? 'router alone (baseline)' : row.side === 'audiences-0' ? 'router + audiences, none' : 'router + 10 audiences';
            return [label, row.seconds.toFixed(2), Math.round(calls / row.seconds).toString(), `${(baseline / row.seconds).toFixed(2)}×`, row.cpuSeconds.toFixed(2), String(row.identifies)];
          }),
        ),
      );
    }
    out.push('');
    process.stdout.write(out.join('\n'));
  } finally {
    await admin?.disconnect();
    await broker.stop();
  }
}

// Standalone: `tsx bench/audiences.ts …` (bench/run.ts imports it and calls main).
if (isEntryPoint(import.meta.url)) runMain(main);
