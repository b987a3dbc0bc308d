// `npm run bench -- trace [--n 1000000] [--partitions 12] [--users 5000] [--rounds 3]`
//
// How long `switchyard trace` takes over a busy window: `calls` and one destination's
// topic each take `--n` records (12 partitions, `--users` users, timestamps spread over
// the last hour, the deliverer group's commits at the end), then one user's calls of the
// last two hours are traced, `--rounds` times. The target (issue 30): under 3 s for
// 1,000,000 records per topic.
//
// Sides, in the same run, over the same topics:
// - `trace 2h`: the whole trace (src/trace/trace.ts): calls and calls.invalid, planning,
//   the destination's topic, tiers and dead letters, the group's commits, the states;
// - `trace 30m`: the same over the last half hour: the records read (and the time) follow
//   the window of the user's partition, not the number of users or of partitions;
// - `read 2h` (the baseline): the port's key reads of the same two partitions alone
//   (src/kafka/key-scan.ts), no planning, no states: what reading and decoding costs.
//
// Starts its own local broker unless KAFKA_BROKERS is set. The topics are deleted at the end.
import { randomBytes } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import type { Config } from '../src/config/schema.js';
import { staticConfigStore } from '../src/config/store.js';
import { delivererGroupId } from '../src/delivery/deliverer-service.js';
import { createAdmin, createKafka, createKeyReader, createProducer, partitionOfKey } from '../src/kafka/index.js';
import type { KafkaAdmin, KafkaClient, OutboundRecord } from '../src/kafka/index.js';
import { silentLogger } from '../src/observability/logger.js';
import { traceUser } from '../src/trace/trace.js';
import { Stopwatch, benchOptions, deliveryMessage, formatTable, loadBenchConfig, log, startOrReuseBroker } from './support.js';
import { createTopology } from '../src/runtime/topology.js';

const HOUR = 3_600_000;
/** Records per produce request, and requests in flight, while filling: the fill is not what is measured. */
const FILL_BATCH = 5_000;
const FILL_IN_FLIGHT = 4;

function benchConfig(brokers: string, prefix: string, partitions: number): Config {
  return loadBenchConfig(
    {
      kafka: { brokers: brokers.split(','), clientId: `bench-trace-${randomBytes(3).toString('hex')}`, topicPrefix: prefix, partitions },
      delivery: { retryTiers: ['10s', '1m'] },
      sources: [{ id: 'web', destinations: ['hooks'] }],
      destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://hooks.example.com/in' }] } }],
    },
    'bench-trace.yaml',
  );
}

/** The n-th call as a producer writes it to `calls`: the user as key, the source as a header, stamped within the last hour. */
function callMessage(n: number, users: number, total: number, now: number): OutboundRecord {
  const user = `user-${n % users}`;
  return {
    key: user,
    value: JSON.stringify({ type: 'track', userId: user, messageId: `bench-${n}`, event: 'Order Completed', properties: { orderId: `o-${n}`, total: 99.5 } }),
    headers: { 'source-id': 'web' },
    timestamp: String(now - HOUR + Math.floor((n * HOUR) / total)),
  };
}

/**
 * Writes `n` records made by `make` through the port's producer (@platformatic/kafka), in
 * sends of FILL_BATCH records (requests of up to 8 MB, under 1 MB per partition), FILL_IN_FLIGHT at a time.
 */
async function fill(client: KafkaClient, topic: string, n: number, make: (i: number) => OutboundRecord): Promise<void> {
  const producer = createProducer(client, { maxConcurrentSends: FILL_IN_FLIGHT, maxTopicBytesPerSend: 8_000_000 });
  await producer.connect();
  try {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const start = next;
        next = Math.min(n, next + FILL_BATCH);
        const messages: OutboundRecord[] = [];
        for (let i = start; i < next; i++) messages.push(make(i));
        await producer.send([{ topic, messages }]);
      }
    };
    await Promise.all(Array.from({ length: FILL_IN_FLIGHT }, worker));
  } finally {
    await producer.disconnect();
  }
}

/** The deliverer group's commit at the end of every partition of `topic`: every delivery finished. */
async function commitAll(admin: KafkaAdmin, groupId: string, topic: string): Promise<void> {
  const ends = await admin.partitionEnds(topic);
  await admin.commitOffsets(groupId, [{ topic, partitions: ends.map((p) => ({ partition: p.partition, offset: p.high, metadata: null })) }]);
}

interface Row {
  side: string;
  seconds: number[];
  cpuSeconds: number[];
  scanned: number;
  found: string;
}

async function timed(rounds: number, run: () => Promise<{ scanned: number; found: string }>): Promise<Omit<Row, 'side'>> {
  const seconds: number[] = [];
  const cpuSeconds: number[] = [];
  let last = { scanned: 0, found: '' };
  for (let round = 0; round < rounds; round++) {
    const watch = new Stopwatch();
    last = await run();
    const { seconds: s, cpuSeconds: c } = watch.read();
    seconds.push(s);
    cpuSeconds.push(c);
  }
  return { seconds, cpuSeconds, ...last };
}

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;

export async function main(args: string[]): Promise<void> {
  const options = benchOptions(args, { n: 1_000_000, partitions: 12, users: 5_000, rounds: 3 });
  const broker = await startOrReuseBroker();
  const prefix = `bench-trace-${randomBytes(4).toString('hex')}.`;
  const config = benchConfig(broker.brokers, prefix, options.partitions);
  const client: KafkaClient = createKafka(config.kafka, silentLogger());
  const topology = createTopology(prefix);
  const { names } = topology;
  const admin = createAdmin(client);
  await admin.connect();
  try {
    await admin.ensureTopics(topology.router(config), { partitions: options.partitions, replicationFactor: 1 });
    const now = Date.now();
    const fillWatch = new Stopwatch();
    log(`filling ${names.calls} and ${names.deliveries('hooks')} with ${options.n} records each (${options.partitions} partitions, ${options.users} users)`);
    await fill(client, names.calls, options.n, (i) => callMessage(i, options.users, options.n, now));
    // The router's records of the same calls: the same user as key, the message id, the receipt time as timestamp.
    await fill(client, names.deliveries('hooks'), options.n, (i) => ({
      ...(deliveryMessage(`bench-${i}`, i) as OutboundRecord),
      key: `user-${i % options.users}`,
      timestamp: String(now - HOUR + Math.floor((i * HOUR) / options.n)),
    }));
    await commitAll(admin, delivererGroupId(config), names.deliveries('hooks'));
    log(`filled in ${fillWatch.read().seconds.toFixed(1)} s`);

    const user = 'user-7';
    const deps = { config: staticConfigStore(config), kafka: client };
    const trace = (sinceMs: number) => async () => {
      const result = await traceUser(deps, { who: { kind: 'userId', id: user }, sinceMs });
      const states = new Map<string, number>();
      for (const m of result.document.messages) for (const d of m.destinations) states.set(d.state, (states.get(d.state) ?? 0) + 1);
      return { scanned: result.scanned, found: `${result.document.messages.length} calls: ${[...states].map(([s, k]) => `${k} ${s}`).join(', ')}` };
    };
    const bareRead = async () => {
      const reader = createKeyReader(client);
      try {
        const key = Buffer.from(user);
        const asks = [names.calls, names.deliveries('hooks')].map((topic) => ({ topic, partition: partitionOfKey(key, options.partitions), sinceMs: Date.now() - 2 * HOUR }));
        const reads = await reader.read(await reader.ranges(asks), key);
        return { scanned: reads.reduce((n, r) => n + r.scanned, 0), found: `${reads.reduce((n, r) => n + r.records.length, 0)} records of the user` };
      } finally {
        await reader.close();
      }
    };

    const rows: Row[] = [];
    rows.push({ side: 'read 2h (baseline)', ...(await timed(options.rounds, bareRead)) });
    rows.push({ side: 'trace 2h', ...(await timed(options.rounds, trace(Date.now() - 2 * HOUR))) });
    rows.push({ side: 'trace 30m', ...(await timed(options.rounds, trace(Date.now() - HOUR / 2))) });

    const base = median(rows[0]!.seconds);
    const table = formatTable(
      ['side', 'records read', 'seconds (median)', 'seconds (each round)', 'cpu s (median)', 'vs baseline', 'found'],
      rows.map((row) => [
        row.side,
        String(row.scanned),
        median(row.seconds).toFixed(2),
        row.seconds.map((s) => s.toFixed(2)).join(' '),
        median(row.cpuSeconds).toFixed(2),
        `${(median(row.seconds) / base).toFixed(2)}x`,
        row.found,
      ]),
    );
    process.stdout.write(`trace: ${options.n} records in ${names.calls} and in ${names.deliveries('hooks')}, ${options.partitions} partitions, ${options.users} users; target: trace 2h under 3 s\n`);
    process.stdout.write(`${table.join('\n')}\n`);
  } finally {
    const mine = (await admin.listTopics()).filter((topic) => topic.startsWith(prefix));
    const deleter = new Admin({ clientId: 'bench-trace', bootstrapBrokers: config.kafka.brokers });
    await deleter.deleteTopics({ topics: mine }).catch((error: unknown) => log(`could not delete the bench topics: ${String(error)}`));
    await deleter.close();
    await admin.disconnect();
    await broker.stop();
  }
}
