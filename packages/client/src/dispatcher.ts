/**
 * The in-memory queue behind the client: calls wait here until `flushAt` of them are
 * queued, `flushAfter` has passed since the last flush, or someone calls flush(); then
 * they go out in batches, one batch at a time, in the order they were made, each
 * retried with backoff until it is accepted or the retries run out.
 *
 * NOTE: one batch in flight at a time keeps the bookkeeping a single number (every
 * call up to `settledSeq` is done), which is what lets flush() say exactly which calls
 * it waited for. A client library's throughput is bounded by its app, not by this.
 *
 * A batch that is not accepted is reported once, on one channel: to the flush() (and
 * close()) promises waiting for it, which reject with it, or, when nothing waits for
 * it (a background send after flushAt or flushAfter), to onError.
 */
import { nextBatchSize } from './batch.js';
import type { DebugLog } from './debug.js';
import { AnalyticsDeliveryError, AnalyticsQueueFullError } from './errors.js';
import { backoffMs } from './retry.js';
import type { QueuedCall, RefusedCall, SendResult, Transport } from './transport.js';

export interface DispatcherOptions {
  transport: Transport;
  /** Send once this many calls are queued (1: every call at once). */
  flushAt: number;
  /** Send what is queued once this long has passed since the last flush. */
  flushAfterMs: number;
  /** Retries after the first attempt of a batch; then its calls are reported as failed. */
  maxRetries: number;
  minRetryDelayMs: number;
  maxRetryDelayMs: number;
  /** Calls waiting (not yet in a batch) beyond which enqueue() throws. */
  maxQueuedCalls: number;
  /** Told about a batch that was not accepted when no flush() waits for it. */
  onError: (error: AnalyticsDeliveryError) => void;
  log: DebugLog;
}

interface FlushWaiter {
  /** Waits until every call up to this sequence number is settled. */
  untilSeq: number;
  errors: AnalyticsDeliveryError[];
  resolve: () => void;
  reject: (error: AnalyticsDeliveryError) => void;
}

export class Dispatcher {
  private readonly options: DispatcherOptions;
  private readonly queue: QueuedCall[] = [];
  /** Sequence number of queue[0]; calls are numbered from 1 in the order they were queued. */
  private headSeq = 1;
  /** Every call with a sequence number up to this one was accepted or reported. */
  private settledSeq = 0;
  /** Calls up to this sequence number go out now, whatever flushAt says. */
  private flushUntilSeq = 0;
  private lastFlushAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private waiters: FlushWaiter[] = [];
  private stopped = false;

  constructor(options: DispatcherOptions) {
    this.options = options;
  }

  /** Calls queued and not yet in a batch. */
  get queued(): number {
    return this.queue.length;
  }

  enqueue(call: QueuedCall): void {
    if (this.queue.length >= this.options.maxQueuedCalls) throw new AnalyticsQueueFullError(this.options.maxQueuedCalls);
    this.queue.push(call);
    this.options.log(`queued ${call.type} call ${call.messageId} (${call.bytes} bytes; ${this.queue.length} waiting)`);
    if (this.queue.length >= this.options.flushAt) this.kick();
    else this.armTimer();
  }

  /**
   * Sends everything queued so far and resolves once all of it was accepted; rejects
   * with an AnalyticsDeliveryError holding the calls that were not (which then do not
   * go to onError).
   */
  flush(): Promise<void> {
    const untilSeq = this.headSeq + this.queue.length - 1;
    if (untilSeq <= this.settledSeq) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.waiters.push({ untilSeq, errors: [], resolve, reject });
      this.flushUntilSeq = Math.max(this.flushUntilSeq, untilSeq);
      this.kick();
    });
  }

  /** Drains like flush(), then stops the timer for good. */
  async drainAndStop(): Promise<void> {
    this.stopped = true;
    this.clearTimer();
    try {
      await this.flush();
    } finally {
      this.clearTimer();
    }
  }

  private kick(): void {
    if (this.pumping !== undefined) return; // the running loop picks the new calls up
    this.clearTimer();
    this.pumping = this.pump().finally(() => {
      this.pumping = undefined;
      if (this.due()) this.kick();
      else this.armTimer();
    });
  }

  /** Whether the front of the queue should go out now. */
  private due(): boolean {
    return this.queue.length > 0 && (this.queue.length >= this.options.flushAt || this.flushUntilSeq >= this.headSeq);
  }

  private async pump(): Promise<void> {
    while (this.due()) {
      this.lastFlushAt = Date.now();
      const firstSeq = this.headSeq;
      const batch = this.queue.splice(0, nextBatchSize(this.queue, this.options.transport.limits));
      this.headSeq += batch.length;
      const error = await this.sendWithRetries(batch);
      this.settle(firstSeq, batch.length, error);
    }
  }

  private armTimer(): void {
    if (this.timer !== undefined || this.stopped || this.queue.length === 0) return;
    const delay = Math.max(0, this.lastFlushAt + this.options.flushAfterMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushUntilSeq = Math.max(this.flushUntilSeq, this.headSeq + this.queue.length - 1);
      this.kick();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Sends one batch until accepted, refused, or out of retries; the failure as a value. */
  private async sendWithRetries(batch: QueuedCall[]): Promise<AnalyticsDeliveryError | undefined> {
    const { transport, maxRetries, log } = this.options;
    const bytes = batch.reduce((sum, call) => sum + call.bytes, 0);
    for (let attempt = 1; ; attempt++) {
      log(`sending ${count(batch.length, 'call')} (${bytes} bytes of calls) to ${transport.description}, attempt ${attempt}`);
      const result = await sendOnce(transport, batch);
      if (result.kind === 'success') {
        log(`sent ${count(batch.length, 'call')} to ${transport.description}`);
        return result.refused === undefined || result.refused.length === 0 ? undefined : refusedError(batch, result.refused, transport, attempt);
      }
      if (result.kind === 'failure') {
        log(`${transport.description} refused ${count(batch.length, 'call')}: ${result.reason}; not retrying`);
        return new AnalyticsDeliveryError(
          'rejected',
          `${count(batch.length, 'call')} refused by ${transport.description}: ${result.reason}`,
          { status: result.status, attempts: attempt, calls: batch.map((call) => call.message), cause: result.cause },
        );
      }
      if (attempt > maxRetries) {
        log(`giving up on ${count(batch.length, 'call')} after ${count(attempt, 'attempt')}: ${result.reason}`);
        return new AnalyticsDeliveryError(
          'retries_exhausted',
          `${count(batch.length, 'call')} not accepted by ${transport.description} after ${count(attempt, 'attempt')} ` +
            `(last: ${result.reason}): check that it is reachable, or raise maxRetries`,
          { status: result.status, attempts: attempt, calls: batch.map((call) => call.message), cause: result.cause },
        );
      }
      const delay = result.retryAfterMs ?? backoffMs(attempt, this.options.minRetryDelayMs, this.options.maxRetryDelayMs);
      log(`attempt ${attempt} failed (${result.reason}); retry ${attempt} of ${maxRetries} in ${delay} ms`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private settle(firstSeq: number, count: number, error: AnalyticsDeliveryError | undefined): void {
    this.settledSeq = firstSeq + count - 1;
    // NOTE: every waiter still here waits for a call of this batch (the ones before it are
    // settled), so "anyone waiting" is "anyone waiting for this batch".
    if (error !== undefined && this.waiters.length > 0) {
      for (const waiter of this.waiters) waiter.errors.push(error);
    } else if (error !== undefined) {
      try {
        this.options.onError(error);
      } catch {
        // NOTE: an application's error handler that throws must not stop the queue.
      }
    }
    const done = this.waiters.filter((waiter) => waiter.untilSeq <= this.settledSeq);
    if (done.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => waiter.untilSeq > this.settledSeq);
    for (const waiter of done) {
      if (waiter.errors.length === 0) waiter.resolve();
      else waiter.reject(combine(waiter.errors));
    }
  }
}

/** The calls of an accepted batch that the server kept aside as invalid. */
function refusedError(batch: QueuedCall[], refused: readonly RefusedCall[], transport: Transport, attempts: number): AnalyticsDeliveryError {
  const calls = refused.flatMap((r) => {
    const call = batch[r.index];
    return call === undefined ? [] : [call.message];
  });
  const first = refused[0] as RefusedCall;
  return new AnalyticsDeliveryError(
    'invalid',
    `${transport.description} kept ${count(refused.length, 'call')} of ${batch.length} aside as invalid (in calls.invalid); ` +
      `the first, at batch index ${first.index}: ${first.code}: ${first.message}`,
    { status: 200, attempts, calls },
  );
}

/** A transport that throws (a bug, or an error it did not foresee) counts as retryable. */
async function sendOnce(transport: Transport, batch: QueuedCall[]): Promise<SendResult> {
  try {
    return await transport.send(batch);
  } catch (err) {
    return { kind: 'retryable', reason: err instanceof Error ? err.message : String(err), cause: err };
  }
}

/** One error for a flush() that saw several batches fail: the first's code, every call. */
function combine(errors: AnalyticsDeliveryError[]): AnalyticsDeliveryError {
  const first = errors[0] as AnalyticsDeliveryError;
  if (errors.length === 1) return first;
  const calls = errors.flatMap((error) => error.calls);
  return new AnalyticsDeliveryError(
    first.code,
    `${count(calls.length, 'call')} in ${errors.length} batches not accepted; the first batch: ${first.message}`,
    { status: first.status, attempts: first.attempts, calls, cause: first },
  );
}

/** `1 call`, `2 calls`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
