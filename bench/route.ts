// `npm run bench -- route [--n 100000] [--partitions 6] [--rounds 1] [--concurrency N] [--sides passthrough,router,router+no-transactions,passthrough+headers,router+seen,router+plan] [--wide 1000]`
//
// How fast the router drains `calls` compared with a consume→produce passthrough on the
// port (its consumer runtime and producer on @platformatic/kafka) on the same broker, in
// the same run, over the same input topic: the baseline copies each input record
// unchanged to as many output topics as the router writes for it (a `bench-fanout`
// header, set at produce time, tells it how many), with the same client, producer
// (createProducer, acks=all), consumer settings and commit pattern (one send per batch,
// marked done after the acks). The difference is what the router adds: parsing,
// validation, routing rules, rendering, headers, metrics.
//
// A third side, `passthrough+headers`, copies the same way but writes the four delivery
// headers the contract makes the router write (docs/kafka.md) instead of the input's two:
// it splits the gap into what the client charges for those headers and the router's own
// parsing, validation, routing and rendering.
//
// A fourth side, `router+seen`, is the router as the router role runs it for seen
// sources: with the audience hook, its seen-pair cache and the cache's follower, so
// it writes a `seen` record to audience.events for each new (user, source) pair
// (src/audiences/router-hook.ts); compared with `router`, which skips that state.
// NOTE: the input has 50,000 users, a new pair for each of the first calls of each:
// with --n 50000 or less every call is a new pair (the worst case, a cold cache).
// A router that has run for a while sees mostly known pairs: `router+seen-warm` is
// the same with the cache holding the input's pairs already (no `seen` record).
//
// Every side runs with the router's consumer settings (three partitions' batches at a
// time by default), so each waits for the broker partly in parallel with its own work:
// the wall-clock ratio lies between the ratio of this process's CPU per call (printed
// too: the steadier figure on a shared machine) and 1, as the broker's share grows.
//
// NOTE: the port's consumer runtime is the passthrough's as well as the router's (the
// client has no eachBatch: the batching is the port's), so `passthrough` is the bare
// cost of the client plus that batching. The router on kafkajs (`router-kafkajs`) and a
// bare kafkajs passthrough went with kafkajs (issue 45).
//
// A side `router+shaping` is the router with a filter and a transform on each of the
// three destinations (docs/webhooks.md#shaping), different on each, every filter true
// for the events it sees (so both sides write the same records and events/s compare
// like for like: the cost of evaluating, not the saving of writing less). Target: at
// least 0.7x the events/s of `router`.
//
// A side `router+plan` is the router with the source's calls checked against a tracking
// plan of 100 events in observe mode (BENCH_PLAN; the calls follow it, so it writes the
// same records): the cost of the check (docs/tracking-plans.md), target ≥ 0.80×.
//
// Every router side but `router+no-transactions` runs with kafka.transactions (the
// default: docs/kafka.md#transactions); `router+no-transactions` is the router writing,
// then committing, as before: what the transactions cost. NOTE: the transactions' markers
// take offsets, so the records-written check below counts them too.
//
// A side `router-wide` (not run unless --sides names it) is the router with the same
// calls, each still routed to three destinations, but spread over --wide destinations
// (1,000 by default) in sources of three each (the calls' source-id headers taken in
// turn), on topics of its own: what a router pays when its output is spread over many
// delivery topics instead of three, against `router`. Its `calls` has --partitions
// partitions as the other sides'; every destination's topics have one partition and
// one retry tier (as in the destinations bench: at 1,000 destinations × 6 topics × 6
// partitions the local broker gave the topics no leader within 30 s).
//
// Starts its own local broker unless KAFKA_BROKERS is set.
import { randomBytes } from 'node:crypto';
import { audienceTopicNames } from '../src/audiences/records.js';
import { createAudienceHook } from '../src/audiences/router-hook.js';
import { SeenPairCache } from '../src/audiences/seen-cache.js';
import { createSeenFollower } from '../src/audiences/seen-follower.js';
import type { Config } from '../src/config/schema.js';
import { staticConfigStore } from '../src/config/store.js';
import { createAdmin, createKafka, createProducer } from '../src/kafka/index.js';
import type { KafkaAdmin, KafkaClient, OutboundRecord, TopicRecords } from '../src/kafka/index.js';
import { createMetrics } from '../src/observability/metrics.js';
import { silentLogger } from '../src/observability/logger.js';
import { ROUTER_TUNING, createRouterService, routerConsumerSettings, routerGroupId } from '../src/router/router-service.js';
import type { RouterTuning } from '../src/router/router-service.js';
import { Stopwatch, benchOptions, formatTable, loadBenchConfig, log, recordsIn, startOrReuseBroker, waitForDrained } from './support.js';
import { startConsumer } from '../src/runtime/consumer.js';
import { createTopology } from '../src/runtime/topology.js';
import { topicNames } from '../src/runtime/topics.js';

const DESTINATIONS = ['d1', 'd2', 'd3'];
const FANOUT_HEADER = 'bench-fanout';

/** The `router+shaping` side's settings: a filter and a transform per destination, each filter true for the bench's routed calls. */
const SHAPING: Record<string, { filter: string; transform: string }> = {
  d1: { filter: 'type = "identify" or properties.total > 50', transform: '{"user": userId, "name": event, "total": properties.total}' },
  d2: { filter: 'type in ["track", "identify"]', transform: '{"id": messageId, "user": userId, "type": type, "currency": properties.currency, "plan": traits.plan}' },
  d3: { filter: '$exists(context.ip) and $not(event = "Debug Ping")', transform: '{"user": userId, "at": timestamp, "event": event, "ip": context.ip}' },
};

/**
 * The `router+plan` side's tracking plan: 100 events (the bench's "Order Completed" with a
 * schema of every property it sends, and 99 others), identify traits and the context; the
 * bench's calls follow it, so the side writes the records the router side writes.
 */
const PRODUCT = {
  type: 'object',
  required: ['product_id', 'price', 'quantity'],
  properties: { product_id: { type: 'string' }, sku: { type: 'string' }, name: { type: 'string' }, price: { type: 'number', minimum: 0 }, quantity: { type: 'integer', minimum: 1 }, category: { type: 'string' } },
  additionalProperties: false,
};
const BENCH_PLAN = {
  id: 'bench-plan',
  events: {
    'Order Completed': {
      type: 'object',
      required: ['order_id', 'total', 'currency', 'products'],
      properties: {
        order_id: { type: 'string' },
        total: { type: 'number', minimum: 0 },
        revenue: { type: 'number' },
        currency: { type: 'string', pattern: '^[A-Z]{3}$' },
        products: { type: 'array', items: PRODUCT },
        note: { type: 'string' },
      },
      additionalProperties: false,
    },
    ...Object.fromEntries(
      Array.from({ length: 99 }, (_, i) => [`Planned Event ${i}`, { type: 'object', required: ['id'], properties: { id: { type: 'string' }, value: { type: 'number' } } }]),
    ),
  },
  identify: { type: 'object', properties: { email: { type: 'string', format: 'email' }, plan: { enum: ['pro', 'free'] }, company: { type: 'object' }, bio: { type: 'string' } } },
  common: { type: 'object', properties: { ip: { type: 'string' }, locale: { type: 'string' } } },
  unplannedEvents: 'violate',
};

function benchConfig(brokers: string, prefix: string, clientId: string, partitions: number, shaping = false, plan = false, transactions = true): Config {
  return loadBenchConfig(
    {
      // NOTE: fresh consumer groups per run and side, as the client id names them.
      kafka: { brokers: brokers.split(','), clientId, topicPrefix: prefix, groupPrefix: `${clientId}.`, partitions, transactions },
      sources: [
        {
          id: 'web',
          writeKey: 'bench-write-key',
          destinations: DESTINATIONS,
          trackFilter: { blockEvents: ['Debug Ping'] },
          ...(plan ? { trackingPlan: { id: BENCH_PLAN.id, mode: 'observe' } } : {}),
        },
      ],
      ...(plan ? { trackingPlans: [BENCH_PLAN] } : {}),
      destinations: DESTINATIONS.map((id) => ({
        id,
        type: 'webhooks',
        settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }], sharedSecret: 'bench-secret', ...(shaping ? SHAPING[id] : {}) },
      })),
    },
    'bench-route.yaml',
  );
}

/**
 * The `router-wide` side's config: `count` destinations, in sources of DESTINATIONS.length
 * each (so every call routes as with `web`), the source settings of `web`; one partition
 * per topic it makes, one retry tier.
 */
function wideConfig(brokers: string, prefix: string, clientId: string, count: number): Config {
  const ids = Array.from({ length: count }, (_, i) => `w${i}`);
  const sources = Array.from({ length: wideSources(count) }, (_, k) => ({
    id: `s${k}`,
    writeKey: `bench-write-key-${k}`,
    // The last source takes the first destinations again when `count` does not divide by three.
    destinations: DESTINATIONS.map((_, j) => ids[(k * DESTINATIONS.length + j) % count]!),
    trackFilter: { blockEvents: ['Debug Ping'] },
  }));
  return loadBenchConfig(
    {
      kafka: { brokers: brokers.split(','), clientId, topicPrefix: prefix, groupPrefix: `${clientId}.`, partitions: 1 },
      delivery: { retryTiers: ['5s'] },
      sources,
      destinations: ids.map((id) => ({ id, type: 'webhooks', settings: { webhooks: [{ url: `https://hooks.example.com/${id}` }], sharedSecret: 'bench-secret' } })),
    },
    'bench-route-wide.yaml',
  );
}

/** How many sources `count` destinations make, DESTINATIONS.length each. */
function wideSources(count: number): number {
  return Math.ceil(count / DESTINATIONS.length);
}

/** The user of the n-th call: 50,000 users, each met again every 50,000 calls. */
function benchUserId(n: number): string {
  return `user-${(n * 7919) % 50_000}`;
}

/** A realistic ~1 KB call; about one in ten is filtered out (track filter or integrations). */
function benchCall(n: number): { value: string; fanout: number; key: string } {
  const userId = benchUserId(n);
  const timestamp = new Date(Date.UTC(2026, 4, 1) + n * 37).toISOString();
  const context = {
    ip: `203.0.113.${n % 250}`,
    library: { name: 'analytics-node', version: '3.1.0' },
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
    page: { path: '/checkout/complete', url: 'https://shop.example.com/checkout/complete', title: 'Thank you', referrer: 'https://shop.example.com/cart' },
    locale: 'en-US',
  };
  const kind = n % 20;
  if (kind === 0) {
    return {
      key: userId,
      fanout: 0,
      value: JSON.stringify({ type: 'track', userId, messageId: `bench-${n}`, timestamp, event: 'Debug Ping', properties: { seq: n, padding: 'p'.repeat(560) }, context }),
    };
  }
  if (kind === 1) {
    return {
      key: userId,
      fanout: 0,
      value: JSON.stringify({ type: 'identify', userId, messageId: `bench-${n}`, timestamp, traits: { plan: 'pro', padding: 'p'.repeat(560) }, integrations: { All: false }, context }),
    };
  }
  if (kind === 2) {
    return {
      key: userId,
      fanout: 3,
      value: JSON.stringify({
        type: 'identify',
        userId,
        messageId: `bench-${n}`,
        timestamp,
        traits: { email: `${userId}@example.com`, plan: n % 3 ? 'pro' : 'free', company: { name: 'Example Inc', employees: 250 }, bio: 'b'.repeat(480) },
        context,
      }),
    };
  }
  return {
    key: userId,
    fanout: 3,
    value: JSON.stringify({
      type: 'track',
      userId,
      messageId: `bench-${n}`,
      timestamp,
      event: 'Order Completed',
      properties: {
        order_id: `order-${n}`,
        total: 99.5 + (n % 100),
        revenue: 90.25,
        currency: 'USD',
        products: [
          { product_id: `p-${n % 500}`, sku: 'SKU-100-A', name: 'Monopoly: 3rd Edition', price: 19.99, quantity: 1, category: 'Games' },
          { product_id: `p-${(n + 1) % 500}`, sku: 'SKU-200-B', name: 'Uno Card Game', price: 3.5, quantity: 2, category: 'Games' },
        ],
        note: 'n'.repeat(220),
      },
      integrations: { All: true, Webhooks: true },
      context,
    }),
  };
}

/** Writes the bench's n calls to `topic`, the n-th from `sourceOf(n)` (its source-id header); the events they route to. */
async function produceInput(client: KafkaClient, topic: string, n: number, sourceOf: (n: number) => string = () => 'web'): Promise<number> {
  const producer = createProducer(client);
  await producer.connect();
  let events = 0;
  let bytes = 0;
  try {
    for (let start = 0; start < n; start += 2_000) {
      const messages: OutboundRecord[] = [];
      for (let i = start; i < Math.min(n, start + 2_000); i++) {
        const call = benchCall(i);
        events += call.fanout;
        bytes += call.value.length;
        messages.push({ key: call.key, value: call.value, headers: { 'source-id': sourceOf(i), [FANOUT_HEADER]: String(call.fanout) } });
      }
      await producer.send([{ topic, messages }]);
    }
  } finally {
    await producer.disconnect();
  }
  log(`produced ${n} calls (${Math.round(bytes / n)} bytes on average), ${events} events expected`);
  return events;
}

// The delivery headers the contract has the router write (docs/kafka.md), as the router encodes them.
const ATTEMPT_ZERO = Buffer.from('0');
const NOT_ATTEMPTED = Buffer.alloc(0);

/**
 * The baseline (`passthrough`): copy each record, unchanged, to the first `bench-fanout`
 * output topics, on the port's consumer runtime and producer, one send per batch,
 * marked done after the ack (the runtime commits at the batch's end), with the router's
 * consumer settings. With `contractHeaders`, each copy carries the four delivery headers
 * the router must write instead of the input's two (a side of its own,
 * `passthrough+headers`): what the client alone charges for the headers docs/kafka.md
 * requires, apart from the router's work.
 */
async function runPassthrough(
  client: KafkaClient,
  admin: KafkaAdmin,
  input: string,
  outputs: string[],
  groupId: string,
  tuning: RouterTuning,
  contractHeaders = false,
): Promise<number> {
  const producer = createProducer(client, { maxConcurrentSends: tuning.partitionsConsumedConcurrently, maxTopicBytesPerSend: tuning.maxTopicBytesPerSend });
  await producer.connect();
  const consumer = await startConsumer(
    client,
    routerConsumerSettings(groupId, [input], tuning),
    async (batch) => {
      const last = batch.records.at(-1);
      if (last === undefined) return;
      const perTopic: OutboundRecord[][] = outputs.map(() => []);
      for (const record of batch.records) {
        const fanout = Number(record.headers?.[FANOUT_HEADER]?.toString() ?? '0');
        const headers = contractHeaders
          ? { 'source-id': record.headers!['source-id']!, 'message-id': Buffer.from(`bench-${record.offset}`), attempt: ATTEMPT_ZERO, 'first-attempt-at': NOT_ATTEMPTED }
          : { 'source-id': record.headers!['source-id']!, [FANOUT_HEADER]: record.headers![FANOUT_HEADER]! };
        const copy: OutboundRecord = { key: record.key, value: record.value, headers };
        for (let i = 0; i < fanout; i++) perTopic[i]!.push(copy);
      }
      const records: TopicRecords[] = outputs.map((topic, i) => ({ topic, messages: perTopic[i]! })).filter((t) => t.messages.length > 0);
      if (records.length > 0) await producer.send(records);
      await batch.markDone(last.offset);
    },
    {},
    silentLogger(),
  );
  try {
    const clock = new Stopwatch();
    await waitForDrained(admin, groupId, input);
    return clock.read().seconds;
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
  }
}

/** The router alone (`router`), or with the seen-sources state as the router role runs it (`router+seen`). */
async function runRouter(config: Config, admin: KafkaAdmin, tuning: RouterTuning, seen: 'off' | 'cold' | 'warm' = 'off', n = 0): Promise<number> {
  const logger = silentLogger();
  const kafka = createKafka(config.kafka, logger);
  const deps = { config: staticConfigStore(config), kafka, metrics: createMetrics({ defaultMetrics: false }), logger };
  const cache = new SeenPairCache(500_000);
  const follower = seen !== 'off' ? createSeenFollower(deps, cache) : undefined;
  const router = createRouterService({
    ...deps,
    ...(seen !== 'off' ? { audiences: createAudienceHook(config.kafka.topicPrefix, () => config, cache) } : {}),
    tuning: { ...tuning, lagIntervalMs: 3_600_000 },
  });
  await follower?.start();
  // The cache is on once its follower has fetched (seen-follower.ts): as in a router that runs.
  if (seen !== 'off') await waitForCondition(() => cache.following, 'the seen-pair cache to follow user.sources');
  if (seen === 'warm') {
    for (let i = 0; i < n; i++) {
      const pair = cache.claim(benchUserId(i), 'web');
      if (pair !== undefined) cache.acknowledged([pair]);
    }
  }
  await router.start();
  try {
    const clock = new Stopwatch();
    await waitForDrained(admin, routerGroupId(config), topicNames(config.kafka.topicPrefix).calls);
    return clock.read().seconds;
  } finally {
    await router.stop();
    await follower?.stop();
  }
}

async function waitForCondition(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const SIDES = ['passthrough', 'router', 'router+no-transactions', 'passthrough+headers', 'router+seen', 'router+seen-warm', 'router+shaping', 'router+plan'];
/** Sides run only when --sides names them. */
const OPT_IN_SIDES = ['router-wide'];
const SEEN_SIDES: Record<string, 'cold' | 'warm'> = { 'router+seen': 'cold', 'router+seen-warm': 'warm' };

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, {
    n: 100_000,
    partitions: 6,
    rounds: 1,
    sides: SIDES.join(','),
    concurrency: ROUTER_TUNING.partitionsConsumedConcurrently,
    wide: 1_000,
  });
  const { n, partitions, rounds, wide } = options;
  // Both sides always run with the same consumer settings: the router's defaults,
  // with partitionsConsumedConcurrently overridable to compare.
  const tuning: RouterTuning = { ...ROUTER_TUNING, partitionsConsumedConcurrently: options.concurrency };
  // One side alone is for profiling (node --cpu-prof); the table then has no ratio.
  // `passthrough+headers` is left out by `--sides passthrough,router`.
  const sides = options.sides.split(',').filter((side) => SIDES.includes(side) || OPT_IN_SIDES.includes(side));
  if (sides.length === 0) throw new Error(`--sides takes ${[...SIDES, ...OPT_IN_SIDES].join(', ')}, comma-separated`);

  const broker = await startOrReuseBroker();
  const run = randomBytes(4).toString('hex');
  const prefix = `bench-${run}.`;
  const setup = benchConfig(broker.brokers, prefix, `bench-${run}`, partitions);
  const names = topicNames(prefix);
  const passOutputs = DESTINATIONS.map((id) => `${prefix}pass.${id}`);
  const client = createKafka(setup.kafka, silentLogger());
  const admin = createAdmin(client);
  await admin.connect();
  try {
    // Every topic exists before either side is timed.
    await admin.ensureTopics([...createTopology(prefix).router(setup), ...createTopology(prefix).audienceState(), ...passOutputs.map((topic) => ({ topic }))], {
      partitions,
      replicationFactor: 1,
    });
    const events = await produceInput(client, names.calls, n);
    // The wide side's own topics and input: the same calls, their sources taken in turn.
    const widePrefix = `bench-${run}-wide.`;
    const wideSetup = sides.includes('router-wide') ? wideConfig(broker.brokers, widePrefix, `bench-${run}-wide`, wide) : undefined;
    if (wideSetup !== undefined) {
      const clock = new Stopwatch();
      await admin.ensureTopics([{ topic: topicNames(widePrefix).calls }], { partitions, replicationFactor: 1 });
      await admin.ensureTopics([...createTopology(widePrefix).router(wideSetup), ...createTopology(widePrefix).audienceState()], { partitions: 1, replicationFactor: 1 });
      log(`router-wide: ${wide} destinations' topics made in ${clock.read().seconds.toFixed(1)} s`);
      const wideEvents = await produceInput(client, topicNames(widePrefix).calls, n, (i) => `s${i % wideSources(wide)}`);
      if (wideEvents !== events) throw new Error(`the wide input routes to ${wideEvents} events, not the ${events} of the other sides`);
    }

    const rows: { side: string; round: number; seconds: number; cpuSeconds: number }[] = [];
    for (let round = 1; round <= rounds; round++) {
      // Alternate which side goes first, so neither always gets the warmer JIT and page cache.
      const order = round % 2 === 1 ? sides : [...sides].reverse();
      for (const side of order) {
        const clock = new Stopwatch();
        // A group id takes letters, digits, '.', '_' and '-' only (kafka.groupPrefix).
        const groupId = `bench-${run}-${side.replaceAll('+', '_')}-${round}`;
        const seconds = side.startsWith('router')
          ? await runRouter(
              side === 'router-wide'
                ? wideConfig(broker.brokers, widePrefix, groupId, wide)
                : benchConfig(broker.brokers, prefix, groupId, partitions, side === 'router+shaping', side === 'router+plan', side !== 'router+no-transactions'),
              admin,
              tuning,
              SEEN_SIDES[side] ?? 'off',
              n,
            )
          : await runPassthrough(client, admin, names.calls, passOutputs, groupId, tuning, side === 'passthrough+headers');
        // CPU from start to stop of the side: its consumer and producer, not the broker's.
        const { cpuSeconds } = clock.read();
        rows.push({ side, round, seconds, cpuSeconds });
        log(`round ${round} ${side}: ${seconds.toFixed(2)} s (this process's CPU: ${cpuSeconds.toFixed(2)} s)`);
      }
    }

    const written = await Promise.all(DESTINATIONS.map((id) => recordsIn(admin, names.deliveries(id))));
    let wideWritten = 0;
    if (wideSetup !== undefined) {
      for (const destination of wideSetup.destinations) wideWritten += await recordsIn(admin, topicNames(widePrefix).deliveries(destination.id));
    }
    const best = (side: string) => Math.min(...rows.filter((r) => r.side === side).map((r) => r.seconds));
    const leastCpu = (side: string) => Math.min(...rows.filter((r) => r.side === side).map((r) => r.cpuSeconds));
    const out = [
      '',
      `route bench: ${n} calls (~1 KB), 1 source → ${DESTINATIONS.length} destinations, 10% filtered → ${events} events; ${partitions} partitions, ${tuning.partitionsConsumedConcurrently} consumed concurrently; best of ${rounds} round(s)`,
      ...formatTable(
        ['side', 'seconds', 'calls/s', 'events/s', 'node CPU s', 'CPU µs/call'],
        sides.map((side) => {
          const seconds = best(side);
          const cpu = leastCpu(side);
          return [side, seconds.toFixed(2), Math.round(n / seconds).toString(), Math.round(events / seconds).toString(), cpu.toFixed(2), ((cpu * 1e6) / n).toFixed(1)];
        }),
      ),
    ];
    const ratio = (ours: string, base: string) =>
      `${(best(base) / best(ours)).toFixed(2)}×, by CPU of this process ${(leastCpu(base) / leastCpu(ours)).toFixed(2)}×`;
    if (sides.includes('router') && sides.includes('passthrough')) {
      out.push(`ratio router/passthrough (against its own bare passthrough): ${ratio('router', 'passthrough')} (target ≥ 0.90×)`);
    }
    if (sides.includes('passthrough+headers') && sides.includes('passthrough')) {
      out.push(`  the contract's four delivery headers alone (passthrough+headers/passthrough): ${ratio('passthrough+headers', 'passthrough')}`);
    }
    if (sides.includes('router') && sides.includes('passthrough+headers')) {
      out.push(`  the router's own work (router/passthrough+headers): ${ratio('router', 'passthrough+headers')}`);
    }
    out.push(`every run (seconds): ${sides.map((side) => `${side} ${rows.filter((r) => r.side === side).map((r) => r.seconds.toFixed(2)).join('/')}`).join('; ')}`);
    if (sides.includes('router') && sides.includes('router+seen-warm')) {
      out.push(`ratio router+seen-warm/router: ${ratio('router+seen-warm', 'router')} (target ≥ 0.95×: the seen-sources state with known pairs)`);
    }
    if (sides.includes('router') && sides.includes('router+no-transactions')) {
      out.push(`ratio router/router+no-transactions: ${ratio('router', 'router+no-transactions')} (the cost of routing exactly once: each group of batches' output and offsets in one Kafka transaction, docs/kafka.md#transactions)`);
    }
    if (sides.includes('router') && sides.includes('router+shaping')) {
      out.push(`ratio router+shaping/router: ${ratio('router+shaping', 'router')} (target ≥ 0.70× events/s: a filter and a transform on each of 3 destinations)`);
    }
    if (sides.includes('router') && sides.includes('router+plan')) {
      out.push(`ratio router+plan/router: ${ratio('router+plan', 'router')} (target ≥ 0.80×: every call checked against a tracking plan of 100 events in observe mode)`);
      out.push(`check: violations recorded by the router+plan side: ${await recordsIn(admin, names.violations)} (the bench's calls follow the plan: 0 expected)`);
    }
    if (sides.includes('router') && sides.includes('router+seen')) {
      out.push(`ratio router+seen/router: ${ratio('router+seen', 'router')} (cold cache: a seen record per new pair)`);
    }
    if (sides.some((side) => side in SEEN_SIDES)) {
      out.push(`seen records written: ${await recordsIn(admin, audienceTopicNames(prefix).events)} for ${n * rounds} calls per side (${rounds} round(s))`);
    }
    if (sides.includes('router') && sides.includes('router-wide')) {
      out.push(
        `ratio router-wide/router (each call to 3 of ${wide} destinations in ${wideSources(wide)} sources, instead of 3 in one): ${ratio('router-wide', 'router')}`,
      );
    }
    if (sides.includes('router-wide')) {
      out.push(`check: the router-wide side wrote ${wideWritten} records over ${wide} delivery topics for ${events * rounds} expected (${rounds} round(s))`);
    }
    if (sides.some((side) => side.startsWith('router') && side !== 'router-wide')) {
      const routers = sides.filter((side) => side.startsWith('router') && side !== 'router-wide').length;
      out.push(
        `check: the router sides wrote ${written.join(' + ')} = ${written.reduce((a, b) => a + b, 0)} records for ${events * rounds * routers} expected (${rounds} round(s), ${routers} router side(s))`,
      );
    }
    out.push('');
    process.stdout.write(out.join('\n'));
  } finally {
    await admin.disconnect();
    await broker.stop();
  }
}
