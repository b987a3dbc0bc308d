// `switchyard_consumer_lag{group,topic}`: how many records a consumer group has not
// committed yet, per topic, sampled from the broker (shared by every consuming role).
// The broker is reached through a LagSource (src/kafka/admin.ts implements it), so
// observability does not depend on the Kafka port.
import type { Logger } from 'pino';
import type { Metrics } from './metrics.js';
import type { GapReader, OffsetSpan, RecordCounter } from './record-counts.js';

export interface LagGroup {
  groupId: string;
  topics: string[];
}

export interface PartitionEnds {
  partition: number;
  /** The high watermark: the offset the next record will get. */
  high: string;
  /** The oldest offset still in the log. */
  low: string;
}

export interface CommittedOffset {
  partition: number;
  /** "-1" when the group has committed nothing for the partition. */
  offset: string;
}

/** Where the sampler reads offsets from. */
export interface LagSource {
  /** The group's committed offset of every partition of each topic. */
  committedOffsets(groupId: string, topics: readonly string[]): Promise<{ topic: string; partitions: CommittedOffset[] }[]>;
  /** The log's ends of every partition of `topic`. */
  partitionEnds(topic: string): Promise<PartitionEnds[]>;
  /** The same for many topics at once, in a few requests (a role with thousands of topics). */
  partitionEndsOf?(topics: readonly string[]): Promise<Map<string, PartitionEnds[]>>;
  /** The group's commits of exactly these partitions, in a few requests (no per-topic metadata lookups). */
  committedOffsetsOf?(groupId: string, partitions: readonly { topic: string; partitions: readonly number[] }[]): Promise<{ topic: string; partitions: CommittedOffset[] }[]>;
}

/**
 * Sum over partitions of (high watermark − committed offset). A partition without a
 * commit, or whose commit is older than the log's start (retention removed the
 * records), counts from the log's start: those are the records still to be read.
 */
export function topicLag(ends: readonly PartitionEnds[], committed: readonly CommittedOffset[]): number {
  const committedBy = new Map(committed.map((c) => [c.partition, BigInt(c.offset)]));
  let lag = 0n;
  for (const end of ends) {
    const high = BigInt(end.high);
    const low = BigInt(end.low);
    const done = committedBy.get(end.partition) ?? -1n;
    const from = done < low ? low : done;
    if (high > from) lag += high - from;
  }
  return Number(lag);
}

/**
 * Where a consumer group's records wait in a topic: from its commit (from the log's start
 * without one, or when retention removed the records it points at) to the end. The
 * stretch topicLag counts, to be counted in records (record-counts.ts).
 */
export function waitingSpans(topic: string, ends: readonly PartitionEnds[], committed: readonly CommittedOffset[]): OffsetSpan[] {
  const committedBy = new Map(committed.map((c) => [c.partition, BigInt(c.offset)]));
  return ends.flatMap((end) => {
    const low = BigInt(end.low);
    const high = BigInt(end.high);
    const done = committedBy.get(end.partition) ?? -1n;
    const from = done < low ? low : done;
    return high > from ? [{ topic, partition: end.partition, from, to: high }] : [];
  });
}

const DEFAULT_QUIET_INTERVAL_MS = 60_000;
/**
 * While the groups have no topics (a deliverer's lanes come after its sampler starts),
 * how often the sampler looks at them again: their first sample comes with the topics,
 * in the start-up, not a whole interval later, when the role is already idle.
 */
const NO_TOPICS_LOOK_MS = 1_000;

export interface LagSampler {
  /** Takes one sample now (also what the timer runs). Never throws; failures are logged. */
  sample(): Promise<void>;
  stop(): Promise<void>;
}

/** What the last sample found, for `quietSkip`. */
export interface LastSample {
  /** When it started (epoch ms). */
  at: number;
  /** Every topic of every group was sampled, each with a lag of 0. */
  allCaughtUp: boolean;
  /** The groups' topics it sampled, counted: a config reload that adds or drops some is sampled at once. */
  topics: number;
}

/**
 * Whether a due sample can be skipped: the last one found every topic caught up, no
 * record moved here since it started (`recordsMovedAt`; undefined: unknown, so never),
 * the groups have as many topics as then (`topicsNow`), and it is younger than
 * `quietIntervalMs`.
 * NOTE: a lag of 0 grows only with new records, which the consumer fetches within its
 * fetch wait (so they move `recordsMovedAt`), or records it does not fetch: a paused
 * partition's (the consumer then answers undefined), or another member's partitions,
 * whose own sampler reports them (dashboards and the scaler take the max over pods).
 */
export function quietSkip(last: LastSample | undefined, state: { recordsMovedAt: number | undefined; topicsNow: number; now: number }, quietIntervalMs: number): boolean {
  const { recordsMovedAt, topicsNow, now } = state;
  return last !== undefined && last.allCaughtUp && last.topics === topicsNow && recordsMovedAt !== undefined && recordsMovedAt < last.at && now - last.at < quietIntervalMs;
}

/** The topics of the groups, counted. */
function topicCount(groups: readonly LagGroup[]): number {
  return groups.reduce((sum, group) => sum + group.topics.length, 0);
}

/**
 * Samples every `intervalMs` (the first sample at once). `groups` is read on each
 * sample, so a config reload that adds topics is picked up without a restart.
 * With `recordsMovedAt`, a caught-up group whose records have not moved since is sampled
 * only every `quietIntervalMs` (quietSkip): an idle consumer of thousands of topics does
 * not ask for thousands of log ends every interval to learn nothing.
 */
export function startLagSampler(options: {
  source: LagSource;
  metrics: Metrics;
  groups: () => LagGroup[];
  intervalMs: number;
  logger?: Logger;
  /** Called with each topic's lag once the gauge is set. */
  onSample?: (group: LagGroup, topic: string, lag: number) => void;
  /**
   * Topics whose waiting records are counted too, offsets that hold none (transaction
   * markers, aborted records) left out (record-counts.ts), and told to `onRecords` after
   * each sample: the deliverer's retry queue depth.
   */
  records?: RecordsWaiting;
  /** When the consumer last fetched records (epoch ms); undefined when it cannot tell (a partition paused). */
  recordsMovedAt?: () => number | undefined;
  /** How long a quiet, caught-up group goes without a sample at most (default 60 s). */
  quietIntervalMs?: number;
}): LagSampler {
  const { source, metrics, logger } = options;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const failures = new SampleFailures(logger);
  let last: LastSample | undefined;
  const report = (group: LagGroup, topic: string, lag: number): void => {
    metrics.consumerLag.set({ group: group.groupId, topic }, lag);
    options.onSample?.(group, topic, lag);
  };

  const sampleAll = async (): Promise<void> => {
    const groups = options.groups();
    const sample: LastSample = { at: Date.now(), allCaughtUp: true, topics: topicCount(groups) };
    for (const group of groups) {
      if (stopped) return;
      try {
        if (!(await sampleGroup(source, group, report, options.records))) sample.allCaughtUp = false;
        failures.succeeded();
      } catch (error) {
        sample.allCaughtUp = false;
        failures.failed(error, group.groupId);
      }
    }
    last = sample;
  };

  const sample = (): Promise<void> => {
    running = running.then(sampleAll);
    return running;
  };

  const schedule = () => {
    if (stopped) return;
    const noTopics = last !== undefined && last.topics === 0;
    timer = setTimeout(() => {
      if (noTopics && topicCount(options.groups()) === 0) return schedule();
      const { recordsMovedAt } = options;
      const skip =
        recordsMovedAt !== undefined &&
        quietSkip(last, { recordsMovedAt: recordsMovedAt(), topicsNow: topicCount(options.groups()), now: Date.now() }, options.quietIntervalMs ?? DEFAULT_QUIET_INTERVAL_MS);
      void (skip ? Promise.resolve() : sample()).then(schedule);
    }, noTopics ? Math.min(NO_TOPICS_LOOK_MS, options.intervalMs) : options.intervalMs);
    timer.unref();
  };
  void sample().then(schedule);

  return {
    sample,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export interface RecordsWaiting {
  of(topic: string): boolean;
  counter: RecordCounter;
  reader: GapReader;
  onRecords(group: LagGroup, topic: string, waiting: number): void;
}

/**
 * Samples one group, reporting each topic's lag (and the records waiting in the topics
 * `records` names); true when every one of its topics was found with a lag of 0.
 */
async function sampleGroup(source: LagSource, group: LagGroup, report: (group: LagGroup, topic: string, lag: number) => void, records?: RecordsWaiting): Promise<boolean> {
  // NOTE: one request per broker for every topic when the source can (the deliverer's
  // group reads three to five topics per destination); else one topic after the other.
  // The commits of the partitions found go in one request too: read per topic (as the
  // earlier client did), 3,000 topics every sample cost seconds of CPU.
  const many = source.partitionEndsOf === undefined ? undefined : await source.partitionEndsOf(group.topics);
  const committed =
    many !== undefined && source.committedOffsetsOf !== undefined
      ? await source.committedOffsetsOf(
          group.groupId,
          [...many].map(([topic, ends]) => ({ topic, partitions: ends.map((e) => e.partition) })),
        )
      : await source.committedOffsets(group.groupId, group.topics);
  const byTopic = new Map(committed.map((t) => [t.topic, t.partitions]));
  let caughtUp = true;
  const counted: string[] = [];
  const spans: OffsetSpan[] = [];
  for (const topic of group.topics) {
    const ends = many === undefined ? await source.partitionEnds(topic) : many.get(topic);
    if (ends === undefined) {
      caughtUp = false;
      continue; // not created yet: sampled once it is
    }
    const lag = topicLag(ends, byTopic.get(topic) ?? []);
    if (lag !== 0) caughtUp = false;
    report(group, topic, lag);
    if (records?.of(topic) !== true) continue;
    counted.push(topic);
    // NOTE: a topic read to its end waits for nothing: no records read.
    if (lag > 0) spans.push(...waitingSpans(topic, ends, byTopic.get(topic) ?? []));
  }
  if (records !== undefined && counted.length > 0) {
    const waiting = await records.counter.counting(records.reader, spans, (count) => {
      const byCounted = new Map(counted.map((topic) => [topic, 0]));
      for (const s of spans) byCounted.set(s.topic, (byCounted.get(s.topic) ?? 0) + count(s.topic, s.partition, s.from, s.to));
      return byCounted;
    });
    for (const [topic, n] of waiting) records.onRecords(group, topic, n);
  }
  return caughtUp;
}

/**
 * The log of failed samples. A single failure is usually a topic just created (its
 * leader not known yet); two in a row are worth a line, then one per new kind of
 * failure: a broker outage is already reported by every other part of the process.
 */
class SampleFailures {
  private inARow = 0;
  private lastProblem: string | undefined;

  constructor(private readonly logger: Logger | undefined) {}

  succeeded(): void {
    this.lastProblem = undefined;
    this.inARow = 0;
  }

  failed(error: unknown, groupId: string): void {
    this.inARow += 1;
    const problem = error instanceof Error ? error.message : String(error);
    if (this.inARow === 1) {
      this.logger?.debug({ err: error, groupId }, 'consumer lag sample failed; retrying at the next interval');
    } else if (problem !== this.lastProblem) {
      this.logger?.warn({ err: error, groupId }, `consumer lag of group ${groupId} could not be sampled; the gauge keeps its last value`);
      this.lastProblem = problem;
    }
  }
}
