// How loud a consumer's crash is in the logs (docs/operations.md#logs). Pure: the time
// comes in.
import { isRetriable } from '../kafka/index.js';

export type CrashLevel = 'debug' | 'warn' | 'fatal';

/**
 * How long transient failures may go on before they are shown at their own level.
 *
 * NOTE: on a healthy start the broker answers "not the leader" for a while after each
 * topic creation and "group coordinator is not available" while the offsets topic
 * loads; the roles create their topics one after another, so on a loaded laptop this is
 * one unbroken run of refusals, of well under a minute on 2 busy cores
 * (docs/benchmarks.md#figures-behind-the-code). A minute is past that, past
 * ensure-topics' own 30 s wait (it fails with its own message) and past the client's
 * retry budget (8 retries, about 32 s, platformatic-client.ts); still going then, it is shown.
 */
export const TRANSIENT_LASTING_MS = 60_000;

export interface CrashDecision {
  level: CrashLevel;
  /** Set when transient crashes went on long enough to be shown: since the first of them. */
  lastingMs?: number;
}

export interface CrashLevels {
  /** The level of a crash reported now; `restart`: the consumer joins its group again. */
  crashed(error: unknown, restart: boolean, nowMs: number): CrashDecision;
  /** The consumer joined its group: a run of transient crashes is over. */
  joined(): void;
}

/**
 * A crash the consumer joins again after is transient when the error says another try may
 * succeed (the broker's coordinator still loading its offsets, the group rebalancing, the
 * cluster out of reach). NOTE: on a first start every one of these is normal for some
 * seconds: a fresh broker loads `__consumer_offsets` while the roles join their groups.
 * So they stay at debug until crashes have gone on for TRANSIENT_LASTING_MS with no join
 * in between; then each is shown
 * at warn with how long it has lasted. Any other crash with a rejoin is at warn; one the
 * consumer does not come back from is fatal.
 */
export function createCrashLevels(options: { lastingMs?: number } = {}): CrashLevels {
  const lastingMs = options.lastingMs ?? TRANSIENT_LASTING_MS;
  let firstMs: number | undefined;
  return {
    crashed(error, restart, nowMs) {
      if (!restart) return { level: 'fatal' };
      if (!isRetriable(error)) return { level: 'warn' };
      firstMs ??= nowMs;
      const ms = nowMs - firstMs;
      return ms < lastingMs ? { level: 'debug' } : { level: 'warn', lastingMs: ms };
    },
    joined() {
      firstMs = undefined;
    },
  };
}
