// Committing a batch's finished work so that a failed commit cannot leave it
// uncommitted for good.
import type { Logger } from 'pino';

/**
 * Broker answers that mean this member's generation is over: its commit can never
 * succeed; the member rejoins the group and reads again from the last commit.
 */
const GENERATION_LOST = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

/**
 * An error and the errors it wraps: its `cause` chain and, for an aggregate (how
 * @platformatic/kafka reports a request that failed on several tries or brokers), its
 * `errors`; a few levels deep.
 */
export function errorChain(error: unknown): object[] {
  const found: object[] = [];
  const walk = (e: unknown, depth: number): void => {
    if (typeof e !== 'object' || e === null || depth > 5 || found.length > 50) return;
    found.push(e);
    walk((e as { cause?: unknown }).cause, depth + 1);
    const inner = (e as { errors?: unknown }).errors;
    if (Array.isArray(inner)) for (const item of inner) walk(item, depth + 1);
  };
  walk(error, 0);
  return found;
}

/** The broker error names in `error`: wire.ts's `type`, @platformatic/kafka's `apiId`. */
export function errorTypes(error: unknown): string[] {
  const types: string[] = [];
  for (const e of errorChain(error)) {
    const { type, apiId } = e as { type?: unknown; apiId?: unknown };
    if (typeof type === 'string') types.push(type);
    if (typeof apiId === 'string') types.push(apiId);
  }
  return types;
}

export function isGenerationLost(error: unknown): boolean {
  return errorTypes(error).some((type) => GENERATION_LOST.has(type));
}

/**
 * Whether another try may succeed: the runtimes mark such errors of their own
 * `retriable`, wire.ts and @platformatic/kafka `canRetry` (on the error, a cause or an
 * aggregated error); a
 * timeout of either is one too. Anything else is not.
 */
export function isRetriable(error: unknown): boolean {
  return errorChain(error).some((e) => {
    const { retriable, canRetry, code } = e as { retriable?: unknown; canRetry?: unknown; code?: unknown };
    return retriable === true || canRetry === true || code === 'PLT_KFK_TIMEOUT' || code === 'PLT_KFK_NETWORK';
  });
}

export interface CommitRetryOptions {
  /** False once the consumer stops or the partition is taken away (a seek, a rebalance): then give up quietly. */
  stillOwned: () => boolean;
  logger: Logger;
  /** What is committed, for the log ("calls partition 3"). */
  what: string;
  /** First wait between tries; doubles up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Runs `commit` until it succeeds, as long as the partition is still this member's.
 *
 * NOTE: a batch commits only at its end. Were a failed commit (the broker restarting,
 * the group coordinator moving or loading) given up while fetching went on, nothing new
 * on the partition would ever commit it again: the group's lag stays above zero (and
 * its alert fires) and all of that work is done a second time after the next restart.
 * Found by the chaos harness: a broker restart at the end of a burst left a
 * destination's lag stuck for good. So a batch is finished only once its offsets are
 * committed; while the broker does not answer, the batch waits.
 *
 * An answer that says the generation is over is rethrown: the consumer then rejoins and
 * reads again from the last commit (duplicates, never a loss). So is an error not
 * retriable (an authorization failure, a bug): waiting would not help.
 */
export async function commitUntilDone(commit: () => Promise<void>, options: CommitRetryOptions): Promise<void> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  let delayMs = options.initialDelayMs ?? 200;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  for (let attempt = 1; ; attempt++) {
    try {
      await commit();
      if (attempt > 1) options.logger.info({ what: options.what, attempts: attempt }, `offsets of ${options.what} committed after ${attempt} attempts`);
      return;
    } catch (error) {
      // A lost generation, an authorization failure or a bug: not for waiting out here.
      if (isGenerationLost(error) || !isRetriable(error)) throw error;
      if (!options.stillOwned()) {
        options.logger.debug({ err: error, what: options.what }, 'commit failed while stopping or after a seek; the next owner reads from the last commit');
        return;
      }
      if (attempt === 1) {
        options.logger.warn({ err: error, what: options.what }, `could not commit the offsets of ${options.what}; retrying until the broker answers`);
      }
    }
    await sleep(delayMs);
    delayMs = Math.min(maxDelayMs, delayMs * 2);
  }
}
