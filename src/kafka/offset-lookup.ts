// Where partitions begin or end now (ListOffsets to each partition's leader): where a
// consumer engine starts a partition that has no commit, and what scans read up to.
import { ERROR, KafkaAnswerError } from './wire.js';
import type { Wire } from './wire.js';

export interface PartitionOffset {
  topic: string;
  partition: number;
  offset: bigint;
}

const TIMESTAMP = { earliest: -2n, latest: -1n } as const;

/**
 * The first offset each partition's log holds (`earliest`), or the offset after its
 * last record (`latest`; with `isolation` 1, the last stable offset). Throws for a
 * partition without a leader or an error answer (a caller tries again).
 */
export async function earliestOrLatest(wire: Wire, partitions: readonly { topic: string; partition: number }[], which: keyof typeof TIMESTAMP, isolation: 0 | 1 = 0): Promise<PartitionOffset[]> {
  if (partitions.length === 0) return [];
  const metadata = await wire.metadata([...new Set(partitions.map((p) => p.topic))]);
  const byLeader = new Map<number, Map<string, { partition: number; timestamp: bigint }[]>>();
  for (const p of partitions) {
    const leader = metadata.topics.get(p.topic)?.partitions.find((x) => x.partition === p.partition)?.leader ?? -1;
    if (leader < 0) throw new KafkaAnswerError(ERROR.LEADER_NOT_AVAILABLE, `${p.topic} partition ${p.partition} has no leader`);
    let topics = byLeader.get(leader);
    if (topics === undefined) byLeader.set(leader, (topics = new Map()));
    topics.set(p.topic, [...(topics.get(p.topic) ?? []), { partition: p.partition, timestamp: TIMESTAMP[which] }]);
  }
  const answers = await Promise.all(
    [...byLeader].map(([leader, topics]) => wire.listOffsets(leader, isolation, [...topics].map(([topic, list]) => ({ topic, partitions: list })))),
  );
  const found: PartitionOffset[] = [];
  for (const answer of answers) {
    for (const t of answer.topics) {
      for (const p of t.partitions) {
        if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `listing the ${which} offset of ${t.name} partition ${p.partitionIndex}`);
        found.push({ topic: t.name, partition: p.partitionIndex, offset: p.offset });
      }
    }
  }
  return found;
}
