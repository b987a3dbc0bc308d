// `npm run bench -- deliver [--n 20000] [--partitions 6] [--concurrency 64] [--rounds 3] [--scenarios 0ms,50ms,hanging,breaker,batch,ordered,oauth2,tls,kafka]`, or
// standalone: `tsx bench/deliver.ts [same options]`.
//
// Webhooks per second from the deliverer (Kafka in, signed POSTs out, commits) to a
// local keep-alive receiver, against bare undici posting the same bodies at the same
// concurrency to the same receiver in the same run, at 0 ms and at 50 ms response
// latency. At 0 ms a third side, the floor (bare @platformatic/kafka consumption feeding
// bare undici, nothing else), tells how much of the gap the client alone makes. Then a healthy
// destination's rate alone and beside a neighbour whose URL never answers. Then the
// circuit breaker: a destination whose second URL never answers, timed once that URL's
// circuit is open, against the same destination with only its healthy URL (and, for
// scale, with the breaker switched off). Then batches of 100 (`settings.batch`) and per-user
// order (`ordering: user`, 1,000 users) against the per-event deliverer at 0 ms. Then
// `settings.auth.oauth2` (tokens from the receiver's /token, an hour long) against the
// same destination without auth, and HTTPS with a client certificate (mTLS) against HTTPS
// without one (a receiver made with certificates from openssl). Then a Kafka destination
// (`type: kafka`, a topic of the same cluster) against the per-event webhook deliverer
// at 0 ms. The receiver
// runs in a child process so it does not share the event loop with what is measured.
// Each pair runs in alternating order over several rounds and the median of each is
// compared (the machine is shared). Starts its own local broker unless KAFKA_BROKERS is
// set.
import { randomBytes } from 'node:crypto';
import { Agent } from 'undici';
import { signBody } from '../src/calls/index.js';
import type { Config } from '../src/config/schema.js';
import { staticConfigStore } from '../src/config/store.js';
import { createDelivererService } from '../src/delivery/deliverer-service.js';
import type { DelivererTuning } from '../src/delivery/deliverer-service.js';
import { Consumer } from '@platformatic/kafka';
import type { Message } from '@platformatic/kafka';
import { createAdmin, createKafka, createProducer } from '../src/kafka/index.js';
import type { KafkaClient } from '../src/kafka/index.js';
import { silentLogger } from '../src/observability/logger.js';
import { createMetrics } from '../src/observability/metrics.js';
import type { Metrics } from '../src/observability/metrics.js';
import { USER_AGENT } from '../src/version.js';
import { createTestPki } from '../test/support/test-pki.js';
import {
  Stopwatch,
  benchOptions,
  deliveryMessage,
  formatTable,
  isEntryPoint,
  loadBenchConfig,
  log,
  runMain,
  startOrReuseBroker,
  startReceiverProcess,
  trackBody,
} from './support.js';
import { topicNames } from '../src/runtime/topics.js';

const SECRET = 'bench-secret';

// The receiver: plain node:http, keep-alive, reads each body whole, answers 200 after
// the latency in the path (/ok/<ms>); /hang never answers.
const RECEIVER_SOURCE = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  req.on('data', () => {});
  req.on('end', () => {
    if (req.url === '/hang') return;
    if (req.url === '/token') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'bench-token-' + Date.now(), token_type: 'Bearer', expires_in: 3600 }));
      return;
    }
    const ms = Number(req.url.split('/')[2] || 0);
    const answer = () => { res.writeHead(200, { 'content-type': 'text/plain' }); res.end('ok'); };
    if (ms > 0) setTimeout(answer, ms); else answer();
  });
});
`;

/** The same receiver over HTTPS (the certificates' PEM text); with `requireClientCert`, a handshake without a client certificate its CA signed fails. */
function httpsReceiverSource(pem: { key: string; cert: string; ca: string }, requireClientCert: boolean): string {
  const options = { key: pem.key, cert: pem.cert, ca: pem.ca, requestCert: requireClientCert, rejectUnauthorized: requireClientCert };
  return RECEIVER_SOURCE.replace("const http = require('node:http');\nconst server = http.createServer(", `const https = require('node:https');\nconst server = https.createServer(${JSON.stringify(options)}, `);
}

/** Destination id → its URL, or its URLs, or those with more settings (batch, ordering); or a Kafka destination's settings (`kafka`). */
type BenchDestinations = Record<string, string | string[] | { urls: string | string[]; settings: Record<string, unknown> } | { kafka: { topic: string } & Record<string, unknown> }>;

function benchConfig(
  brokers: string,
  prefix: string,
  clientId: string,
  partitions: number,
  concurrency: number,
  destinations: BenchDestinations,
  timeout = '2s',
): Config {
  return loadBenchConfig(
    {
      // NOTE: fresh consumer groups per run and side, as the client id names them.
      kafka: { brokers: brokers.split(','), clientId, topicPrefix: prefix, groupPrefix: `${clientId}.`, partitions },
      delivery: { timeout, retryTiers: ['1s', '5s'], maxRetryWindow: '1m', concurrencyPerDestination: concurrency },
      sources: [{ id: 'bench' }], // a config needs a source; this bench only delivers
      destinations: Object.entries(destinations).map(([id, entry]) => {
        if (typeof entry === 'object' && 'kafka' in entry) return { id, type: 'kafka', settings: entry.kafka };
        const { urls, settings } = typeof entry === 'string' || Array.isArray(entry) ? { urls: entry, settings: {} } : entry;
        return { id, type: 'webhooks', settings: { webhooks: [urls].flat().map((url) => ({ url })), sharedSecret: SECRET, ...settings } };
      }),
    },
    'bench-deliver.yaml',
  );
}

async function fill(client: KafkaClient, topic: string, n: number, users?: number): Promise<void> {
  const producer = createProducer(client);
  await producer.connect();
  try {
    const chunk = 2_000;
    for (let start = 0; start < n; start += chunk) {
      const messages = [];
      for (let i = start; i < Math.min(n, start + chunk); i++) messages.push(deliveryMessage(`bench-${i}`, i, users));
      await producer.send([{ topic, messages }]);
    }
  } finally {
    await producer.disconnect();
  }
}

/** The pairs `--scenarios` can pick, in the order they run. */
const SCENARIOS = ['0ms', '50ms', 'hanging', 'breaker', 'batch', 'ordered', 'oauth2', 'tls', 'kafka'] as const;
type Scenario = (typeof SCENARIOS)[number];

/**
 * Both sides are timed over the last 80% of their events: start-up (the group join, the
 * first fetch, opening connections, a neighbour's first fetch) is not what is compared.
 */
const WARM_UP = 0.2;

/** Runs a deliverer over pre-filled topics and returns the measured destination's rate. */
interface Measured {
  /** Events per second. */
  rate: number;
  /** CPU time of this process (user + system) per event, in microseconds: not the receiver's, not the broker's. */
  cpuUs: number;
}

async function deliverRate(options: {
  config: Config;
  client: KafkaClient;
  measured: string;
  n: number;
  tuning?: Partial<DelivererTuning>;
  /** Timing starts only once this holds too (past the warm-up). */
  warmedUp?: (metrics: Metrics) => Promise<boolean>;
}): Promise<Measured> {
  const metrics = createMetrics({ defaultMetrics: false });
  const service = createDelivererService(
    { config: staticConfigStore(options.config), kafka: options.client, metrics, logger: silentLogger() },
    { sampleIntervalMs: 3_600_000, ...options.tuning },
  );
  const delivered = async () => {
    const { values } = await metrics.deliveries.get();
    return values.find((v) => v.labels.destination === options.measured && v.labels.result === 'delivered')?.value ?? 0;
  };
  await service.start();
  try {
    let first: { count: number; clock: Stopwatch } | undefined;
    const deadline = Date.now() + 600_000;
    for (;;) {
      const count = await delivered();
      if (first === undefined && count >= options.n * WARM_UP && (options.warmedUp === undefined || (await options.warmedUp(metrics)))) {
        if (count >= options.n * (1 - WARM_UP)) throw new Error(`${count} of ${options.n} events were delivered before the warm-up ended; raise --n`);
        first = { count, clock: new Stopwatch() };
      }
      if (count >= options.n) {
        const { seconds, cpuSeconds } = first!.clock.read();
        const events = count - first!.count;
        const { values } = await metrics.deliveryAttempts.get();
        const outcomes = values.filter((v) => v.labels.destination === options.measured && v.value > 0).map((v) => `${v.labels.outcome} ${v.value}`);
        log(`  ${options.measured}: attempts by outcome: ${outcomes.join(', ')}`);
        return { rate: events / seconds, cpuUs: (cpuSeconds * 1e6) / events };
      }
      if (Date.now() > deadline) throw new Error(`only ${count} of ${options.n} delivered in 10 minutes`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await service.stop();
  }
}

/** One signed POST the plain undici way (`request`, body dumped), as both baselines send it. */
async function postSigned(agent: Agent, target: URL, body: Buffer, who: string): Promise<void> {
  const response = await agent.request({
    origin: target.origin,
    path: target.pathname,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': USER_AGENT, 'x-signature': signBody(body, SECRET) },
    body,
  });
  await response.body.dump();
  if (response.statusCode !== 200) throw new Error(`${who} got ${response.statusCode}`);
}

/**
 * The floor of any deliverer on the project's Kafka client: bare @platformatic/kafka
 * consumption of the same topic (autocommit every second) feeding bare undici exactly as
 * `undiciRate` posts (same API, headers, signature, concurrency), with none of the
 * deliverer's work: no envelope, classification, retries, metrics or offset tracking.
 * Its ratio to bare undici is what the client alone costs; the deliverer's ratio to it
 * is what the deliverer itself costs.
 */
async function floorRate(client: KafkaClient, topic: string, groupId: string, url: string, n: number, concurrency: number): Promise<Measured> {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const target = new URL(url);
  let free = concurrency;
  const waiting: (() => void)[] = [];
  let done = 0;
  const warmUp = Math.floor(n * WARM_UP);
  const clock = new Stopwatch();
  let finished!: () => void;
  let failed!: (error: unknown) => void;
  const all = new Promise<void>((resolve, reject) => {
    finished = resolve;
    failed = reject;
  });
  const post = async (body: Buffer) => {
    await postSigned(agent, target, body, 'floor');
    done += 1;
    if (done === warmUp) clock.restart();
    if (done === n) finished();
  };
  const consumer = new Consumer({ clientId: `${groupId}-client`, bootstrapBrokers: client.settings.brokers, groupId, maxWaitTime: 250, autocommit: 1_000 });
  const stream = await consumer.consume({ topics: [topic], mode: 'earliest', autocommit: 1_000 });
  stream.on('data', (message: Message<Buffer, Buffer, Buffer, Buffer>) => {
    const send = () =>
      void post(message.value!)
        .catch(failed)
        .finally(() => {
          const next = waiting.shift();
          if (next) next();
          else free += 1;
        });
    if (free > 0) {
      free -= 1;
      send();
      return;
    }
    // Every slot taken: the stream waits (backpressure) until one frees.
    stream.pause();
    waiting.push(() => {
      stream.resume();
      send();
    });
  });
  let seconds: number;
  let cpuSeconds: number;
  try {
    await all;
    ({ seconds, cpuSeconds } = clock.read());
  } finally {
    await stream.close();
    await consumer.close(true);
    await agent.close();
  }
  return { rate: (n - warmUp) / seconds, cpuUs: (cpuSeconds * 1e6) / (n - warmUp) };
}

/** Bare undici: the same bodies, headers and concurrency, straight from memory. */
async function undiciRate(url: string, n: number, concurrency: number): Promise<Measured> {
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  const target = new URL(url);
  const bodies = Array.from({ length: n }, (_, i) => Buffer.from(trackBody(`bench-${i}`, i)));
  let next = 0;
  let done = 0;
  const warmUp = Math.floor(n * WARM_UP);
  const clock = new Stopwatch();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) {
        await postSigned(agent, target, bodies[i]!, 'bare undici');
        done += 1;
        if (done === warmUp) clock.restart();
      }
    }),
  );
  const { seconds, cpuSeconds } = clock.read();
  await agent.close();
  return { rate: (n - warmUp) / seconds, cpuUs: (cpuSeconds * 1e6) / (n - warmUp) };
}

export async function main(args: string[]): Promise<void> {
  const { n, partitions, concurrency, rounds, scenarios } = benchOptions(args, {
    n: 20_000,
    partitions: 6,
    concurrency: 64,
    rounds: 3,
    scenarios: SCENARIOS.join(','),
  });
  const chosen = new Set(scenarios.split(','));
  const unknown = [...chosen].filter((name) => !(SCENARIOS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`--scenarios takes ${SCENARIOS.join(', ')} (comma-separated), not ${unknown.join(', ')}`);
  // At 50 ms the rate is bounded by concurrency / latency; fewer events keep the run short.
  const slowN = Math.min(n, concurrency * 20 * 10);
  // NOTE: the breaker rows are timed once the hanging URL's circuit is open: five timeouts
  // of 1 s each at the least, while the healthy URL delivers at full speed meanwhile
  // (its first 2xx settles each event). More events keep most of them for the timed part.
  const breakerN = 5 * n;

  const broker = await startOrReuseBroker();
  const receiver = await startReceiverProcess(RECEIVER_SOURCE);
  // HTTPS receivers only when their rows run: openssl makes their certificates.
  const pki = chosen.has('tls') ? createTestPki() : undefined;
  const pem = pki === undefined ? undefined : { key: pki.read(pki.server.key).toString(), cert: pki.read(pki.server.cert).toString(), ca: pki.read(pki.ca.cert).toString() };
  const httpsReceiver = pem === undefined ? undefined : await startReceiverProcess(httpsReceiverSource(pem, false));
  const mtlsReceiver = pem === undefined ? undefined : await startReceiverProcess(httpsReceiverSource(pem, true));
  const httpsUrl = (r: typeof httpsReceiver, path: string) => r!.url(path).replace(/^http:/, 'https:');
  const run = randomBytes(4).toString('hex');
  const logger = silentLogger();
  const results = new Map<string, Measured[]>();
  const record = (name: string, measured: Measured) => {
    results.set(name, [...(results.get(name) ?? []), measured]);
    log(`${name}: ${Math.round(measured.rate)}/s, ${measured.cpuUs.toFixed(1)} µs CPU/event`);
  };
  let scenarioNumber = 0;
  /** Each Kafka destination run writes a topic of its own. */
  let kafkaRuns = 0;
  try {
    /** Fills the topics of `destinations`, then runs the deliverer over them (or, with `floorUrl`, the client + undici floor). */
    const scenario = async (
      destinations: BenchDestinations,
      counts: Record<string, number>,
      extra: { floorUrl?: string; timeout?: string; users?: number; tuning?: Partial<DelivererTuning>; warmedUp?: (metrics: Metrics) => Promise<boolean> } = {},
    ) => {
      const { floorUrl } = extra;
      scenarioNumber += 1;
      const prefix = `bench-${run}-${scenarioNumber}.`;
      const config = benchConfig(broker.brokers, prefix, `bench-${run}-${scenarioNumber}`, partitions, concurrency, destinations, extra.timeout);
      const client = createKafka(config.kafka, logger);
      const names = topicNames(prefix);
      const admin = createAdmin(client);
      await admin.connect();
      const tiers = config.delivery.retryTiers.map((t) => t.name);
      const targets = Object.values(destinations).flatMap((entry) => (typeof entry === 'object' && 'kafka' in entry ? [entry.kafka.topic] : []));
      await admin.ensureTopics(
        [...Object.keys(destinations).flatMap((id) => [names.deliveries(id), names.dlq(id), ...tiers.map((t) => names.retry(id, t))]), ...targets].map((topic) => ({ topic })),
        { partitions, replicationFactor: 1 },
      );
      await admin.disconnect();
      for (const [id, count] of Object.entries(counts)) await fill(client, names.deliveries(id), count, extra.users);
      const measured = Object.keys(counts)[0]!;
      if (floorUrl !== undefined) return floorRate(client, names.deliveries(measured), `${config.kafka.clientId}-floor`, floorUrl, counts[measured]!, concurrency);
      return deliverRate({
        config,
        client,
        measured,
        n: counts[measured]!,
        ...(extra.tuning === undefined ? {} : { tuning: extra.tuning }),
        ...(extra.warmedUp === undefined ? {} : { warmedUp: extra.warmedUp }),
      });
    };

    // NOTE: a short timeout, so that the hanging URL's circuit opens within seconds (5
    // timed-out requests); the same on both sides. Not shorter: on a loaded machine a
    // healthy URL's answers then start to time out too, and its own circuit opens.
    const breakerTimeout = '1s';
    let circuitOpenedAt: number | undefined;
    const circuitOpen = async (metrics: Metrics) => {
      const { values } = await metrics.circuitState.get();
      const open = values.some((v) => v.labels.destination === 'pair' && v.labels.url_index === '1' && v.value === 1);
      if (open && circuitOpenedAt === undefined) circuitOpenedAt = Date.now();
      return open;
    };

    const healthy = receiver.url('/ok/0');
    const batch = { batch: { maxEvents: 100, maxBytes: '512KB', maxWait: '100ms' } };
    const allPairs: Record<Scenario, [string, () => Promise<Measured>][]> = {
      '0ms': [
        ['bare undici 0 ms', () => undiciRate(receiver.url('/ok/0'), n, concurrency)],
        ['deliverer 0 ms', () => scenario({ hooks: receiver.url('/ok/0') }, { hooks: n })],
        ['client+undici floor 0 ms', () => scenario({ hooks: receiver.url('/ok/0') }, { hooks: n }, { floorUrl: receiver.url('/ok/0') })],
      ],
      '50ms': [
        ['bare undici 50 ms', () => undiciRate(receiver.url('/ok/50'), slowN, concurrency)],
        ['deliverer 50 ms', () => scenario({ hooks: receiver.url('/ok/50') }, { hooks: slowN })],
      ],
      hanging: [
        ['healthy alone', () => scenario({ healthy }, { healthy: n })],
        ['healthy beside hanging', () => scenario({ healthy, hanging: receiver.url('/hang') }, { healthy: n, hanging: n })],
      ],
      breaker: [
        ['healthy URL alone', () => scenario({ pair: healthy }, { pair: breakerN }, { timeout: breakerTimeout })],
        [
          'healthy + hanging URL, breaker on',
          async () => {
            circuitOpenedAt = undefined;
            const started = Date.now();
            const measured = await scenario({ pair: [healthy, receiver.url('/hang')] }, { pair: breakerN }, { timeout: breakerTimeout, warmedUp: circuitOpen });
            if (circuitOpenedAt !== undefined) log(`  the hanging URL's circuit was seen open ${((circuitOpenedAt - started) / 1000).toFixed(1)} s after the scenario started (topics and fill included)`);
            return measured;
          },
        ],
        [
          'healthy + hanging URL, breaker off',
          () => scenario({ pair: [healthy, receiver.url('/hang')] }, { pair: breakerN }, { timeout: breakerTimeout, tuning: { circuitBreaker: { minAttempts: Number.MAX_SAFE_INTEGER, unanswered: Number.MAX_SAFE_INTEGER } } }),
        ],
      ],
      batch: [
        ['deliverer 0 ms, per event', () => scenario({ hooks: healthy }, { hooks: n })],
        ['deliverer 0 ms, batch 100', () => scenario({ hooks: { urls: healthy, settings: batch } }, { hooks: n })],
      ],
      ordered: [
        ['deliverer 0 ms, 1,000 users', () => scenario({ hooks: healthy }, { hooks: n }, { users: 1_000 })],
        ['deliverer 0 ms, 1,000 users ordered', () => scenario({ hooks: { urls: healthy, settings: { ordering: 'user' } } }, { hooks: n }, { users: 1_000 })],
      ],
      oauth2: [
        ['deliverer 0 ms, no auth', () => scenario({ hooks: healthy }, { hooks: n })],
        [
          'deliverer 0 ms, oauth2',
          () => scenario({ hooks: { urls: healthy, settings: { auth: { oauth2: { tokenUrl: receiver.url('/token'), clientId: 'bench', clientSecret: 'bench-client-secret' } } } } }, { hooks: n }),
        ],
      ],
      tls: [
        ['deliverer 0 ms, http', () => scenario({ hooks: healthy }, { hooks: n })],
        ['deliverer 0 ms, https', () => scenario({ hooks: { urls: httpsUrl(httpsReceiver, '/ok/0'), settings: { tls: { ca: pki!.ca.cert } } } }, { hooks: n })],
        [
          'deliverer 0 ms, mtls',
          () => scenario({ hooks: { urls: httpsUrl(mtlsReceiver, '/ok/0'), settings: { tls: { ca: pki!.ca.cert, clientCert: pki!.client.cert, clientKey: pki!.client.key } } } }, { hooks: n }),
        ],
      ],
      kafka: [
        ['deliverer 0 ms, webhook', () => scenario({ hooks: healthy }, { hooks: n })],
        ['deliverer, kafka topic (same cluster)', () => scenario({ lake: { kafka: { topic: `bench-${run}.lake.${(kafkaRuns += 1)}` } } }, { lake: n })],
      ],
    };
    const pairs = SCENARIOS.filter((name) => chosen.has(name)).map((name) => allPairs[name]);
    for (let round = 1; round <= rounds; round++) {
      for (const pair of pairs) {
        for (const [name, measure] of round % 2 === 1 ? pair : [...pair].reverse()) record(name, await measure());
      }
    }

    // The median run of each: one run disturbed by whatever else the machine ran, or one
    // lucky one, moves neither side.
    const median = (name: string): Measured => {
      const runs = [...(results.get(name) ?? [])].sort((a, b) => a.rate - b.rate);
      return runs[Math.floor((runs.length - 1) / 2)] ?? { rate: 0, cpuUs: 0 };
    };
    const row = (label: string, ours: string, base: string, target: string) => {
      const [o, b] = [median(ours), median(base)];
      return [label, Math.round(o.rate).toString(), Math.round(b.rate).toString(), `${(o.rate / b.rate).toFixed(2)}×`, target, o.cpuUs.toFixed(1), b.cpuUs.toFixed(1)];
    };
    const cpuRatio = (ours: string, base: string) => `CPU/event ${(median(ours).cpuUs / median(base).cpuUs).toFixed(2)}×`;
    const rows = [
      ...(chosen.has('0ms')
        ? [
            row(`0 ms latency, ${n} events`, 'deliverer 0 ms', 'bare undici 0 ms', '≥ 0.80×'),
            row('  floor: bare @platformatic/kafka → bare undici', 'client+undici floor 0 ms', 'bare undici 0 ms', '(bound)'),
            row('  deliverer vs that floor', 'deliverer 0 ms', 'client+undici floor 0 ms', ''),
          ]
        : []),
      ...(chosen.has('50ms') ? [row(`50 ms latency, ${slowN} events`, 'deliverer 50 ms', 'bare undici 50 ms', '≥ 0.80×')] : []),
      ...(chosen.has('hanging') ? [row('healthy beside a hanging one', 'healthy beside hanging', 'healthy alone', '≥ 0.90×')] : []),
      ...(chosen.has('breaker')
        ? [
            row('one of two URLs hanging, breaker open', 'healthy + hanging URL, breaker on', 'healthy URL alone', '≥ 0.90×'),
            row('  the same without the breaker', 'healthy + hanging URL, breaker off', 'healthy URL alone', '(for scale)'),
          ]
        : []),
      ...(chosen.has('batch')
        ? [row('batch 100', 'deliverer 0 ms, batch 100', 'deliverer 0 ms, per event', `≥ 3.00×; ${cpuRatio('deliverer 0 ms, batch 100', 'deliverer 0 ms, per event')} (≤ 0.30×)`)]
        : []),
      ...(chosen.has('ordered') ? [row('ordered (1,000 users)', 'deliverer 0 ms, 1,000 users ordered', 'deliverer 0 ms, 1,000 users', '≥ 0.80×')] : []),
      ...(chosen.has('oauth2') ? [row('oauth2', 'deliverer 0 ms, oauth2', 'deliverer 0 ms, no auth', '≥ 0.90×')] : []),
      ...(chosen.has('tls')
        ? [row('https', 'deliverer 0 ms, https', 'deliverer 0 ms, http', '(for scale)'), row('mtls', 'deliverer 0 ms, mtls', 'deliverer 0 ms, https', '≥ 0.90×')]
        : []),
      // NOTE: the same cluster: records and offsets in transactions, exactly once (docs/kafka.md#what-is-guaranteed).
      ...(chosen.has('kafka') ? [row('kafka topic, same cluster (transactional)', 'deliverer, kafka topic (same cluster)', 'deliverer 0 ms, webhook', '(for scale)')] : []),
    ];
    process.stdout.write(
      [
        '',
        `deliver bench: signed ~700-byte POSTs to a keep-alive node:http receiver (child process); ${partitions} partitions; concurrency ${concurrency}; median of ${rounds} round(s), each timed over its last 80% of events`,
        ...formatTable(['scenario', 'deliverer/s', 'baseline/s', 'ratio', 'target', 'µs CPU/ev', 'base µs/ev'], rows),
        'baseline: bare undici at the same concurrency to the same receiver (latency rows); the healthy destination alone (hanging row); the destination with only its healthy URL (breaker rows, timed once the circuit is open); the per-event deliverer at 0 ms (batch row; kafka row: to webhooks), over plain HTTP (https row); the same without ordering (ordered row), without auth (oauth2 row), over HTTPS without a client certificate (mtls row)',
        'µs CPU/ev: CPU time of the benchmark process per event (the receiver and broker not included)',
        `every run (events/s): ${[...results.entries()].map(([name, runs]) => `${name} ${runs.map((r) => Math.round(r.rate)).join('/')}`).join('; ')}`,
        '',
      ].join('\n'),
    );
  } finally {
    receiver.stop();
    httpsReceiver?.stop();
    mtlsReceiver?.stop();
    pki?.remove();
    await broker.stop();
  }
}

if (isEntryPoint(import.meta.url)) runMain(main);
