// What the Kafka topics say of each destination, for the console's destinations view
// (docs/admin-api.md#get-v1destinations): the deliverer group's lag on its delivery topic,
// the events waiting in each retry tier (the retry backlog), and its dead letters, kept
// and not yet replayed. Every pod reads the same, whatever its role. The lag is offsets;
// the backlog and the dead letters are records: offsets that hold none (transaction
// markers, aborted records) are left out (record-counts.ts).
import { retryPolicyOf } from '../config/retry-policy.js';
import type { Config } from '../config/schema.js';
import { destinationTopics } from '../delivery/destination-topics.js';
import { readReplayLedgers, replayGroups } from '../delivery/dlq/replay.js';
import type { ReplayLedger } from '../delivery/dlq/replay-ledger.js';
import type { KafkaAdmin } from '../kafka/index.js';
import type { GapReader } from '../observability/record-counts.js';
import { topicLag, waitingSpans } from '../observability/consumer-lag.js';
import type { CommittedOffset, PartitionEnds } from '../observability/consumer-lag.js';
import type { KafkaFigures } from './destination-health.js';
import type { CountRecords, OffsetSpan, RecordCounter } from '../observability/record-counts.js';
import { delivererGroupId } from '../runtime/group-ids.js';
import { createTopology } from '../runtime/topology.js';

/** Each configured destination's figures; a topic that does not exist yet counts as empty. */
export async function readKafkaFigures(kafka: { admin: KafkaAdmin; gaps: GapReader; counter: RecordCounter }, config: Config): Promise<Map<string, KafkaFigures>> {
  const { admin, gaps, counter } = kafka;
  const existing = await admin.listTopics();
  const present = new Set(existing);
  const { names } = createTopology(config.kafka.topicPrefix);
  const taken = new Set(config.destinations.flatMap((d) => [names.deliveries(d.id), names.dlq(d.id)]));
  const plans = config.destinations.map((d) => ({ id: d.id, topics: destinationTopics(names, d.id, retryPolicyOf(config, d).tiers, existing, taken) }));
  const retries = plans.flatMap(({ topics }) => topics.retries.map((r) => r.topic)).filter((t) => present.has(t));
  const mains = plans.map(({ topics }) => topics.main).filter((t) => present.has(t));
  const dlqs = plans.map(({ topics }) => topics.dlq).filter((t) => present.has(t));
  const ends = await partitionEnds(admin, [...mains, ...retries, ...dlqs]);
  const commits = await groupCommits(admin, delivererGroupId(config), [...mains, ...retries], ends);
  // NOTE: the replay ledgers only where letters are kept: an empty dead-letter topic costs no request.
  const ledgers = new Map<string, Map<number, ReplayLedger>>();
  for (const { id, topics } of plans) {
    if (!present.has(topics.dlq) || !(ends.get(topics.dlq) ?? []).some((e) => BigInt(e.high) > BigInt(e.low))) continue;
    ledgers.set(topics.dlq, (await readReplayLedgers(admin, replayGroups(config, id), topics.dlq)).ledgers);
  }
  const retrySpans = retries.flatMap((topic) => waitingSpans(topic, ends.get(topic) ?? [], commits.get(topic) ?? []));
  const dlqSpans = dlqs.flatMap((topic) => (ends.get(topic) ?? []).map((e) => ({ topic, partition: e.partition, from: BigInt(e.low), to: BigInt(e.high) })));
  return counter.counting(gaps, [...retrySpans, ...dlqSpans], (records) => {
    const recordsIn = (spans: readonly OffsetSpan[]) => spans.reduce((sum, s) => sum + records(s.topic, s.partition, s.from, s.to), 0);
    const spansOf = new Map<string, OffsetSpan[]>();
    for (const span of retrySpans) spansOf.set(span.topic, [...(spansOf.get(span.topic) ?? []), span]);
    const waiting = (topic: string) => recordsIn(spansOf.get(topic) ?? []);
    const figures = new Map<string, KafkaFigures>();
    for (const { id, topics } of plans) {
      figures.set(id, {
        consumerLag: present.has(topics.main) ? topicLag(ends.get(topics.main) ?? [], commits.get(topics.main) ?? []) : 0,
        retryBacklog: topics.retries.filter((r) => !r.leftover || waiting(r.topic) > 0).map((r) => ({ tier: r.tier.name, waiting: waiting(r.topic) })),
        deadLetters: present.has(topics.dlq) ? deadLetterCounts(records, topics.dlq, ends.get(topics.dlq) ?? [], ledgers.get(topics.dlq)) : { kept: 0, notReplayed: 0 },
      });
    }
    return figures;
  });
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

/** Letters kept (between the log's start and end) and, from the replay group's ledger, those no replay has moved. */
function deadLetterCounts(records: CountRecords, dlq: string, ends: readonly PartitionEnds[], ledgers: ReadonlyMap<number, ReplayLedger> | undefined): KafkaFigures['deadLetters'] {
  let kept = 0;
  let notReplayed = 0;
  for (const end of ends) {
    const low = BigInt(end.low);
    const high = BigInt(end.high);
    kept += records(dlq, end.partition, low, high);
    const ledger = ledgers?.get(end.partition);
    if (ledger === undefined) continue;
    for (const [from, to] of notDoneRanges(ledger, high)) notReplayed += records(dlq, end.partition, from < low ? low : from, to);
  }
  return { kept, notReplayed };
}

/** The stretches `[from, to)` below `high` the ledger has not dealt with, in order. Pure. */
export function notDoneRanges(ledger: ReplayLedger, high: bigint): [bigint, bigint][] {
  const open: [bigint, bigint][] = [];
  let from = ledger.position;
  for (const [doneFrom, doneTo] of ledger.done) {
    if (from >= high) break;
    const to = doneFrom < high ? doneFrom : high;
    if (to > from) open.push([from, to]);
    if (doneTo + 1n > from) from = doneTo + 1n;
  }
  if (high > from) open.push([from, high]);
  return open;
}
