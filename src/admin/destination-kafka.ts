// What the Kafka topics say of each destination, for the console's destinations view
// (docs/admin-api.md#get-v1destinations): the deliverer group's lag on its delivery topic
// and on each retry tier (the retry backlog), and its dead letters, kept and not yet
// replayed. Every pod reads the same, whatever its role. Reads only: offsets and commits,
// no records.
import { retryPolicyOf } from '../config/retry-policy.js';
import type { Config } from '../config/schema.js';
import { destinationTopics } from '../delivery/destination-topics.js';
import { readReplayLedgers, replayGroups } from '../delivery/dlq/replay.js';
import type { ReplayLedger } from '../delivery/dlq/replay-ledger.js';
import type { KafkaAdmin } from '../kafka/index.js';
import { topicLag } from '../observability/consumer-lag.js';
import type { CommittedOffset, PartitionEnds } from '../observability/consumer-lag.js';
import type { KafkaFigures } from './destination-health.js';
import { delivererGroupId } from '../runtime/group-ids.js';
import { createTopology } from '../runtime/topology.js';

/** Each configured destination's figures; a topic that does not exist yet counts as empty. */
export async function readKafkaFigures(admin: KafkaAdmin, config: Config): Promise<Map<string, KafkaFigures>> {
  const existing = await admin.listTopics();
  const present = new Set(existing);
  const { names } = createTopology(config.kafka.topicPrefix);
  const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
  const plans = config.destinations.map((d) => ({ id: d.id, topics: destinationTopics(names, d.id, retryPolicyOf(config, d).tiers, existing, taken) }));
  const consumed = plans.flatMap(({ topics }) => [topics.main, ...topics.retries.map((r) => r.topic)]).filter((t) => present.has(t));
  const dlqs = plans.map(({ topics }) => topics.dlq).filter((t) => present.has(t));
  const ends = await partitionEnds(admin, [...consumed, ...dlqs]);
  const commits = await groupCommits(admin, delivererGroupId(config), consumed, ends);
  const lagOf = (topic: string) => (present.has(topic) ? topicLag(ends.get(topic) ?? [], commits.get(topic) ?? []) : 0);
  const figures = new Map<string, KafkaFigures>();
  for (const { id, topics } of plans) {
    const deadLetters = present.has(topics.dlq) ? await deadLetterCounts(admin, replayGroups(config, id), topics.dlq, ends.get(topics.dlq) ?? []) : { kept: 0, notReplayed: 0 };
    figures.set(id, {
      consumerLag: lagOf(topics.main),
      retryBacklog: topics.retries.filter((r) => !r.leftover || lagOf(r.topic) > 0).map((r) => ({ tier: r.tier.name, waiting: lagOf(r.topic) })),
      deadLetters,
    });
  }
  return figures;
}

async function partitionEnds(admin: KafkaAdmin, topics: readonly string[]): Promise<Map<string, PartitionEnds[]>> {
  if (topics.length === 0) return new Map();
  if (admin.partitionEndsOf !== undefined) return admin.partitionEndsOf(topics);
  return new Map(await Promise.all(topics.map(async (topic) => [topic, await admin.partitionEnds(topic)] as const)));
}

async function groupCommits(admin: KafkaAdmin, groupId: string, topics: readonly string[], ends: ReadonlyMap<string, PartitionEnds[]>): Promise<Map<string, CommittedOffset[]>> {
  if (topics.length === 0) return new Map();
  const found =
    admin.committedOffsetsOf !== undefined
      ? await admin.committedOffsetsOf(
          groupId,
          topics.map((topic) => ({ topic, partitions: (ends.get(topic) ?? []).map((e) => e.partition) })),
        )
      : await admin.committedOffsets(groupId, topics);
  return new Map(found.map((t) => [t.topic, t.partitions]));
}

/**
 * Letters kept (between the log's start and end) and, from the replay group's ledger,
 * those no replay has moved. NOTE: the ledger is read only where letters are kept: an
 * empty dead-letter topic costs no request.
 */
async function deadLetterCounts(admin: KafkaAdmin, groups: readonly string[], dlq: string, ends: readonly PartitionEnds[]): Promise<KafkaFigures['deadLetters']> {
  const kept = ends.reduce((sum, end) => sum + Number(BigInt(end.high) - BigInt(end.low)), 0);
  if (kept === 0) return { kept: 0, notReplayed: 0 };
  const { ledgers, highs } = await readReplayLedgers(admin, groups, dlq);
  let notReplayed = 0;
  for (const [partition, high] of highs) {
    const ledger = ledgers.get(partition);
    if (ledger !== undefined) notReplayed += notDoneBelow(ledger, high);
  }
  return { kept, notReplayed };
}

/** Offsets below `high` the ledger has not dealt with. */
export function notDoneBelow(ledger: ReplayLedger, high: bigint): number {
  if (high <= ledger.position) return 0;
  let open = high - ledger.position;
  for (const [from, to] of ledger.done) {
    const end = to < high - 1n ? to : high - 1n;
    if (end >= from) open -= end - from + 1n;
  }
  return Number(open);
}
