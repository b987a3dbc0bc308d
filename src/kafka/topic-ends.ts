// The log ends of many topics, a group's commits of many partitions, and commits with
// metadata for a group nobody is a member of, in a few requests (wire.ts). NOTE: at
// 1,000 destinations the deliverer reads 3,000–5,000 topics: asked per topic, every lag
// sample was 10,000 requests. Here each leader is asked once per end, the coordinator
// once per 2,000 partitions. (@platformatic/kafka's alterConsumerGroupOffsets drops the
// metadata, which holds the tracker's progress.)
import type { PartitionEnds } from '../observability/consumer-lag.js';
import { commitOffsets } from './committer.js';
import { ERROR, KafkaAnswerError } from './wire.js';
import type { Wire } from './wire.js';

export type GroupCommits = { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];

/** Partitions per OffsetFetch request: far below any request size limit, few requests at 1,000 destinations. */
const PARTITIONS_PER_OFFSET_FETCH = 2_000;

/** ListOffsets timestamps: the next offset to be written (the high watermark), and the log's start. */
const LATEST = -1n;
const EARLIEST = -2n;

/** NOTE: read committed: the high watermark of a partition with an open transaction is its last stable offset, so a lag never counts records nobody can read yet. */
const READ_COMMITTED = 1;

export interface TopicEnds {
  /** Every partition's ends of each topic. NOTE: a topic the broker does not know fails the whole call (retriable): callers ask for topics they made. */
  partitionEnds(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
  /** The group's commits (offset, metadata) of exactly these partitions, with no metadata request. */
  committedOffsets(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<GroupCommits>;
  /**
   * Commits offsets and metadata for a group that has no member (generation -1: a simple
   * consumer's commit). The broker refuses it while the group has members (a
   * KafkaAnswerError of type UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or REBALANCE_IN_PROGRESS).
   */
  commitOffsets(groupId: string, commits: GroupCommits): Promise<void>;
}

export function createTopicEnds(wire: Wire): TopicEnds {
  const coordinatorOf = async (groupId: string): Promise<number> => {
    const found = await wire.findCoordinator(groupId);
    if ('errorCode' in found) throw new KafkaAnswerError(found.errorCode, `finding the coordinator of consumer group "${groupId}"`);
    return found.nodeId;
  };
  return {
    partitionEnds: (topics) => listEnds(wire, topics),
    async committedOffsets(groupId, partitions) {
      const nodeId = await coordinatorOf(groupId);
      const commits: GroupCommits = [];
      let chunk: { topic: string; partitions: number[] }[] = [];
      let size = 0;
      const send = async () => {
        if (chunk.length === 0) return;
        const answer = await wire.offsetFetch(nodeId, groupId, chunk);
        chunk = [];
        size = 0;
        // NOTE: OffsetFetch v6 asks for one group: its answer is the top-level topics and errorCode.
        if (answer.errorCode !== ERROR.NONE) throw new KafkaAnswerError(answer.errorCode, `reading the commits of consumer group "${groupId}"`);
        for (const t of answer.topics) {
          const list: GroupCommits[number]['partitions'] = [];
          for (const p of t.partitions) {
            if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `reading the commit of consumer group "${groupId}" on partition ${p.partitionIndex} of topic "${t.name}"`);
            list.push({ partition: p.partitionIndex, offset: p.committedOffset.toString(), metadata: p.metadata || null });
          }
          commits.push({ topic: t.name, partitions: list });
        }
      };
      for (const { topic, partitions: ps } of partitions) {
        if (ps.length === 0) continue;
        chunk.push({ topic, partitions: [...ps] });
        size += ps.length;
        if (size >= PARTITIONS_PER_OFFSET_FETCH) await send();
      }
      await send();
      return commits;
    },
    async commitOffsets(groupId, commits) {
      const entries = commits.flatMap(({ topic, partitions }) => partitions.map((p) => ({ topic, ...p })));
      if (entries.length === 0) return;
      await commitOffsets(wire, groupId, { coordinator: await coordinatorOf(groupId), id: -1, memberId: '' }, entries);
    },
  };
}

/** Every partition's ends of each topic: one ListOffsets request per leader and end. */
async function listEnds(wire: Wire, topics: readonly string[]): Promise<Map<string, PartitionEnds[]>> {
  const ends = new Map<string, PartitionEnds[]>();
  if (topics.length === 0) return ends;
  const { topics: found } = await wire.metadata(topics);
  const asks = [...partitionsByLeader(topics, found)].map(async ([nodeId, asked]) => {
    const ask = (timestamp: bigint) => wire.listOffsets(nodeId, READ_COMMITTED, asked.map(({ topic, partitions }) => ({ topic, partitions: partitions.map((partition) => ({ partition, timestamp })) })));
    const [high, low] = await Promise.all([ask(LATEST), ask(EARLIEST)]);
    const lows = new Map<string, Map<number, bigint>>();
    for (const t of low.topics) {
      const byPartition = new Map<number, bigint>();
      for (const p of t.partitions) {
        if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `listing the log start of partition ${p.partitionIndex} of topic "${t.name}"`);
        byPartition.set(p.partitionIndex, p.offset);
      }
      lows.set(t.name, byPartition);
    }
    for (const t of high.topics) {
      const list = ends.get(t.name) ?? [];
      for (const p of t.partitions) {
        if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `listing the log end of partition ${p.partitionIndex} of topic "${t.name}"`);
        list.push({ partition: p.partitionIndex, high: p.offset.toString(), low: (lows.get(t.name)?.get(p.partitionIndex) ?? 0n).toString() });
      }
      ends.set(t.name, list);
    }
  });
  await Promise.all(asks);
  return ends;
}

/** Each leader's share of `topics`; a topic the metadata refused, or a partition without a leader yet, fails the call (ensure-topics.ts waits on both). */
function partitionsByLeader(
  topics: readonly string[],
  found: ReadonlyMap<string, { errorCode: number; partitions: readonly { partition: number; leader: number }[] }>,
): Map<number, { topic: string; partitions: number[] }[]> {
  const byLeader = new Map<number, { topic: string; partitions: number[] }[]>();
  for (const topic of topics) {
    const metadata = found.get(topic);
    if (metadata === undefined) throw new KafkaAnswerError(ERROR.UNKNOWN_TOPIC_OR_PARTITION, `reading the metadata of topic "${topic}"`);
    if (metadata.errorCode !== ERROR.NONE) throw new KafkaAnswerError(metadata.errorCode, `reading the metadata of topic "${topic}"`);
    const perLeader = new Map<number, number[]>();
    for (const { partition, leader } of metadata.partitions) {
      if (leader < 0) throw new Error(`partition ${partition} of topic "${topic}" has no leader right now; its log ends are asked again at the next sample`);
      perLeader.set(leader, [...(perLeader.get(leader) ?? []), partition]);
    }
    for (const [leader, partitions] of perLeader) {
      const list = byLeader.get(leader);
      if (list === undefined) byLeader.set(leader, [{ topic, partitions }]);
      else list.push({ topic, partitions });
    }
  }
  return byLeader;
}
