// One fetched batch of one partition of a destination's topics (the port's
// `RecordBatch`): each record waits for its due time (retry-tier-wait.ts), its circuits,
// its rate-limit tokens and its permits, then runs (deliver-event.ts) while the next one
// starts. Only offsets below the oldest unfinished record are marked done
// (offset-tracker.ts); the port's consumer commits them (commit: timer) and, when the
// batch ends, until the commit is done.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { InboundRecord, RecordBatch } from '../kafka/index.js';
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

/** While waiting for a rate-limit token, how often to look whether to stop. */
const PACE_CHECK_MS = 200;

/** A record let through: its URLs and the permits it holds (one per request, at least one). */
interface Cleared {
  admitted: Admitted;
  weight: number;
}

/** Delivers one batch; rejects when a retry or dead letter could not be written (the batch is fetched again). */
export async function deliverPartitionBatch(deps: PartitionBatchDeps, batch: RecordBatch): Promise<void> {
  await new PartitionBatch(deps, batch).run();
}

class PartitionBatch {
  private readonly tracker = new OffsetTracker();
  private readonly inFlight = new Set<Promise<void>>();
  private interrupted = false;
  private writeFailure: unknown;
  private marked: string | undefined;
  private markScheduled = false;

  constructor(
    private readonly deps: PartitionBatchDeps,
    private readonly batch: RecordBatch,
  ) {}

  async run(): Promise<void> {
    await this.deliverRecords();
    await Promise.all(this.inFlight);
    await this.markFinished()?.catch(() => undefined); // a refused heartbeat: the commit that follows says more
    if (this.writeFailure !== undefined) {
      // NOTE: the failed record and everything after it stay unmarked; the port commits
      // what was marked done and the batch is fetched again from there (duplicates,
      // never a loss).
      this.deps.logger.error(
        { err: this.writeFailure, topic: this.batch.topic, partition: this.batch.partition },
        'could not write a retry or dead letter to Kafka; the unfinished events will be attempted again',
      );
      throw this.writeFailure;
    }
  }

  /**
   * Marks the offsets below the oldest unfinished record done, when that moved.
   *
   * NOTE: progress is marked at most once per turn of the event loop as records finish
   * (markFinishedSoon), not per record; the port commits what is marked once a second
   * while a long batch runs (a slow receiver can hold one for minutes), and once more
   * when it ends. Nothing commits in between.
   */
  private markFinished(): Promise<void> | undefined {
    const offset = this.tracker.resolvable();
    if (offset === undefined || offset === this.marked) return undefined;
    this.marked = offset;
    return this.batch.markDone(offset);
  }

  private markFinishedSoon(): void {
    if (this.markScheduled) return;
    this.markScheduled = true;
    setImmediate(() => {
      this.markScheduled = false;
      this.markFinished()?.catch((error: unknown) => {
        // A rebalance: finish what runs, start nothing new, let the consumer rejoin.
        this.interrupted = true;
        this.deps.logger.debug({ err: error }, 'heartbeat refused; finishing the batch early');
      });
    });
  }

  private keepGoing(): boolean {
    return !this.deps.stopping() && !this.interrupted && this.writeFailure === undefined && this.batch.stillOwned();
  }

  private async deliverRecords(): Promise<void> {
    const { batch } = this;
    // NOTE: whether to go on is checked before the first record and after each wait
    // for permits, not per record: stop, a rebalance, a failed write or a seek can
    // only come in while the loop waits (nothing else runs in between), and kafkajs's
    // isStale() (behind stillOwned) costs a JSON.stringify per call.
    const records = this.keepGoing() ? batch.records : [];
    for (const record of records) {
      const envelope = readEnvelope(record.headers, record.timestamp);
      if (this.deps.tierWait.holdUntilDue(record.topic, envelope, batch)) break;
      const settings = this.deps.settings();
      if (settings === undefined) break; // left the config: this worker is being stopped
      const cleared = await this.clear(settings);
      if (cleared === undefined) break;
      this.start(record, envelope, settings, cleared);
    }
  }

  /** Waits for the record's rate-limit tokens and permits; undefined when the batch should end instead. */
  private async clear(settings: PreparedDestination): Promise<Cleared | undefined> {
    const { circuits, pace, slots } = this.deps;
    const now = Date.now();
    // NOTE: a URL whose circuit is open gets no request, so it takes no permit and no token.
    const admitted = circuits.admit(settings, now);
    const requests = countBits(admitted.send);
    const weight = Math.max(1, requests);
    // NOTE: waiting for a token holds up only this partition of this destination
    // (each destination has its own consumer); the record is not started, so its
    // offset stays uncommitted and nothing is lost if the batch ends here.
    const waitMs = pace.reserve(settings, requests, now);
    if (waitMs > 0 && !(await this.paced(waitMs))) {
      circuits.abandon(admitted, Date.now());
      return undefined;
    }
    // No await while permits are free (it would cost a turn of the event loop per record).
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
  private start(record: InboundRecord, envelope: Envelope, settings: PreparedDestination, { admitted, weight }: Cleared): void {
    const { slots } = this.deps;
    const ticket = this.tracker.start(record.offset);
    const task: Promise<void> = this.deps.events.deliver({ record, envelope, settings, admitted }).then(
      () => {
        slots.release(weight);
        this.inFlight.delete(task);
        this.tracker.finish(ticket);
        this.markFinishedSoon();
      },
      (error: unknown) => {
        this.writeFailure ??= error;
        slots.release(weight);
        this.inFlight.delete(task);
      },
    );
    this.inFlight.add(task);
  }
}
