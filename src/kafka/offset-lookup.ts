// Offsets by timestamp (ListOffsets to each partition's leader), for the whole port:
// where a consumer engine starts a partition that has no commit, where a fetch position
// removed by retention moves to, what scans read up to, the log ends the lag sampler
// reads, and where a trace's window starts and ends.
import { ERROR, KafkaAnswerError } from './wire.js';
import type { ClusterMetadata, Wire } from './wire.js';

export interface PartitionOffset {
  topic: string;
  partition: number;
  offset: bigint;
}

/** ListOffsets timestamps: the first offset the log holds, and the offset after its last record (with isolation 1, the last stable offset). */
export const EARLIEST = -2n;
export const LATEST = -1n;

/** One partition asked at one timestamp: epoch ms, EARLIEST or LATEST. */
export interface OffsetAsk {
  topic: string;
  partition: number;
  timestamp: bigint;
}

/** The key of an answer of offsetsAt. */
export function offsetKey(topic: string, partition: number, timestamp: bigint): string {
  return `${timestamp}/${partition}:${topic}`;
}

/**
 * The offset of each ask (-1 for a timestamp after the last record), by offsetKey: one
 * request per leader and distinct timestamp, all at once. `metadata`: the caller's,
 * when it read it already. Throws for a partition without a leader (retriable) or an
 * error answer; a caller tries again.
 */
export async function offsetsAt(wire: Wire, asks: readonly OffsetAsk[], isolation: 0 | 1, metadata?: ClusterMetadata): Promise<Map<string, bigint>> {
  const found = new Map<string, bigint>();
  if (asks.length === 0) return found;
  const { topics } = metadata ?? (await wire.metadata([...new Set(asks.map((a) => a.topic))]));
  const requests = new Map<string, { leader: number; timestamp: bigint; topics: Map<string, Set<number>> }>();
  for (const { topic, partition, timestamp } of asks) {
    const leader = topics.get(topic)?.partitions.find((p) => p.partition === partition)?.leader ?? -1;
    if (leader < 0) throw new KafkaAnswerError(ERROR.LEADER_NOT_AVAILABLE, `partition ${partition} of topic "${topic}" has no leader right now (a broker restarting?)`);
    let request = requests.get(`${leader}/${timestamp}`);
    if (request === undefined) requests.set(`${leader}/${timestamp}`, (request = { leader, timestamp, topics: new Map() }));
    const partitions = request.topics.get(topic);
    if (partitions === undefined) request.topics.set(topic, new Set([partition]));
    else partitions.add(partition);
  }
  await Promise.all(
    [...requests.values()].map(async ({ leader, timestamp, topics: asked }) => {
      const answer = await wire.listOffsets(leader, isolation, [...asked].map(([topic, partitions]) => ({ topic, partitions: [...partitions].map((partition) => ({ partition, timestamp })) })));
      for (const t of answer.topics) {
        for (const p of t.partitions) {
          if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `listing the offsets of partition ${p.partitionIndex} of topic "${t.name}"`);
          found.set(offsetKey(t.name, p.partitionIndex, timestamp), p.offset);
        }
      }
    }),
  );
  return found;
}

/** The first offset each partition's log holds (`earliest`), or the offset after its last record (`latest`). */
export async function earliestOrLatest(wire: Wire, partitions: readonly { topic: string; partition: number }[], which: 'earliest' | 'latest', isolation: 0 | 1 = 0): Promise<PartitionOffset[]> {
  const timestamp = which === 'earliest' ? EARLIEST : LATEST;
  const found = await offsetsAt(wire, partitions.map(({ topic, partition }) => ({ topic, partition, timestamp })), isolation);
  return partitions.flatMap(({ topic, partition }) => {
    const offset = found.get(offsetKey(topic, partition, timestamp));
    return offset === undefined ? [] : [{ topic, partition, offset }];
  });
}
