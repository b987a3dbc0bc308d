// One key's records in a window of time, read without a consumer group (`switchyard
// trace`, the router's dedupe read-back): the partition the key's hash picks in each
// topic (as every producer of the port hashes it), the offsets at the window's bounds
// (ListOffsets by timestamp), and a read of just that partition between them. Nothing
// is written to the cluster.
import { compatibilityPartitioner } from '@platformatic/kafka';
import type { KafkaClient } from './client.js';
import { decodeRecords } from './fetcher.js';
import { EARLIEST, LATEST, offsetKey, offsetsAt } from './offset-lookup.js';
import type { RecordHeaders } from './records.js';
import { ERROR, KafkaAnswerError, Wire } from './wire.js';

/** A record as a read gives it, here and in the scans of src/delivery/dlq/scan-topic.ts. */
export interface ScannedRecord {
  partition: number;
  offset: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeaders | undefined;
  /** The record's Kafka timestamp, epoch ms as a decimal string. */
  timestamp: string;
}

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

/** Read committed (docs/kafka.md#transactions): a record of an open or aborted transaction never counts; the log's end is the last stable offset. */
const ISOLATION = 1;

/** Bytes of one fetch (one partition): a window of 100,000 records in a few dozen requests, each answer decoded in one turn (docs/benchmarks.md#figures-behind-the-code). */
const PARTITION_FETCH_BYTES = 4 * 1024 * 1024;

/** Partitions read at once: the broker serves one while another's answer decodes; few, not to flood the broker. */
const READS_AT_ONCE = 4;

/** Answers in a row without a record below the end, before a partition is given up (an aborted transaction's records, a compacted tail). */
const EMPTY_ANSWERS_TO_GIVE_UP = 3;

export function createKeyReader(client: KafkaClient): KeyReader {
  const wire = new Wire(client.settings, client.clientId);
  const leadersOf = async (items: readonly { topic: string; partition: number }[]) => {
    const metadata = await wire.metadata([...new Set(items.map((i) => i.topic))]);
    return items.map((item) => {
      const leader = metadata.topics.get(item.topic)?.partitions.find((p) => p.partition === item.partition)?.leader ?? -1;
      if (leader < 0) throw new Error(`partition ${item.partition} of topic "${item.topic}" has no leader right now (a broker restarting?); run it again in a moment`);
      return leader;
    });
  };
  return {
    ranges: (asks) => rangesOf(wire, asks),
    async read(ranges, key) {
      const leaders = await leadersOf(ranges);
      const results: KeyRecords[] = [];
      let next = 0;
      const reader = async () => {
        while (next < ranges.length) {
          const i = next++;
          results[i] = await readRange(wire, leaders[i]!, ranges[i]!, key);
        }
      };
      await Promise.all(Array.from({ length: Math.min(READS_AT_ONCE, ranges.length) }, reader));
      return results;
    },
    async close() {
      await wire.close();
    },
  };
}

/** The offsets at each window's bounds, the log start and the log end (offset-lookup.ts). */
async function rangesOf(wire: Wire, asks: readonly KeyWindowAsk[]): Promise<KeyRange[]> {
  const stamps = (ask: KeyWindowAsk) => [EARLIEST, LATEST, BigInt(ask.sinceMs), ...(ask.untilMs === undefined ? [] : [BigInt(ask.untilMs)])];
  const offsets = await offsetsAt(wire, asks.flatMap((ask) => stamps(ask).map((timestamp) => ({ topic: ask.topic, partition: ask.partition, timestamp }))), ISOLATION);
  return asks.map((ask) => {
    const at = (timestamp: bigint) => offsets.get(offsetKey(ask.topic, ask.partition, timestamp)) ?? -1n;
    const high = at(LATEST);
    const logStart = at(EARLIEST);
    // NOTE: -1 from a timestamp means no record at or after it: the window starts (or ends) at the log end.
    const upTo = (timestamp: number | undefined) => {
      if (timestamp === undefined) return high;
      const offset = at(BigInt(timestamp));
      return offset < 0n ? high : offset;
    };
    const end = upTo(ask.untilMs);
    const start = upTo(ask.sinceMs);
    return { topic: ask.topic, partition: ask.partition, logStart, start: start < logStart ? logStart : start, end };
  });
}

/** Fetches one range from where it got to, until it reached its end. */
async function readRange(wire: Wire, nodeId: number, range: KeyRange, key: Buffer | null): Promise<KeyRecords> {
  const result: KeyRecords = { range, records: [], scanned: 0, firstTimestampMs: undefined };
  const { topic, partition, end } = range;
  let next = range.start;
  let empty = 0;
  while (next < end && empty < EMPTY_ANSWERS_TO_GIVE_UP) {
    const answered = await wire.fetchOne(nodeId, topic, partition, next, PARTITION_FETCH_BYTES);
    if (answered === undefined || answered.errorCode !== ERROR.NONE) {
      if (answered !== undefined && answered.errorCode !== ERROR.OFFSET_OUT_OF_RANGE) throw new KafkaAnswerError(answered.errorCode, `reading ${topic} partition ${partition}`);
      empty += 1;
      continue;
    }
    // Control records are left out, their offsets passed.
    const decoded = decodeRecords(topic, partition, next, answered, ISOLATION === 1);
    const moved = decoded.next > next;
    for (const r of decoded.records) {
      const offset = BigInt(r.offset);
      if (offset >= end) break;
      result.firstTimestampMs ??= Number(r.timestamp);
      result.scanned += 1;
      if (key === null || (r.key !== null && r.key.equals(key))) {
        result.records.push({ partition, offset, key: r.key, value: r.value, headers: r.headers as RecordHeaders | undefined, timestamp: r.timestamp });
      }
    }
    next = decoded.next > end ? end : decoded.next;
    empty = moved ? 0 : empty + 1;
  }
  return result;
}
