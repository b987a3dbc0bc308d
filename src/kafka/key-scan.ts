// One key's records in a window of time, read without a consumer group: the partition
// the key's hash picks in each topic (murmur2 with the sign bit masked, as every producer
// of the port, kafkajs and the Java client hash it), the offsets at the window's bounds
// (ListOffsets by timestamp), and a read of just that partition between them. Nothing is
// written to the cluster: no group joins, no commits. `switchyard trace` reads with it
// (src/trace/trace.ts).
import { compatibilityPartitioner } from '@platformatic/kafka';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import type { RawHeaders } from './headers.js';
import type { ScannedRecord } from './scan-topic.js';
import { clusterFactoryOf } from './topic-ends.js';

/** The partition a producer of the port writes `key` to, in a topic of `partitions` partitions. */
export function partitionOfKey(key: Buffer, partitions: number): number {
  return compatibilityPartitioner(undefined as never, key) % partitions;
}

/** Where to read in one topic: the key's partition and the window, in epoch ms (`untilMs` open when absent). */
export interface KeyWindowAsk {
  topic: string;
  partition: number;
  sinceMs: number;
  untilMs?: number | undefined;
}

/** The offsets of one window, as the broker answered them. */
export interface KeyRange {
  topic: string;
  partition: number;
  /** The first offset still kept (records below were deleted by retention). */
  logStart: bigint;
  /** The first offset whose timestamp is at or after `sinceMs`; `end` when there is none. */
  start: bigint;
  /** The first offset at or after `untilMs`, else the log end when it was asked. */
  end: bigint;
}

export interface KeyRecords {
  range: KeyRange;
  /** The records whose key is the key, in offset order. */
  records: ScannedRecord[];
  /** Records read in all (every key's). */
  scanned: number;
  /** The timestamp of the first record read (at `range.start`, or just after it), epoch ms. */
  firstTimestampMs: number | undefined;
}

export interface KeyReader {
  /** The offsets of each window (ListOffsets at its bounds, the log start and the log end), asked of each leader at once. */
  ranges(asks: readonly KeyWindowAsk[]): Promise<KeyRange[]>;
  /** Reads each range from `start` to `end`, keeping the records whose key is `key` (every record when `key` is null). */
  read(ranges: readonly KeyRange[], key: Buffer | null): Promise<KeyRecords[]>;
  close(): Promise<void>;
}

/** What the reads need of kafkajs's cluster (2.2.4, pinned; topic-ends.ts says how it is reached). */
interface Cluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  isolationLevel: number;
  findTopicPartitionMetadata(topic: string): { partitionId: number; leader?: number | null }[];
  findBroker(options: { nodeId: number }): Promise<Broker>;
}

interface Broker {
  listOffsets(request: { isolationLevel: number; topics: { topic: string; partitions: { partition: number; timestamp: number }[] }[] }): Promise<{
    responses: { topic: string; partitions: { partition: number; offset: string }[] }[];
  }>;
  fetch(request: {
    isolationLevel: number;
    maxWaitTime: number;
    minBytes: number;
    maxBytes: number;
    topics: { topic: string; partitions: { partition: number; fetchOffset: string; maxBytes: number }[] }[];
  }): Promise<{ responses: { topicName: string; partitions: { partition: number; highWatermark: string; messages: FetchedMessage[] }[] }[] }>;
}

interface FetchedMessage {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers?: RawHeaders;
  isControlRecord?: boolean;
}

/** ListOffsets timestamps for the log end and the log start. */
const LATEST = -1;
const EARLIEST = -2;

/**
 * Bytes of one fetch (one partition). NOTE: large, so that a window of 100,000 records
 * takes a few dozen requests, yet each answer is decoded in one piece, so bounded: a
 * trace served on a role's admin port holds that process's event loop for as long as one
 * answer takes to decode (measured: about 60 ms for 4 MB on a loaded 2-core machine).
 */
const PARTITION_FETCH_BYTES = 4 * 1024 * 1024;

/**
 * Partitions read at once. NOTE: more than one, so that the broker can serve one partition
 * while this process decodes another's answer; few, so that a trace over many
 * destinations does not flood the broker. (Reading one partition in pieces side by side
 * was tried: on the trace bench, on a 2-core machine under load, it gained nothing.)
 */
const READS_AT_ONCE = 4;

/** Answers in a row without a record below the end, before a partition is given up (an aborted transaction's records, a compacted tail). */
const EMPTY_ANSWERS_TO_GIVE_UP = 3;

export function createKeyReader(client: KafkaClient): KeyReader {
  const createCluster = clusterFactoryOf(kafkajsOf(client));
  if (createCluster === undefined) throw new Error('reading a key needs the cluster of kafkajs 2.2.4 (the version package.json pins); reinstall the dependencies');
  const cluster = createCluster<Cluster>({ allowAutoTopicCreation: false, metadataMaxAge: 60_000 });
  let connecting: Promise<void> | undefined;
  const connected = async (topics: readonly string[]): Promise<Cluster> => {
    connecting ??= cluster.connect();
    await connecting;
    await cluster.addMultipleTargetTopics([...new Set(topics)]);
    return cluster;
  };
  return {
    async ranges(asks) {
      const c = await connected(asks.map((a) => a.topic));
      const byLeader = groupByLeader(c, asks);
      const answers = await Promise.all([...byLeader].map(async ([nodeId, mine]) => rangesOf(await c.findBroker({ nodeId }), c.isolationLevel, mine)));
      // In the order asked, whatever the leaders.
      const found = new Map(answers.flat().map((range) => [`${range.topic}/${range.partition}`, range]));
      return asks.map((ask) => found.get(`${ask.topic}/${ask.partition}`)!);
    },
    async read(ranges, key) {
      const c = await connected(ranges.map((r) => r.topic));
      const leaders = ranges.map((range) => leaderOf(c, range));
      const results: KeyRecords[] = [];
      let next = 0;
      const reader = async () => {
        while (next < ranges.length) {
          const i = next++;
          results[i] = await readRange(await c.findBroker({ nodeId: leaders[i]! }), c.isolationLevel, ranges[i]!, key);
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, ranges.length) }, reader));
      return results;
    },
    async close() {
      await cluster.disconnect();
    },
  };
}

function leaderOf(cluster: Cluster, item: { topic: string; partition: number }): number {
  const leader = cluster.findTopicPartitionMetadata(item.topic).find((p) => p.partitionId === item.partition)?.leader;
  if (leader === null || leader === undefined || leader < 0) {
    throw new Error(`partition ${item.partition} of topic "${item.topic}" has no leader right now (a broker restarting?); run it again in a moment`);
  }
  return leader;
}

function groupByLeader<T extends { topic: string; partition: number }>(cluster: Cluster, items: readonly T[]): Map<number, T[]> {
  const byLeader = new Map<number, T[]>();
  for (const item of items) {
    const leader = leaderOf(cluster, item);
    byLeader.set(leader, [...(byLeader.get(leader) ?? []), item]);
  }
  return byLeader;
}

/** One ListOffsets request per distinct timestamp, each naming every partition that asks for it. */
async function rangesOf(broker: Broker, isolationLevel: number, asks: readonly KeyWindowAsk[]): Promise<KeyRange[]> {
  const wanted = new Map<number, KeyWindowAsk[]>();
  const want = (timestamp: number, ask: KeyWindowAsk) => wanted.set(timestamp, [...(wanted.get(timestamp) ?? []), ask]);
  for (const ask of asks) {
    want(EARLIEST, ask);
    want(LATEST, ask);
    want(ask.sinceMs, ask);
    if (ask.untilMs !== undefined) want(ask.untilMs, ask);
  }
  const offsets = new Map<string, bigint>(); // `${timestamp}/${topic}/${partition}` → offset (-1: none at or after it)
  await Promise.all(
    [...wanted].map(async ([timestamp, mine]) => {
      const topics = [...new Set(mine.map((a) => a.topic))].map((topic) => ({
        topic,
        partitions: mine.filter((a) => a.topic === topic).map((a) => ({ partition: a.partition, timestamp })),
      }));
      const answer = await broker.listOffsets({ isolationLevel, topics });
      for (const t of answer.responses) for (const p of t.partitions) offsets.set(`${timestamp}/${t.topic}/${p.partition}`, BigInt(p.offset));
    }),
  );
  return asks.map((ask) => {
    const at = (timestamp: number) => offsets.get(`${timestamp}/${ask.topic}/${ask.partition}`) ?? -1n;
    const high = at(LATEST);
    const logStart = at(EARLIEST);
    // NOTE: -1 from a timestamp means no record at or after it: the window starts (or ends) at the log end.
    const upTo = (timestamp: number | undefined) => {
      if (timestamp === undefined) return high;
      const offset = at(timestamp);
      return offset < 0n ? high : offset;
    };
    const end = upTo(ask.untilMs);
    const start = upTo(ask.sinceMs);
    return { topic: ask.topic, partition: ask.partition, logStart, start: start < logStart ? logStart : start, end };
  });
}

interface Progress {
  result: KeyRecords;
  next: bigint;
  empty: number;
}

/** Fetches one range from where it got to, until it reached its end. */
async function readRange(broker: Broker, isolationLevel: number, range: KeyRange, key: Buffer | null): Promise<KeyRecords> {
  const progress: Progress = { result: { range, records: [], scanned: 0, firstTimestampMs: undefined }, next: range.start, empty: 0 };
  const { topic, partition, end } = range;
  while (progress.next < end && progress.empty < EMPTY_ANSWERS_TO_GIVE_UP) {
    const answer = await broker.fetch({
      isolationLevel,
      maxWaitTime: 100,
      minBytes: 1,
      maxBytes: PARTITION_FETCH_BYTES,
      topics: [{ topic, partitions: [{ partition, fetchOffset: progress.next.toString(), maxBytes: PARTITION_FETCH_BYTES }] }],
    });
    const answered = answer.responses.find((t) => t.topicName === topic)?.partitions.find((p) => p.partition === partition);
    if (answered === undefined) progress.empty += 1;
    else take(progress, answered.messages, key);
  }
  return progress.result;
}

/** Keeps the key's records of one partition's answer below the end, and moves the partition on. */
function take(progress: Progress, messages: readonly FetchedMessage[], key: Buffer | null): void {
  const { result } = progress;
  const { end } = result.range;
  let moved = false;
  for (const m of messages) {
    const offset = BigInt(m.offset);
    // A fetch answers whole batches: records before the offset asked for come too.
    if (offset < progress.next) continue;
    if (offset >= end) {
      progress.next = end;
      return;
    }
    progress.next = offset + 1n;
    moved = true;
    if (m.isControlRecord === true) continue;
    result.firstTimestampMs ??= Number(m.timestamp);
    result.scanned += 1;
    if (key === null || (m.key !== null && m.key.equals(key))) {
      result.records.push({ partition: result.range.partition, offset, key: m.key, value: m.value, headers: m.headers, timestamp: m.timestamp });
    }
  }
  progress.empty = moved ? 0 : progress.empty + 1;
}
