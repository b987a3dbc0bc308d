import type { Admin } from './client.js';

export interface TopicSpec {
  topic: string;
  compacted?: boolean;
}

/**
 * Creates the topics that do not exist yet. Existing topics are left alone
 * (their partition count is the operator's business once created).
 */
export async function ensureTopics(
  admin: Admin,
  specs: TopicSpec[],
  options: { partitions: number; replicationFactor: number },
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((spec) => ({
      topic: spec.topic,
      numPartitions: options.partitions,
      replicationFactor: options.replicationFactor,
      configEntries: spec.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
    })),
  });
  return missing.map((spec) => spec.topic);
}
