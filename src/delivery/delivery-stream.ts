// The deliverer's partition stream (partition-stream.ts) with its commit ledger
// (commit-ledger.ts) and fetch waits (fetch-wait.ts).
import type { Logger } from 'pino';
import type { KafkaClient } from '../kafka/index.js';
import { createPartitionStream } from './partition-stream.js';
import type { PartitionStream, PartitionStreamSettings, StreamEvents, StreamHandler } from './partition-stream.js';
import { CommitLedger } from './commit-ledger.js';
import { fetchWait } from './fetch-wait.js';
import type { FetchWaitSettings } from './fetch-wait.js';

export interface DeliveryStreamSettings extends Omit<PartitionStreamSettings, 'fetchWaitMs'>, FetchWaitSettings {
  /** After a commit failed (a rebalance, a broker away), how long before the next try. */
  commitEveryMs: number;
  /**
   * How long a commit waits after the first completion it covers, at the least (default
   * 5 ms): the completions of that moment go in one request. The next commit starts once
   * the broker answered this one, so finished work waits about one commit round trip;
   * longer, up to 100 ms, after commits of many partitions (commitDelay).
   */
  commitDelayMs?: number;
}

export type DeliveryStream = PartitionStream<CommitLedger>;

export function createDeliveryStream(client: KafkaClient, settings: DeliveryStreamSettings, handler: StreamHandler, events: StreamEvents, logger: Logger): DeliveryStream {
  const { groupId, commitEveryMs, commitDelayMs } = settings;
  return createPartitionStream(client, { ...settings, fetchWaitMs: (state) => fetchWait(settings, state) }, handler, events, logger, (channel) => new CommitLedger({ groupId, commitEveryMs, ...(commitDelayMs !== undefined ? { commitDelayMs } : {}) }, channel, logger));
}
