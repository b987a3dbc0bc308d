// What a destination lane (destination-lane.ts) is made with: its destination's settings,
// the deliverer's circuits, pace, retry tiers, deliveries, stream and commit account.
import type { Logger } from 'pino';
import type { CommitAccount } from './commit-account.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from './deliver-event.js';
import type { PreparedDestination } from './destination-settings.js';
import type { EndOfTurn } from './end-of-turn.js';
import type { RatePace } from './rate-pace.js';
import type { RetryTierWait } from './retry-tier-wait.js';
import type { UrlCircuits } from './url-circuits.js';

/** The stream's side a lane uses (src/kafka/partition-stream.ts): the fetch of its partitions. */
export interface LaneStream {
  pause(topic: string, partition: number, resumeAt?: number): void;
  resume(topic: string, partition: number): void;
  /** A record handed over that this lane will not finish: to be fetched again. */
  release(topic: string, partition: number, offset: string): void;
}

export interface LaneParts {
  destinationId: string;
  /** `delivery.concurrencyPerDestination`: requests in flight at most. */
  concurrency: number;
  /** Records queued (fetched, not started) at most before the lane's partitions are paused. */
  queueBound: number;
  /** The destination's current settings; undefined once it left the config. */
  settings: () => PreparedDestination | undefined;
  circuits: UrlCircuits;
  pace: RatePace;
  tierWait: RetryTierWait;
  events: {
    deliver(job: DeliveryJob): Promise<DeliveryResult | void>;
    deliverBatch(job: BatchJob): Promise<PromiseSettledResult<DeliveryResult>[]>;
  };
  stream: LaneStream;
  /**
   * The lane's account in the stream's commit ledger, made with laneUncommittedBound:
   * where its deliveries finish, and whether it may start more.
   */
  commits: CommitAccount;
  logger: Logger;
  /** After a failed retry or dead-letter write, how long before the event is attempted again. */
  writeRetryMs?: number;
  /** Where the lane's pumps after a delivery ended are run, shared by every lane of a deliverer (end-of-turn.ts); one of its own if absent. */
  endOfTurn?: EndOfTurn;
}

