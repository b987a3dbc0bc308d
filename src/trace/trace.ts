// `switchyard trace` and `GET /v1/trace` (docs/follow-a-message.md): what happened to each
// of a user's calls, per destination, and why, read from the topics a call goes through.
// Every topic of a user's journey is keyed by the user, so a trace reads one partition of
// each (src/kafka/key-scan.ts), over the window asked: the user's calls and invalid
// calls, then the records of those calls in each destination's topic, retry tiers and
// dead letters, and the deliverer group's commits of those partitions. It writes nothing.
import { KafkaUnavailableError } from '../errors.js';
import type { Config } from '../config/schema.js';
import { retryPolicyOfId } from '../config/retry-policy.js';
import type { ConfigStore } from '../config/store.js';
import { delivererGroupId } from '../delivery/deliverer-service.js';
import { destinationTopics } from '../delivery/destination-topics.js';
import { createAdmin, createKeyReader, isKafkaClientError, partitionOfKey } from '../kafka/index.js';
import type { KafkaAdmin, KafkaClient, KeyReader, KeyRecords } from '../kafka/index.js';
import { compileRoutingTable } from '../router/routing-table.js';
import { stagesByMessage } from './delivery-stages.js';
import type { PartitionCommit, ReadTopic } from './delivery-stages.js';
import { destinationState } from './destination-state.js';
import type { DeliveryStage } from './destination-state.js';
import { traceDocument, traceMessage } from './trace-document.js';
import type { TraceDocument } from './trace-document.js';
import type { TraceQuery } from './trace-query.js';
import { NOT_CONNECTED, tracedCalls } from './traced-calls.js';
import type { TracedCall, Window } from './traced-calls.js';
import { retentionNote } from './trace-notes.js';
import { createTopology } from '../runtime/topology.js';
import type { TopicNames } from '../runtime/topics.js';

export interface TraceDeps {
  /** The filter reasons come from this config's rules as it is now (the running config, in a daemon). */
  config: Pick<ConfigStore, 'current'>;
  kafka: KafkaClient;
}

export interface TraceOptions {
  /** The trace's "now": the end of an open window. */
  nowMs?: number;
  /** Fails with KafkaUnavailableError when the cluster has not answered its first request by then (the broker not answering). Default 15 s. */
  connectTimeoutMs?: number;
}

export interface TraceResult {
  document: TraceDocument;
  /** What a person should know about the answer: a window cut short by retention, topics that do not exist. */
  notes: string[];
  /** Records read in all (every user's, in the partitions read). */
  scanned: number;
}

/**
 * NOTE: the Kafka clients retry a broker that refuses connections for about half a minute
 * (src/kafka/platformatic-client.ts); a person waiting on a trace is
 * told sooner. Reads after the first answer are not timed: a long window takes as long as it
 * takes, each request within the client's request timeout.
 */
const DEFAULT_CONNECT_TIMEOUT_MS = 15_000;

/** The trace of `query`'s calls; throws KafkaUnavailableError when Kafka does not answer. */
export async function traceUser(deps: TraceDeps, query: TraceQuery, options: TraceOptions = {}): Promise<TraceResult> {
  const config = deps.config.current();
  const nowMs = options.nowMs ?? Date.now();
  const admin = createAdmin(deps.kafka);
  let reader: KeyReader | undefined;
  try {
    const existing = await within(
      options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      admin.connect().then(() => admin.listTopics()),
    );
    reader = createKeyReader(deps.kafka);
    return await readTrace({ config, admin, reader, query, nowMs, existing: new Set(existing) });
  } catch (error) {
    throw unavailable(error, config);
  } finally {
    await reader?.close().catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}

/** `promise`, or KafkaUnavailableError when it has not settled within `ms`. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  // NOTE: after the deadline the connect goes on until the admin is disconnected; its failure then is nobody's.
  promise.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new KafkaUnavailableError(`Kafka did not answer within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Kafka client's error (or the deadline) as one that names the brokers asked and what to check. */
function unavailable(error: unknown, config: Config): unknown {
  if (!(error instanceof KafkaUnavailableError) && !isKafkaClientError(error)) return error;
  const brokers = config.kafka.brokers.join(',');
  return new KafkaUnavailableError(
    `${(error as Error).message} (Kafka at ${brokers}: check kafka.brokers or $KAFKA_BROKERS and that the broker is up, then trace again)`,
    { cause: error },
  );
}

interface TraceRun {
  config: Config;
  admin: KafkaAdmin;
  reader: KeyReader;
  query: TraceQuery;
  nowMs: number;
  /** The topics that exist. */
  existing: ReadonlySet<string>;
}

async function readTrace(run: TraceRun): Promise<TraceResult> {
  const { config, query, nowMs } = run;
  const names = createTopology(config.kafka.topicPrefix).names;
  const key = Buffer.from(query.who.id, 'utf8');
  const notes: string[] = [];
  const window: Window = { sinceMs: query.sinceMs, untilMs: query.untilMs ?? Number.POSITIVE_INFINITY };

  const callReads = await readKey(run, key, [names.calls, names.callsInvalid], query.sinceMs, query.untilMs, notes);
  const readOf = (topic: string) => callReads.find((r) => r.range.topic === topic);
  let calls = await tracedCalls(
    {
      calls: { topic: names.calls, records: readOf(names.calls)?.records ?? [] },
      invalid: { topic: names.callsInvalid, records: readOf(names.callsInvalid)?.records ?? [] },
    },
    compileRoutingTable(config, names),
    window,
    nowMs,
  );
  if (query.messageId !== undefined) calls = calls.filter((c) => c.messageId === query.messageId);

  const routed = calls.filter((c) => c.invalid === undefined);
  const { stages, scanned } = await readDestinations(run, key, routed, names, notes);
  const messages = calls.map((call) =>
    traceMessage(
      call,
      call.routes.map((route) => destinationState(route.id, route.verdict, (call.messageId === null ? undefined : stages.get(route.id)?.get(call.messageId)) ?? [])),
    ),
  );
  const document = traceDocument(query.who, { sinceMs: query.sinceMs, untilMs: query.untilMs ?? nowMs }, messages);
  return { document, notes, scanned: scanned + callReads.reduce((n, r) => n + r.scanned, 0) };
}

/** Reads the key's partition of each topic that exists over the window; notes the topics that do not, and windows cut by retention. */
async function readKey(
  run: TraceRun,
  key: Buffer,
  topics: readonly string[],
  sinceMs: number,
  untilMs: number | undefined,
  notes: string[],
): Promise<KeyRecords[]> {
  const present = topics.filter((topic) => run.existing.has(topic));
  for (const topic of topics) if (!run.existing.has(topic)) notes.push(`topic ${topic} does not exist (nothing was written to it yet, or kafka.topicPrefix is not the deployment's)`);
  if (present.length === 0) return [];
  const counts = await run.admin.partitionCounts(present);
  const asks = present.map((topic) => ({ topic, partition: partitionOfKey(key, counts.get(topic) ?? 1), sinceMs, untilMs }));
  const reads = await run.reader.read(await run.reader.ranges(asks), key);
  for (const read of reads) {
    const note = retentionNote(read, sinceMs);
    if (note !== undefined) notes.push(note);
  }
  return reads;
}

/** Each destination of the routed calls: the stages of each message id in its topics. */
async function readDestinations(
  run: TraceRun,
  key: Buffer,
  routed: readonly TracedCall[],
  names: TopicNames,
  notes: string[],
): Promise<{ stages: Map<string, Map<string, DeliveryStage[]>>; scanned: number }> {
  // NOTE: a destination the call's source does not feed is not read: it is `not_connected` whatever it holds.
  const ids = [...new Set(routed.flatMap((c) => c.routes.filter((r) => r.verdict.routed || r.verdict.reason !== NOT_CONNECTED).map((r) => r.id)))];
  if (ids.length === 0) return { stages: new Map(), scanned: 0 };
  const { config, existing } = run;
  // Every other destination's topics, so that an id such as `a.retry.1m` is not taken for a tier of `a`.
  const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
  const topicList = [...existing]; // one list for every destination: indexed once (destination-topics.ts)
  const plan = ids.map((id) => destinationTopics(names, id, retryPolicyOfId(config, id).tiers, topicList, taken));
  const where = new Map<string, DeliveryStage['where']>();
  for (const topics of plan) {
    where.set(topics.main, 'delivery');
    for (const retry of topics.retries) where.set(retry.topic, 'retry');
    where.set(topics.dlq, 'dead_letter');
  }
  const present = [...where.keys()].filter((topic) => existing.has(topic));
  const counts = await run.admin.partitionCounts(present);
  const partitionOf = (topic: string) => partitionOfKey(key, counts.get(topic) ?? 1);
  // NOTE: the commits first, the log ends after: a record the group finished had its retry
  // or dead letter written before that commit, so within the ends read next.
  const commits = await groupCommits(run, present.filter((topic) => where.get(topic) !== 'dead_letter').map((topic) => ({ topic, partitions: [partitionOf(topic)] })));
  // The router stamps its records with the receipt time: none is older than the oldest call.
  const sinceMs = routed.reduce((oldest, c) => Math.min(oldest, c.receivedAtMs), Number.POSITIVE_INFINITY);
  const reads = await readKey(run, key, [...where.keys()], sinceMs, undefined, notes);
  const stages = new Map<string, Map<string, DeliveryStage[]>>();
  plan.forEach((topics, i) => {
    const mine = [topics.main, ...topics.retries.map((r) => r.topic), topics.dlq];
    const read: ReadTopic[] = reads
      .filter((r) => mine.includes(r.range.topic))
      .map((r) => ({ where: where.get(r.range.topic)!, records: r.records, commit: commits.get(r.range.topic) }));
    stages.set(ids[i]!, stagesByMessage(read));
  });
  return { stages, scanned: reads.reduce((n, r) => n + r.scanned, 0) };
}

/** The deliverer group's commit of each partition asked (one partition per topic). */
async function groupCommits(run: TraceRun, partitions: { topic: string; partitions: number[] }[]): Promise<Map<string, PartitionCommit>> {
  const group = delivererGroupId(run.config);
  const { admin } = run;
  const found =
    admin.committedOffsetsOf !== undefined
      ? await admin.committedOffsetsOf(group, partitions)
      : await admin.committedOffsets(
          group,
          partitions.map((p) => p.topic),
        );
  const commits = new Map<string, PartitionCommit>();
  for (const { topic, partitions: ps } of found) {
    const wanted = partitions.find((p) => p.topic === topic)?.partitions[0];
    const commit = ps.find((p) => p.partition === wanted);
    if (commit !== undefined) commits.set(topic, { offset: commit.offset, metadata: commit.metadata });
  }
  return commits;
}
