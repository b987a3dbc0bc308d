// The consumer engine's committer: a group's offsets with their metadata (offset-progress.ts's
// `sy1:` runs), one OffsetCommit per call, for the generation that finished the records:
// a member whose generation ended can never move the group's position (the broker
// answers ILLEGAL_GENERATION). Also the read of a group's commits.
import type { Generation } from './membership.js';
import { byTopic } from './partition-key.js';
import { ERROR, KafkaAnswerError } from './wire.js';
import type { Wire } from './wire.js';

export interface OffsetCommitEntry {
  topic: string;
  partition: number;
  /** The first offset not finished (what the group resumes from). */
  offset: string;
  metadata: string | null;
}

export interface CommittedEntry {
  partition: number;
  /** -1 when the group never committed the partition. */
  offset: string;
  metadata: string | null;
}

/**
 * Commits `entries` for `generation` (undefined: for a group nobody is a member of, as
 * the upgrade from older group names does). Throws KafkaAnswerError for the first
 * partition the broker refused (its `type` names the code: isGenerationLost, isRetriable).
 */
export async function commitOffsets(wire: Wire, groupId: string, generation: Pick<Generation, 'id' | 'memberId' | 'coordinator'> | { coordinator: number; id: -1; memberId: '' }, entries: readonly OffsetCommitEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const topics = byTopic(entries, (e) => ({ partition: e.partition, offset: BigInt(e.offset), metadata: e.metadata }));
  const answer = await wire.offsetCommit(generation.coordinator, groupId, generation.id, generation.memberId, topics);
  for (const t of answer.topics) {
    for (const p of t.partitions) {
      if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `committing ${t.name} partition ${p.partitionIndex} in consumer group ${groupId}`);
    }
  }
}

/** How long a read of commits waits for pending transactional commits to end; past it the read fails (retriable). */
const UNSTABLE_WAIT_MS = 120_000;
const UNSTABLE_RETRY_MS = 200;

function unstable(answer: Awaited<ReturnType<Wire['offsetFetch']>>): boolean {
  const topics = answer.groups[0]?.topics ?? answer.topics;
  return topics.some((t) => t.partitions.some((p) => p.errorCode === ERROR.UNSTABLE_OFFSET_COMMIT));
}

/** The group's commits (with metadata) of these partitions, in one request to its coordinator (stable ones: see below). */
export async function readCommitted(wire: Wire, coordinator: number, groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: CommittedEntry[] }[]> {
  if (partitions.length === 0) return [];
  let answer = await wire.offsetFetch(coordinator, groupId, partitions, true);
  // NOTE: stable commits only: while a transaction holds a partition's next offset
  // pending (docs/kafka.md#transactions), the broker answers UNSTABLE_OFFSET_COMMIT; the
  // read waits for that transaction to end (committed, aborted, or timed out).
  for (const started = Date.now(); unstable(answer) && Date.now() - started < UNSTABLE_WAIT_MS; ) {
    await new Promise((resolve) => setTimeout(resolve, UNSTABLE_RETRY_MS));
    answer = await wire.offsetFetch(coordinator, groupId, partitions, true);
  }
  const group = answer.groups[0];
  const code = group?.errorCode ?? answer.errorCode;
  if (code !== ERROR.NONE) throw new KafkaAnswerError(code, `reading the commits of consumer group ${groupId}`);
  const topics = group?.topics ?? answer.topics;
  return topics.map((t) => ({
    topic: t.name,
    partitions: t.partitions.map((p) => {
      if (p.errorCode !== ERROR.NONE) throw new KafkaAnswerError(p.errorCode, `reading the commit of ${t.name} partition ${p.partitionIndex} in consumer group ${groupId}`);
      return { partition: p.partitionIndex, offset: p.committedOffset.toString(), metadata: p.metadata ?? null };
    }),
  }));
}
