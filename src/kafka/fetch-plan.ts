// The fetcher's planning (fetcher.ts), pure: which partitions of one leader the next
// fetch asks for, and how many bytes each may bring (docs/kafka.md#the-consumer-engine):
// - a partition that is paused, or whose last answer is still out, is left out;
// - a partition that holds its fair share of the process-wide budget (the budget over
//   the partitions that hold or have records) is left out until the owner releases
//   some, so one stuck destination never takes the whole budget;
// - a partition whose last answer was truncated (its first record batch larger than its
//   limit) is asked for alone: the broker returns the first batch of a request whole;
// - partitions at their end ride along only every `emptyPollMs` (a long poll when
//   nothing else is asked), not walked between;
// - the walk goes least recently asked first (fetch-positions.ts), so none starves.

export interface PlanPartition {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  /** Bytes handed to the owner and not released yet. */
  readonly held: number;
  readonly paused: boolean;
  /** In a request not answered yet. */
  readonly inFlight: boolean;
  /** Its last answer was truncated: ask for it alone. */
  readonly alone: boolean;
  /** Whether the log holds records past its position (false: at its end as last seen; undefined: not known). */
  readonly hasRecords: boolean | undefined;
}

export interface PlanSettings {
  /** Bytes all partitions together may hold and have asked for. */
  readonly budgetBytes: number;
  /** The most one partition may bring in one answer. */
  readonly maxPartitionBytes: number;
  /** The most one answer may bring. */
  readonly maxRequestBytes: number;
  /** Below this, a partition is not asked for (its share is used up). */
  readonly minPartitionBytes: number;
}

export interface PlannedPartition {
  readonly key: string;
  readonly topic: string;
  readonly partition: number;
  readonly maxBytes: number;
}

export interface FetchPlan {
  readonly partitions: readonly PlannedPartition[];
  readonly maxBytes: number;
  /** Whether partitions at their end are in it (the request may wait on the broker for records). */
  readonly polls: boolean;
}

/** What a plan for one leader reads: its partitions, split by whether they are at their end. */
export interface PlanInput {
  /** The leader's partitions not known to be at their end, in the order to walk them: walked at every plan. */
  readonly active: readonly PlanPartition[];
  /** The leader's partitions at their end as last seen: walked only when they ride along. */
  readonly empty: readonly PlanPartition[];
  /** How many partitions of every leader hold or may have records (the fair share's divisor). */
  readonly sharing: number;
}

/**
 * The next request to the leader of `input`, or undefined when none of its partitions
 * may be asked for now. `outstanding`: the bytes held by every partition plus what the
 * requests out may bring (their maxBytes: FetchPositions.outstanding);
 * `pollEmpty` whether partitions at their end ride along this time. The work is in
 * proportion to the leader's partitions not at their end, and to all of them when they
 * ride along.
 */
export function planFetch(input: PlanInput, settings: PlanSettings, outstanding: number, pollEmpty: boolean): FetchPlan | undefined {
  const fairShare = Math.max(settings.minPartitionBytes, Math.floor(settings.budgetBytes / Math.max(1, input.sharing)));
  const budgetLeft = Math.min(settings.maxRequestBytes, settings.budgetBytes - outstanding);
  let left = budgetLeft;
  const askable = (p: PlanPartition) => !p.paused && !p.inFlight;
  const mine = input.active.filter(askable);
  const withRecords: PlannedPartition[] = [];
  const empty: PlannedPartition[] = [];
  for (const p of mine) {
    const room = Math.min(settings.maxPartitionBytes, fairShare - p.held);
    if (p.alone && room >= settings.minPartitionBytes) {
      // NOTE: alone, whatever else waits: only the first batch of a request comes whole,
      // and only while the budget has room: the broker sends that batch whole whatever
      // the limit, so the budget is passed by one batch at most. Asked whatever the
      // budget held, every truncated partition brought its whole batch: at 1,000
      // destinations with 700 KB batches, 347 MB held on a 64 MB budget (destinations
      // bench, backlog), and the deliverer ran out of heap.
      if (budgetLeft < settings.minPartitionBytes) continue;
      const bytes = Math.min(room, budgetLeft);
      return { partitions: [{ key: p.key, topic: p.topic, partition: p.partition, maxBytes: bytes }], maxBytes: bytes, polls: false };
    }
    const bytes = Math.min(room, left);
    if (bytes < settings.minPartitionBytes) continue;
    withRecords.push({ key: p.key, topic: p.topic, partition: p.partition, maxBytes: bytes });
    left -= bytes;
  }
  if (pollEmpty) {
    for (const p of input.empty) {
      const room = Math.min(settings.maxPartitionBytes, fairShare - p.held);
      // NOTE: rounded down to a power of two, so that a poll's limits stay the same while
      // the fair share moves a little: a fetch session names only the partitions that change.
      if (askable(p) && room >= settings.minPartitionBytes) empty.push({ key: p.key, topic: p.topic, partition: p.partition, maxBytes: 2 ** Math.floor(Math.log2(room)) });
    }
  }
  const polls = empty.length > 0;
  const partitions = polls ? [...withRecords, ...empty] : withRecords;
  if (partitions.length === 0) return undefined;
  let maxBytes = 0;
  for (const p of withRecords) maxBytes += p.maxBytes;
  // NOTE: partitions at their end share one allowance, within what the budget has left
  // (at the least minPartitionBytes, so that they are still polled once it is used up:
  // an answer then brings one batch). Each one's limit is its room, but the request's
  // bound is what counts against the budget while it waits on the broker: counted as the
  // sum of their limits, a poll of thousands of idle partitions took the whole budget
  // from the other leaders' partitions until it returned.
  const allowance = polls ? Math.min(settings.maxPartitionBytes, Math.max(settings.minPartitionBytes, left)) : 0;
  maxBytes = Math.max(settings.minPartitionBytes, Math.min(settings.maxRequestBytes, maxBytes + allowance));
  return { partitions, maxBytes, polls };
}
