import type { Admin } from 'kafkajs';

export interface TopicSpec {
  topic: string;
  compacted?: boolean;
}

// NOTE: right after a create, a busy broker can answer metadata requests for the new
// topics with UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, and kafkajs's own
// wait (createTopics' waitForLeaders) gives up on the first. A produce that races
// the leader election fails with errors kafkajs's bounded retries may not outlast
// (with the idempotent producer we once used it tripped OUT_OF_ORDER_SEQUENCE_NUMBER).
// So the wait for leaders is done here, patiently, until each new partition's leader answers.
const LEADER_WAIT_MS = 30_000;
const LEADER_POLL_MS = 100;

function isRetriable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === true;
}

/**
 * Creates the topics that do not exist yet and waits until every partition of them
 * has a leader. Existing topics are left alone (their partition count is the
 * operator's business once created).
 */
export async function ensureTopics(
  admin: Admin,
  specs: TopicSpec[],
  options: { partitions: number; replicationFactor: number },
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  // Resolves false when another process created them first: fine either way.
  await admin.createTopics({
    waitForLeaders: false,
    topics: missing.map((spec) => ({
      topic: spec.topic,
      numPartitions: options.partitions,
      replicationFactor: options.replicationFactor,
      configEntries: spec.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
    })),
  });
  const topics = missing.map((spec) => spec.topic);
  await waitForLeaders(admin, topics);
  return topics;
}

async function waitForLeaders(admin: Admin, topics: string[]): Promise<void> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  let lastError: unknown;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      const led = found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      if (led) {
        // A leader in the metadata can still refuse requests for a moment (KRaft
        // publishes it before the partition is loaded); asking it for the offsets
        // is the same check a produce would meet.
        for (const topic of topics) await admin.fetchTopicOffsets(topic);
        return;
      }
    } catch (error) {
      if (!isRetriable(error)) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`created topics ${topics.join(', ')} but they have no leader after ${LEADER_WAIT_MS} ms${why}; check the brokers' health`);
    }
    await new Promise((resolve) => setTimeout(resolve, LEADER_POLL_MS));
  }
}
