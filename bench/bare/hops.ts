// The bare hops of the e2e and gateway benches: hand-written floors of Switchyard's
// design, one process each (`node bench/bare/hops.ts '<BareSpec as JSON>'`, started by
// bench/e2e.ts startBare). Plain Node runs this file (its type stripping): no tsx and
// nothing of src/ to load, so that a hop's start-up costs what a user's script would.
// It imports packages only (a relative import would need its `.ts` extension).
//
// Roles: `single-hop` renders each call and POSTs it to every URL; `render` writes each
// rendered call to every output topic (acks=all); `post` POSTs each record to the URL of
// its topic; `ingest` is the gateway bench's bare HTTP intake. Each commits after its
// work. `client` picks the Kafka client: @platformatic/kafka, the project's, or kafkajs,
// the peers' reference, loaded by name when asked for (it is no dependency of the project).
import { createServer } from 'node:http';
import { inspect } from 'node:util';
import { Consumer, Producer } from '@platformatic/kafka';
import type { Message as PlatformaticMessage, MessageToProduce } from '@platformatic/kafka';
import { Pool } from 'undici';

/** Batches in work at once: the kafkajs hops' partitionsConsumedConcurrently, and the platformatic hops' batches. */
const CONSUMED_CONCURRENTLY = 3;
/** undici connections per destination: Switchyard's default concurrencyPerDestination. */
export const CONNECTIONS_PER_DESTINATION = 64;
/** The platformatic hops: the stream is paused above this many queued records (resumed below half), and a batch takes at most this many. */
const BARE_MAX_QUEUED = 10_000;
const BARE_MAX_BATCH = 2_000;
/** The platformatic render hop: records per send (see its NOTE). */
const SEND_MAX_RECORDS = 1_000;
/**
 * kafkajs is no dependency of the project (the port runs on @platformatic/kafka): the
 * kafkajs hops load it by name at run time. A string variable, so that the type checker
 * does not look for the module.
 */
const KAFKAJS_MODULE: string = 'kafkajs';

/** The baselines' rendering: the webhook body of a track call, in the contract's key order (docs/webhooks.md). */
function renderTrack(value: Buffer | null | undefined): string {
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



export interface BareSpec {
  /** ingest: the gateway's bare floor (the steady row of bench/gateway.ts); the others consume. */
  role: 'single-hop' | 'render' | 'post' | 'ingest';
  /** The Kafka client it runs on; absent: kafkajs (the gateway bench's bare floor, as it was). */
  client?: 'platformatic' | 'kafkajs';
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

/** What the kafkajs hops use of kafkajs (loaded by name: KAFKAJS_MODULE). */
interface KafkajsMessage {
  key?: Buffer | string | null;
  value: Buffer | string | null;
}
interface KafkajsBatchPayload {
  batch: { topic: string; partition: number; messages: { key: Buffer | null; value: Buffer | null }[]; lastOffset(): string };
  resolveOffset(offset: string): void;
  commitOffsetsIfNecessary(offsets: { topics: { topic: string; partitions: { partition: number; offset: string }[] }[] }): Promise<void>;
  heartbeat(): Promise<void>;
}
interface KafkajsProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  send(request: { topic: string; acks: number; messages: KafkajsMessage[] }): Promise<unknown>;
  sendBatch(request: { acks: number; topicMessages: { topic: string; messages: KafkajsMessage[] }[] }): Promise<unknown>;
}
interface KafkajsConsumer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  subscribe(request: { topics: string[]; fromBeginning: boolean }): Promise<void>;
  run(config: { autoCommit: boolean; eachBatchAutoResolve: boolean; partitionsConsumedConcurrently: number; eachBatch(payload: KafkajsBatchPayload): Promise<void> }): Promise<void>;
}
interface KafkajsModule {
  Kafka: new (config: { clientId: string; brokers: string[]; logLevel: number }) => {
    consumer(config: { groupId: string; allowAutoTopicCreation: boolean }): KafkajsConsumer;
    producer(config?: { allowAutoTopicCreation: boolean }): KafkajsProducer;
  };
  logLevel: { NOTHING: number };
}

/** kafkajs, or undefined when it is not installed. */
async function loadKafkajs(): Promise<KafkajsModule | undefined> {
  try {
    return (await import(KAFKAJS_MODULE)) as KafkajsModule;
  } catch {
    return undefined;
  }
}

async function requireKafkajs(): Promise<KafkajsModule> {
  const kafkajs = await loadKafkajs();
  if (kafkajs === undefined) throw new Error('kafkajs is not installed: this bare hop runs on it (npm install --no-save kafkajs@2.2.4, or pick the @platformatic/kafka rows)');
  return kafkajs;
}

/** POSTs with undici, one keep-alive Pool of CONNECTIONS_PER_DESTINATION per URL; a non-2xx answer throws. */
function poster(): { post(url: string, body: string | Buffer): Promise<void>; close(): Promise<void> } {
  const pools = new Map<string, Pool>();
  return {
    async post(url, body) {
      const { origin, pathname } = new URL(url);
      let pool = pools.get(url);
      if (pool === undefined) pools.set(url, (pool = new Pool(origin, { connections: CONNECTIONS_PER_DESTINATION })));
      const res = await pool.request({ path: pathname, method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.body.dump();
      if (res.statusCode < 200 || res.statusCode > 299) throw new Error(`${url} answered ${res.statusCode}`);
    },
    async close() {
      await Promise.all([...pools.values()].map((pool) => pool.close()));
    },
  };
}

/**
 * The bare floor of an HTTP intake: POST /v1/track bodies, each JSON.parsed, stamped with
 * its receipt time when it has none, and written as a track call to `outputs[0]` (one
 * send per request, acks=all, keyed by userId); 200 once the broker has it. Any GET
 * answers 200 (the bench's ready probe). No write key, validation, limits or metrics.
 */
async function runIngest(spec: BareSpec): Promise<void> {
  const { Kafka, logLevel } = await requireKafkajs();
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

/** A kafkajs hop: eachBatch, `partitionsConsumedConcurrently: 3`, commit after the work. */
async function runBareKafkajs(spec: BareSpec): Promise<void> {
  const { Kafka, logLevel } = await requireKafkajs();
  const kafka = new Kafka({ clientId: spec.groupId, brokers: spec.brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: spec.groupId, allowAutoTopicCreation: false });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const http = poster();
  const commitAfter = async ({ batch, resolveOffset, commitOffsetsIfNecessary, heartbeat }: KafkajsBatchPayload) => {
    resolveOffset(batch.lastOffset());
    await commitOffsetsIfNecessary({
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await heartbeat();
  };
  const eachBatch = async (payload: KafkajsBatchPayload) => {
    const { messages, topic } = payload.batch;
    if (spec.role === 'single-hop') {
      await Promise.all(messages.flatMap((message) => {
        const body = renderTrack(message.value);
        return spec.urls.map((url) => http.post(url, body));
      }));
    } else if (spec.role === 'render') {
      const rendered: KafkajsMessage[] = messages.map((message) => ({ key: message.key, value: renderTrack(message.value) }));
      if (rendered.length > 0) await producer.sendBatch({ topicMessages: spec.outputs.map((output) => ({ topic: output, messages: rendered })), acks: -1 });
    } else {
      const url = spec.urls[spec.input.indexOf(topic)]!;
      await Promise.all(messages.map((message) => http.post(url, message.value?.toString('utf8') ?? '')));
    }
    await commitAfter(payload);
  };
  if (spec.role === 'render') await producer.connect();
  await consumer.connect();
  await consumer.subscribe({ topics: spec.input, fromBeginning: true });
  await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, partitionsConsumedConcurrently: CONSUMED_CONCURRENTLY, eachBatch });
  process.once('SIGTERM', () => {
    void (async () => {
      await consumer.disconnect();
      await producer.disconnect();
      await http.close();
      process.exit(0);
    })();
  });
}

/**
 * A @platformatic/kafka hop, as a user would write it on that client: one stream of the
 * group's messages (the library's defaults, from the group's commits, else the
 * earliest); the messages queued as they come (the stream paused above BARE_MAX_QUEUED),
 * taken in batches of what is queued (up to BARE_MAX_BATCH), up to 3 batches at once
 * (the kafkajs hops' partitionsConsumedConcurrently), each batch's last offset per
 * partition committed after its work and the batches before it.
 */
async function runBarePlatformatic(spec: BareSpec): Promise<void> {
  const consumer = new Consumer({ clientId: spec.groupId, bootstrapBrokers: spec.brokers, groupId: spec.groupId, autocommit: false });
  const producer = spec.role === 'render' ? new Producer({ clientId: `${spec.groupId}-producer`, bootstrapBrokers: spec.brokers }) : undefined;
  const http = poster();
  const stream = await consumer.consume({ topics: spec.input, mode: 'committed', fallbackMode: 'earliest' });
  const queue: PlatformaticMessage[] = [];
  let batches = 0;
  let commits: Promise<void> = Promise.resolve();
  let stopping = false;
  const fail = (error: unknown) => {
    // A commit in flight when SIGTERM closed the client fails with "Client is closed":
    // the run is over, not broken.
    if (stopping) return;
    const causes = error instanceof AggregateError ? error.errors.map((cause: unknown) => `\n  cause: ${inspect(cause, { depth: 4 })}`).join('') : '';
    process.stderr.write(`bench e2e bare ${spec.role}: ${(error as Error).stack ?? String(error)}${causes}\n`);
    process.exit(2);
  };
  const work = async (batch: PlatformaticMessage[]) => {
    if (spec.role === 'single-hop') {
      await Promise.all(batch.flatMap((message) => {
        const body = renderTrack(message.value);
        return spec.urls.map((url) => http.post(url, body));
      }));
    } else if (spec.role === 'render') {
      const messages: MessageToProduce[] = [];
      for (const message of batch) {
        const value = Buffer.from(renderTrack(message.value));
        for (const topic of spec.outputs) messages.push({ topic, key: message.key, value });
      }
      // NOTE: at most 1,000 records a request: the records of one input partition share
      // their keys' output partition, and a record batch over 1 MB is refused
      // (MESSAGE_TOO_LARGE; the client does not split a send).
      const sends: Promise<unknown>[] = [];
      for (let start = 0; start < messages.length; start += SEND_MAX_RECORDS) sends.push(producer!.send({ messages: messages.slice(start, start + SEND_MAX_RECORDS), acks: -1 }));
      await Promise.all(sends);
    } else {
      await Promise.all(batch.map((message) => http.post(spec.urls[spec.input.indexOf(message.topic)]!, message.value)));
    }
  };
  const lastOffsets = (batch: PlatformaticMessage[]) => {
    const last = new Map<string, { topic: string; partition: number; offset: bigint; leaderEpoch: number }>();
    for (const { topic, partition, offset, leaderEpoch } of batch) last.set(`${topic}:${partition}`, { topic, partition, offset: offset + 1n, leaderEpoch });
    return [...last.values()];
  };
  const pump = () => {
    while (batches < CONSUMED_CONCURRENTLY && queue.length > 0) {
      const batch = queue.splice(0, BARE_MAX_BATCH);
      if (stream.isPaused() && queue.length < BARE_MAX_QUEUED / 2) stream.resume();
      batches += 1;
      const worked = work(batch);
      // Commits in batch order: each after its batch's work and the commits before it.
      commits = commits.then(() => worked).then(() => consumer.commit({ offsets: lastOffsets(batch) }));
      commits.then(() => {
        batches -= 1;
        pump();
      }, fail);
    }
  };
  let scheduled = false;
  stream.on('data', (message: PlatformaticMessage) => {
    queue.push(message);
    if (queue.length >= BARE_MAX_QUEUED) stream.pause();
    // The messages of one fetch answer arrive together: take them as one batch.
    if (!scheduled) {
      scheduled = true;
      setImmediate(() => {
        scheduled = false;
        pump();
      });
    }
  });
  stream.on('error', fail);
  process.once('SIGTERM', () => {
    stopping = true;
    void (async () => {
      await stream.close().catch(() => undefined);
      await consumer.close(true).catch(() => undefined);
      await producer?.close().catch(() => undefined);
      await http.close();
      process.exit(0);
    })();
  });
}

async function runBare(spec: BareSpec): Promise<void> {
  if (spec.role === 'ingest') return runIngest(spec);
  return spec.client === 'platformatic' ? runBarePlatformatic(spec) : runBareKafkajs(spec);
}

/** Whether kafkajs can be loaded here (the *-kafkajs rows need it). */
export async function kafkajsInstalled(): Promise<boolean> {
  return (await loadKafkajs()) !== undefined;
}

// Run as a process: `node bench/bare/hops.ts '<BareSpec as JSON>'`.
if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  const json = process.argv[2] ?? '{}';
  runBare(JSON.parse(json) as BareSpec).catch((error: unknown) => {
    process.stderr.write(`bench bare hop ${json}: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(2);
  });
}
