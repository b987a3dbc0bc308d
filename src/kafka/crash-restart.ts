// Rejoining a consumer group after kafkajs gave up on a cluster it could not reach.
import type { Logger } from 'pino';
import { errorChain } from './commit.js';

/**
 * kafkajs errors that say the cluster was out of reach, not that a request was wrong.
 * NOTE: kafkajs retries a lost broker for about half a minute (client.ts: 8 retries
 * up to 10 s apart), then fails the group join with KafkaJSGroupCoordinatorNotFound,
 * which it marks non-retriable: the consumer stops for good although the broker may
 * be back a minute later (seen in the chaos harness: a broker that took over two
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

const FIRST_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;

/**
 * Joins again after a crash kafkajs will not restart from, while the cluster is out of
 * reach: each try after a delay that doubles up to 30 s; a try that fails to start
 * ends in another crash (kafkajs reports a failed join so) or a rejected start, both
 * of which schedule the next. `joined()` resets the delay; `stop()` ends it.
 */
export class Rejoiner {
  private timer: NodeJS.Timeout | undefined;
  private delayMs = FIRST_DELAY_MS;
  private stopped = false;

  constructor(
    private readonly start: () => Promise<void>,
    private readonly logger: Logger,
    private readonly what: string,
  ) {}

  /**
   * After a crash: whether this takes care of it (the cluster was out of reach; a
   * rejoin is scheduled). False: the crash is for good.
   */
  crashed(error: Error, restartedByKafkajs: boolean): boolean {
    if (restartedByKafkajs || this.stopped || !isClusterUnreachable(error)) return false;
    this.schedule();
    return true;
  }

  joined(): void {
    this.delayMs = FIRST_DELAY_MS;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.stopped) return;
    const delayMs = this.delayMs;
    this.delayMs = Math.min(MAX_DELAY_MS, delayMs * 2);
    this.logger.warn({ what: this.what, retryInMs: delayMs }, `${this.what} lost the Kafka cluster; joining again in ${delayMs} ms`);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      this.start().catch((error: unknown) => {
        this.logger.debug({ err: error, what: this.what }, 'joining again failed; trying later');
        this.schedule();
      });
    }, delayMs);
  }
}
