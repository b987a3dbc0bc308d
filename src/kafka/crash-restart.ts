// Joining a consumer group again after a crash, one start at a time.
import type { RetryOptions } from 'kafkajs';
import type { Logger } from 'pino';
import { errorChain } from './commit.js';

/**
 * kafkajs errors that say the cluster was out of reach, not that a request was wrong.
 * NOTE: kafkajs retries a lost broker for about half a minute (kafkajs-legacy.ts: 8 retries
 * up to 10 s apart), then fails the group join with KafkaJSGroupCoordinatorNotFound,
 * which it marks non-retriable: the consumer would stop for good although the broker
 * may be back a minute later (seen in the chaos harness: a broker that took over two
 * minutes to restart left the deliverer consuming nothing until it was restarted).
 */
const UNREACHABLE = new Set([
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNumberOfRetriesExceeded',
]);

/** Whether `error` (or one it wraps) says the cluster could not be reached: worth joining again later. */
export function isClusterUnreachable(error: unknown): boolean {
  return errorChain(error).some((e) => UNREACHABLE.has((e as { name?: unknown }).name as string));
}

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;
/** kafkajs's own default for a consumer's retries (kept: passing `retry` replaces it). */
const CONSUMER_RETRIES = 5;

/**
 * Joins again after a crash: each try after a delay that doubles from 0.5 s up to 30 s;
 * a try that fails to start ends in another crash (kafkajs reports a failed join so)
 * or a rejected start, both of which schedule the next. `joined()` resets the delay;
 * `stop()` ends it.
 *
 * NOTE: kafkajs never restarts the consumer itself (`retry()`): its restart runs beside
 * the owner's own stop and run, and kafkajs's stop() returns at once for a runner still
 * joining, which then joins next to the new one. Two members of one process, fetching
 * from two positions into one handler, were seen in the chaos harness; the deliverer can
 * take the records between the positions for a gap (the likely cause of 16 events lost
 * there; partition-stream.ts now also refuses such a gap).
 */
export class Rejoiner {
  private timer: NodeJS.Timeout | undefined;
  private delayMs = FIRST_DELAY_MS;
  private stopped = false;
  private starting: Promise<void> | undefined;
  /** The crash kafkajs would have restarted from (it asks restartOnFailure just before it reports the crash). */
  private restartable: Error | undefined;

  constructor(
    private readonly start: () => Promise<void>,
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /** The consumer's `retry` option: kafkajs's retries, its restarts left to this. */
  retry(): RetryOptions {
    return {
      retries: CONSUMER_RETRIES,
      restartOnFailure: async (error) => {
        this.restartable = error;
        return false;
      },
    };
  }

  /**
   * After a crash (kafkajs's CRASH event): whether it is one to join again after (any
   * crash kafkajs would have restarted from, and an unreachable cluster); the rejoin is
   * scheduled unless the owner is stopping. False: the crash is for good.
   */
  crashed(error: Error): boolean {
    const restartable = this.restartable === error;
    this.restartable = undefined;
    if (!(restartable || isClusterUnreachable(error))) return false;
    this.schedule(error);
    return true;
  }

  joined(): void {
    this.delayMs = FIRST_DELAY_MS;
  }

  /** Ends the rejoining; resolves once a start under way settled (the owner stops the consumer after it). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.starting?.catch(() => undefined);
  }

  private schedule(error: Error): void {
    if (this.timer !== undefined || this.stopped) return;
    const delayMs = this.delayMs;
    this.delayMs = Math.min(MAX_DELAY_MS, delayMs * 2);
    this.logger.info({ what: this.what, retryInMs: delayMs, reason: error.message }, `${this.what} stopped consuming (${error.message}); joining again in ${delayMs} ms`);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      const starting: Promise<void> = this.start()
        .catch((failure: unknown) => {
          this.logger.debug({ err: failure, what: this.what }, 'joining again failed; trying later');
          this.schedule(failure instanceof Error ? failure : new Error(String(failure)));
        })
        .finally(() => {
          if (this.starting === starting) this.starting = undefined;
        });
      this.starting = starting;
    }, delayMs);
  }
}
