// What a destination lane (destination-lane.ts) is made with: its destination's settings,
// the deliverer's circuits, pace, retry tiers, deliveries, stream and commit account; and
// what its parts hand each other: queued records and their partitions' queues.
import type { Logger } from 'pino';
import type { InboundRecord } from '../kafka/index.js';
import type { CommitAccount } from './commit-account.js';
import type { BatchJob, DeliveryJob, DeliveryResult } from './deliver-event.js';
import type { PreparedDestination } from './destination-settings.js';
import type { EndOfTurn } from './end-of-turn.js';
import type { Envelope } from './envelope.js';
import type { RatePace } from './rate-pace.js';
import type { RetryTierWait } from './retry-tier-wait.js';
import type { UrlCircuits } from './url-circuits.js';

/** The stream's side a lane uses (partition-stream.ts): the fetch of its partitions. */
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

export interface Queued {
  record: InboundRecord;
  envelope: Envelope;
}

export interface PartitionQueue {
  topic: string;
  partition: number;
  items: Queued[];
  /** Index of the head in `items` (shifted lazily). */
  head: number;
  /** Offsets running now (sent, waiting for rate-limit tokens, or in the open batch). */
  running: Set<string>;
  /** Its records parked behind an earlier event of their user (ordered destinations). */
  parked: number;
}

/** A record taken, or about to be taken, off its partition's queue; `user`: its record key ('' when the destination keeps no order). */
export interface Entry {
  queue: PartitionQueue;
  item: Queued;
  user: string;
}

/** The head of a queue as the lane sees it: an event that may start, one just parked behind its user's, or none that may start now. */
export type Head = Entry | 'parked' | undefined;
