// How long the deliverer's fetch waits on the broker (partition-stream.ts): pure, so
// that the choice is table-tested alone.

/** The fetch waits of a partition stream. */
export interface FetchWaitSettings {
  /** How long an idle fetch waits on the broker: also how late a resumed partition is fetched. */
  maxWaitTimeInMs: number;
  /**
   * The fetch wait once nothing was fetched for `idleAfterMs` and no paused partition is
   * due to resume within it (default: `maxWaitTimeInMs`, no idle mode).
   */
  idleWaitTimeInMs?: number;
  /**
   * The fetch wait while a partition is paused until its lane has room (no resume time):
   * a resumed partition is fetched only once the fetch under way returns, and with its
   * own partitions paused a lane's fetch is a long poll on nothing. Default: `maxWaitTimeInMs`.
   */
  roomWaitTimeInMs?: number;
  /** How long without a fetched record before the idle wait applies (default 2 s: records flowing end a long wait at once anyway; this only keeps the short wait through a pause in traffic). */
  idleAfterMs?: number;
}

const DEFAULT_IDLE_AFTER_MS = 2_000;

/**
 * The wait of a stream's next fetch (see KafkaPartitionStream.fetchWaitMs): the room
 * wait while a partition is paused until its lane has room (`resumeTimes` holds
 * undefined); the idle wait once nothing was fetched for `idleAfterMs` and every paused
 * partition is due to resume later than that wait from now; else `maxWaitTimeInMs`.
 */
export function fetchWait(
  settings: FetchWaitSettings,
  state: { now: number; lastRecordsAt: number; resumeTimes: Iterable<number | undefined> },
): number {
  const { maxWaitTimeInMs, idleWaitTimeInMs, idleAfterMs = DEFAULT_IDLE_AFTER_MS, roomWaitTimeInMs = maxWaitTimeInMs } = settings;
  const { now } = state;
  const idle = idleWaitTimeInMs !== undefined && idleWaitTimeInMs > maxWaitTimeInMs && now - state.lastRecordsAt >= idleAfterMs;
  let wait = idle ? idleWaitTimeInMs : maxWaitTimeInMs;
  for (const resumeAt of state.resumeTimes) {
    if (resumeAt === undefined) return Math.min(roomWaitTimeInMs, maxWaitTimeInMs);
    if (resumeAt - now < wait) wait = maxWaitTimeInMs;
  }
  return wait;
}
