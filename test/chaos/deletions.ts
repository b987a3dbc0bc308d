// Deletion requests under the same faults as the load (docs/kafka.md, docs/configuration.md#routing): each names one
// source, so every enabled destination of that source must get one `delete` body, at
// its receiver or in its dead-letter topic. The router forwards a request's
// `traceparent` to its deliveries, so each is known by that trace id, as fuzzed inputs
// are; its body is known exactly (it carries `requestedAt` as the timestamp).
import type { Ledger } from './ledger.js';
import type { KafkaWriter } from './load.js';
import type { Random } from './random.js';
import type { SourceSpec, Topology } from './topology.js';

export interface DeletionStats {
  sent: number;
  unacknowledged: number;
}

export function emptyDeletionStats(): DeletionStats {
  return { sent: 0, unacknowledged: 0 };
}

/** The sources deletions name: those of the load with a destination that answers (the blackhole one only costs timeouts). */
export function deletionSources(topology: Topology): SourceSpec[] {
  return topology.sources.filter((s) => s !== topology.fuzzSource && s.share >= 0.1);
}

/** Where a deletion of `source` must arrive: each of its enabled destinations, once (no filters apply to deletions). */
export function deletionDestinations(topology: Topology, source: SourceSpec): string[] {
  return [...new Set(source.destinations)].filter((id) => topology.destinations.find((d) => d.id === id)?.enabled === true);
}

/** The body docs/webhooks.md gives a delete: type, userId and the request's time, no version. */
export function expectedDeleteBody(userId: string, requestedAtMs: number): string {
  return JSON.stringify({ type: 'delete', userId, timestamp: new Date(requestedAtMs).toISOString() });
}

/** Writes `count` deletion requests (numbered from `first`) to the deletions topic and records what each must reach. */
export async function feedDeletions(
  first: number,
  count: number,
  writer: KafkaWriter,
  run: { topology: Topology; ledger: Ledger; runTag: string },
  random: Random,
  stats: DeletionStats,
): Promise<void> {
  const sources = deletionSources(run.topology);
  const requests = Array.from({ length: count }, (_, i) => {
    const source = random.pick(sources);
    const userId = `del-${run.runTag}-${first + i}`;
    const requestedAtMs = Date.UTC(2026, 4, 1) + (first + i) * 1_000;
    const { traceparent, key } = run.ledger.nextTrace();
    run.ledger.addDeletion(key, deletionDestinations(run.topology, source), expectedDeleteBody(userId, requestedAtMs));
    const value = JSON.stringify({ userId, sourceIds: [source.id], requestedAt: new Date(requestedAtMs).toISOString() });
    return { key, record: { key: userId, value: Buffer.from(value), headers: { traceparent } } };
  });
  stats.sent += requests.length;
  const outcome = await writer.write(requests.map((r) => r.record));
  if (!outcome.acknowledged) {
    stats.unacknowledged += requests.length;
    return;
  }
  for (const { key } of requests) run.ledger.acknowledge(key, 'valid');
}
