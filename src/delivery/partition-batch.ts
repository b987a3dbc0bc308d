// One fetched batch of one partition of a destination's topics (kafkajs `eachBatch`):
// each message waits for its due time (retry-tier-wait.ts), its circuits, its rate-limit
// tokens and its permits, then runs (deliver-event.ts) while the next one starts. Only
// offsets below the oldest unfinished message are resolved (offset-tracker.ts), and the
// batch ends once they are committed.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { commitUntilDone } from '../kafka/index.js';
import type { EachBatchPayload, KafkaMessage } from '../kafka/index.js';
import type { EventDelivery } from './deliver-event.js';
import type { PreparedDestination } from './destination-settings.js';
import { readEnvelope } from './envelope.js';
import type { Envelope } from './envelope.js';
import { OffsetTracker } from './offset-tracker.js';
import type { RatePace } from './rate-pace.js';
import type { RetryTierWait } from './retry-tier-wait.js';
import type { Semaphore } from './semaphore.js';
import { countBits } from './url-circuits.js';
import type { Admitted, UrlCircuits } from './url-circuits.js';

/** What every batch of one destination's worker shares. */
export interface PartitionBatchDeps {
  /** The destination's current settings; undefined once it left the config. */
  settings: () => PreparedDestination | undefined;
  /** The worker is stopping: start nothing new. */
  stopping: () => boolean;
  /** `delivery.concurrencyPerDestination` permits, one per request. */
  slots: Semaphore;
  circuits: UrlCircuits;
  pace: RatePace;
  tierWait: RetryTierWait;
  events: EventDelivery;
  logger: Logger;
}

/** kafkajs only sends a heartbeat when its interval passed, so calling often is cheap. */
const HEARTBEAT_EVERY_MS = 1_000;
/** While waiting for a rate-limit token, how often to look whether to stop. */
const PACE_CHECK_MS = 200;

/** A message let through: its URLs and the permits it holds (one per request, at least one). */
interface Cleared {
  admitted: Admitted;
  weight: number;
}

/** Delivers one batch; rejects when a retry or dead letter could not be written (the batch is fetched again). */
export async function deliverPartitionBatch(deps: PartitionBatchDeps, payload: EachBatchPayload): Promise<void> {
  await new PartitionBatch(deps, payload).run();
}

class PartitionBatch {
  private readonly tracker = new OffsetTracker();
  private readonly inFlight = new Set<Promise<void>>();
  private interrupted = false;
  private writeFailure: unknown;
  private resolved: string | undefined;

  constructor(
    private readonly deps: PartitionBatchDeps,
    private readonly payload: EachBatchPayload,
  ) {}

  async run(): Promise<void> {
    const beat = this.startBeat();
    try {
      await this.deliverMessages();
      await Promise.all(this.inFlight);
      this.settle();
    } finally {
      clearInterval(beat);
    }
    await this.commitFinished();
    const { batch } = this.payload;
    if (this.writeFailure !== undefined) {
      // NOTE: the failed message and everything after it stay unresolved; kafkajs commits
      // what was resolved and fetches again from there (duplicates, never a loss).
      this.deps.logger.error(
        { err: this.writeFailure, topic: batch.topic, partition: batch.partition },
        'could not write a retry or dead letter to Kafka; the unfinished events will be attempted again',
      );
      throw this.writeFailure;
    }
  }

  /** Resolves the offsets below the oldest unfinished message, when that moved. */
  private settle(): void {
    const offset = this.tracker.resolvable();
    if (offset !== undefined && offset !== this.resolved) {
      this.payload.resolveOffset(offset);
      this.resolved = offset;
    }
  }

  /**
   * NOTE: progress is resolved and committed once a second while a long batch runs
   * (a slow receiver can hold one for minutes), and once more when it ends (run).
   * Not per message: nothing commits in between.
   */
  private startBeat(): NodeJS.Timeout {
    return setInterval(() => {
      this.settle();
      this.payload
        .commitOffsetsIfNecessary()
        .then(() => this.payload.heartbeat())
        .catch((error: unknown) => {
          // A rebalance: finish what runs, start nothing new, let kafkajs rejoin.
          this.interrupted = true;
          this.deps.logger.debug({ err: error }, 'heartbeat or commit refused; finishing the batch early');
        });
    }, HEARTBEAT_EVERY_MS);
  }

  private keepGoing(): boolean {
    return !this.deps.stopping() && !this.interrupted && this.writeFailure === undefined && this.payload.isRunning() && !this.payload.isStale();
  }

  private async deliverMessages(): Promise<void> {
    const { batch, pause } = this.payload;
    // NOTE: whether to go on is checked before the first message and after each wait
    // for permits, not per message: stop, a rebalance, a failed write or a seek can
    // only come in while the loop waits (nothing else runs in between), and kafkajs's
    // isStale() costs a JSON.stringify per call.
    const messages = this.keepGoing() ? batch.messages : [];
    for (const message of messages) {
      const envelope = readEnvelope(message.headers, message.timestamp);
      if (this.deps.tierWait.holdUntilDue(batch.topic, envelope, pause)) break;
      const settings = this.deps.settings();
      if (settings === undefined) break; // left the config: this worker is being stopped
      const cleared = await this.clear(settings);
      if (cleared === undefined) break;
      this.start(message, envelope, settings, cleared);
    }
  }

  /** Waits for the message's rate-limit tokens and permits; undefined when the batch should end instead. */
  private async clear(settings: PreparedDestination): Promise<Cleared | undefined> {
    const { circuits, pace, slots } = this.deps;
    const now = Date.now();
    // NOTE: a URL whose circuit is open gets no request, so it takes no permit and no token.
    const admitted = circuits.admit(settings, now);
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    // NOTE: waiting for a token holds up only this partition of this destination
    // (each destination has its own consumer); the message is not started, so its
    // offset stays uncommitted and nothing is lost if the batch ends here.
    const waitMs = pace.reserve(settings, requests, now);
    if (waitMs > 0 && !(await this.paced(waitMs))) {
      circuits.abandon(admitted, Date.now());
      return undefined;
    }
    // No await while permits are free (it would cost a turn of the event loop per message).
    if (!slots.tryAcquire(weight)) {
      await slots.acquire(weight);
      if (!this.keepGoing()) {
        slots.release(weight);
        circuits.abandon(admitted, Date.now());
        return undefined;
      }
    }
    return { admitted, weight };
  }

  /** Waits `ms` for rate-limit tokens; false when the batch should end instead. */
  private async paced(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    for (let left = ms; left > 0; left = until - Date.now()) {
      await sleep(Math.min(left, PACE_CHECK_MS));
      if (!this.keepGoing()) return false;
    }
    return true;
  }

  /** Starts the delivery; its offset is finished once its outcome is safe in Kafka. */
  private start(message: KafkaMessage, envelope: Envelope, settings: PreparedDestination, { admitted, weight }: Cleared): void {
    const { batch } = this.payload;
    const { slots } = this.deps;
    const ticket = this.tracker.start(message.offset);
    const task: Promise<void> = this.deps.events.deliver({ topic: batch.topic, partition: batch.partition, message, envelope, settings, admitted }).then(
      () => {
        slots.release(weight);
        this.inFlight.delete(task);
        this.tracker.finish(ticket);
      },
      (error: unknown) => {
        this.writeFailure ??= error;
        slots.release(weight);
        this.inFlight.delete(task);
      },
    );
    this.inFlight.add(task);
  }

  /**
   * NOTE: the batch is over once what it finished is committed: a commit lost to a
   * broker restart would stay lost while the partition is quiet (src/kafka/commit.ts).
   */
  private async commitFinished(): Promise<void> {
    const { batch, commitOffsetsIfNecessary, uncommittedOffsets, isRunning, isStale } = this.payload;
    await commitUntilDone(() => commitOffsetsIfNecessary(uncommittedOffsets()), {
      stillOwned: () => !this.deps.stopping() && isRunning() && !isStale(),
      logger: this.deps.logger,
      what: `${batch.topic} partition ${batch.partition}`,
    });
  }
}
