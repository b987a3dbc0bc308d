// What every runtime of the consumer engine starts from (src/runtime/consumer.ts,
// src/delivery/partition-stream.ts, src/delivery/dlq/scan-topic.ts): the group member's
// connections (wire.ts), its membership and its fetcher over them, and where each
// partition of an assignment starts: its commit in the group, else the log's beginning
// or end. The runtime decides what the records are for.
import type { Logger } from 'pino';
import { CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS } from './client.js';
import type { KafkaClient } from './client.js';
import { commitOffsets, readCommitted } from './committer.js';
import type { CommittedEntry, OffsetCommitEntry } from './committer.js';
import { Fetcher } from './fetcher.js';
import type { FetcherEvents, FetcherSettings } from './fetcher.js';
import { GroupMembership } from './membership.js';
import type { Generation, MembershipEvents } from './membership.js';
import { earliestOrLatest } from './offset-lookup.js';
import { partitionKey as keyOf } from './partition-key.js';
import { Wire } from './wire.js';

export interface GroupReaderSettings {
  groupId: string;
  rebalanceTimeoutMs: number;
  fetch: FetcherSettings;
}

/** Partitions of one topic. */
export interface AssignedTopic {
  topic: string;
  partitions: number[];
}

export class GroupReader {
  readonly wire: Wire;
  readonly membership: GroupMembership;
  readonly fetcher: Fetcher;

  constructor(
    client: KafkaClient,
    private readonly settings: GroupReaderSettings,
    events: { membership: MembershipEvents; fetch: FetcherEvents },
    logger: Logger,
  ) {
    this.wire = new Wire(client.settings, client.clientId);
    const { groupId, rebalanceTimeoutMs } = settings;
    this.membership = new GroupMembership(this.wire, { groupId, sessionTimeoutMs: CONSUMER_SESSION_TIMEOUT_MS, rebalanceTimeoutMs, heartbeatIntervalMs: CONSUMER_HEARTBEAT_INTERVAL_MS }, events.membership, logger);
    this.fetcher = new Fetcher(this.wire, settings.fetch, events.fetch, logger);
  }

  /** The group's commits (with metadata) of `assigned`, one entry per partition. */
  async commits(generation: Generation, assigned: readonly AssignedTopic[]): Promise<(CommittedEntry & { topic: string })[]> {
    const committed = await readCommitted(this.wire, generation.coordinator, this.settings.groupId, assigned);
    return committed.flatMap(({ topic, partitions }) => partitions.map((p) => ({ topic, ...p })));
  }

  /** Commits `entries` in the group for `generation` (committer.ts). */
  commit(generation: Generation, entries: readonly OffsetCommitEntry[]): Promise<void> {
    return commitOffsets(this.wire, this.settings.groupId, generation, entries);
  }

  /** Where each partition of `assigned` starts: its commit (undefined: committed nothing yet). */
  async committedPositions(generation: Generation, assigned: readonly AssignedTopic[]): Promise<Map<string, bigint>> {
    const positions = new Map<string, bigint>();
    for (const { topic, partition, offset } of await this.commits(generation, assigned)) if (BigInt(offset) >= 0n) positions.set(keyOf(topic, partition), BigInt(offset));
    return positions;
  }

  /** Gives each partition of `assigned` not in `positions` (by partitionKey) the log's `which` offset. */
  async fillFromLog(positions: Map<string, bigint>, assigned: readonly AssignedTopic[], which: 'earliest' | 'latest', isolation: 0 | 1 = 0): Promise<Map<string, bigint>> {
    const missing = assigned.flatMap(({ topic, partitions }) => partitions.filter((p) => !positions.has(keyOf(topic, p))).map((partition) => ({ topic, partition })));
    for (const { topic, partition, offset } of await earliestOrLatest(this.wire, missing, which, isolation)) positions.set(keyOf(topic, partition), offset);
    return positions;
  }

  /** Leaves the group (the owner commits first: `revoking`), stops fetching, closes the connections. */
  async close(): Promise<void> {
    await this.membership.leave();
    await this.fetcher.stop();
    await this.wire.close();
  }
}

/** A fetcher on connections of its own, for a reader that joins no group (src/audiences/restore.ts); `close` stops it and closes them. */
export function grouplessFetcher(client: KafkaClient, settings: FetcherSettings, events: FetcherEvents, logger: Logger): { fetcher: Fetcher; close(): Promise<void> } {
  const wire = new Wire(client.settings, client.clientId);
  const fetcher = new Fetcher(wire, settings, events, logger);
  return { fetcher, close: () => fetcher.stop().finally(() => wire.close()) };
}

/** The fetch of a member that reads committed records only, within `budgetBytes` (no share and no answer larger). */
export function committedWithin(budgetBytes: number, limits: { partitionBytes: number; requestBytes: number; pollWaitMs(): number; emptyPollMs: number; minBytes?: number }): FetcherSettings {
  const { partitionBytes, requestBytes, pollWaitMs, emptyPollMs, minBytes = 1 } = limits;
  return { isolation: 1, budgetBytes, maxPartitionBytes: Math.min(partitionBytes, budgetBytes), maxRequestBytes: Math.min(requestBytes, budgetBytes), pollWaitMs, emptyPollMs, minBytes };
}

/** The topics of an assignment that hold partitions, with them. */
export function assignedTopics(generation: Generation): AssignedTopic[] {
  return [...generation.assignment].filter(([, partitions]) => partitions.length > 0).map(([topic, partitions]) => ({ topic, partitions: [...partitions] }));
}
