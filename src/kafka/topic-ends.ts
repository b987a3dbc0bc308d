// The log ends of many topics, a group's commits of many partitions, and commits with
// metadata for a group nobody is a member of, in a few requests (wire.ts). NOTE: at
// 1,000 destinations the deliverer reads 3,000–5,000 topics: asked per topic, every lag
// sample was 10,000 requests. Here each leader is asked once per end, the coordinator
// once per 2,000 partitions. (@platformatic/kafka's alterConsumerGroupOffsets drops the
// metadata, which holds the tracker's progress.)
import type { PartitionEnds } from '../observability/consumer-lag.js';
import { commitOffsets } from './committer.js';
import { EARLIEST, LATEST, offsetKey, offsetsAt } from './offset-lookup.js';
import { ERROR, KafkaAnswerError } from './wire.js';
import type { Wire } from './wire.js';

export type GroupCommits = { topic: string; partitions: { partition: number; offset: string; metadata: string | null }[] }[];

/** Partitions per OffsetFetch request: far below any request size limit, few requests at 1,000 destinations. */
const PARTITIONS_PER_OFFSET_FETCH = 2_000;

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
  const coordinatorOf = (groupId: string): Promise<number> => wire.coordinator(groupId, `consumer group "${groupId}"`);
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

/** Every partition's ends of each topic: one ListOffsets request per leader and end (offset-lookup.ts). A topic the metadata refused fails the call. */
async function listEnds(wire: Wire, topics: readonly string[]): Promise<Map<string, PartitionEnds[]>> {
  const ends = new Map<string, PartitionEnds[]>();
  if (topics.length === 0) return ends;
  const metadata = await wire.metadata(topics);
  const asked: { topic: string; partition: number }[] = [];
  for (const topic of topics) {
    const found = metadata.topics.get(topic);
    if (found === undefined || found.errorCode !== ERROR.NONE) throw new KafkaAnswerError(found?.errorCode ?? ERROR.UNKNOWN_TOPIC_OR_PARTITION, `reading the metadata of topic "${topic}"`);
    for (const { partition } of found.partitions) asked.push({ topic, partition });
  }
  const at = (timestamp: bigint) => asked.map(({ topic, partition }) => ({ topic, partition, timestamp }));
  // NOTE: read committed: the high watermark of a partition with an open transaction is its last stable offset, so a lag never counts records nobody can read yet.
  const offsets = await offsetsAt(wire, [...at(LATEST), ...at(EARLIEST)], 1, metadata);
  for (const { topic, partition } of asked) {
    const list = ends.get(topic) ?? [];
    list.push({ partition, high: (offsets.get(offsetKey(topic, partition, LATEST)) ?? 0n).toString(), low: (offsets.get(offsetKey(topic, partition, EARLIEST)) ?? 0n).toString() });
    ends.set(topic, list);
  }
  return ends;
}
