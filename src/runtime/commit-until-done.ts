// Committing a batch's finished work so that a failed commit cannot leave it
// uncommitted for good (the ordered consumer's and the deliverer's commit ledger's).
import type { Logger } from 'pino';
import { isGenerationLost, isRetriable } from '../kafka/index.js';

export interface CommitRetryOptions {
  /** False once the consumer stops or the partition is taken away (a seek, a rebalance): then give up quietly. */
  stillOwned: () => boolean;
  logger: Logger;
  /** What is committed, for the log ("calls partition 3"). */
  what: string;
  /** First wait between tries; doubles up to maxDelayMs (default 1 s). */
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
  // NOTE: at most a second between tries. Seen in the chaos harness with 5 s: a deliverer
  // leaving its generation (a reload) as the broker stopped committed again 6–11 s after
  // the broker came back, out of its group all that while, and a SIGKILL meanwhile had
  // its successor deliver again everything finished before the stop.
  const maxDelayMs = options.maxDelayMs ?? 1_000;
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
