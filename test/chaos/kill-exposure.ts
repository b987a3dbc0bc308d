// What a SIGKILL of the deliverer can make its successor send again, exactly: the
// records whose 2xx came before the kill but whose progress the group had not committed
// then (docs/kafka.md#the-deliverers-commits: a commit names the first unfinished offset
// and the finished ones above it in its `sy1:` metadata). Everything else was committed,
// and the successor must skip it. Pure: the commits read at the kill, the records of
// each event in its destination's topics and the receivers' answer times in; counts out.
import { decodeFinished } from '../../src/kafka/offset-progress.js';

/** One partition's commit at a kill: its first unfinished offset (-1: none), and the offsets finished above it. */
export interface PartitionCommit {
  offset: bigint;
  finished: ReadonlySet<bigint>;
}

/** The deliverer group's commits at a kill, by `topic/partition`. */
export type CommitsAtKill = ReadonlyMap<string, PartitionCommit>;

const partitionKey = (topic: string, partition: number) => `${topic}/${partition}`;

/** The commits as the admin reads them (offset and metadata per partition), with the metadata decoded. */
export function commitsAtKill(committed: readonly { topic: string; partitions: readonly { partition: number; offset: string; metadata: string | null }[] }[]): CommitsAtKill {
  const out = new Map<string, PartitionCommit>();
  for (const { topic, partitions } of committed) {
    for (const p of partitions) {
      const offset = BigInt(p.offset);
      out.set(partitionKey(topic, p.partition), { offset, finished: new Set(offset < 0n ? [] : decodeFinished(offset, p.metadata)) });
    }
  }
  return out;
}

/** A record of an event in its destination's topic or one of its retry tiers. */
export interface EventRecord {
  topic: string;
  partition: number;
  offset: bigint;
  /** Its Kafka timestamp (a retry record's is when it was written; a delivery record's the call's receipt, earlier still). */
  writtenAtMs: number;
}

/** Whether the commits at a kill cover the record: below the committed offset, or among the finished ones above it. */
export function committedAt(commits: CommitsAtKill, record: Pick<EventRecord, 'topic' | 'partition' | 'offset'>): boolean {
  const commit = commits.get(partitionKey(record.topic, record.partition));
  if (commit === undefined || commit.offset < 0n) return false;
  return record.offset < commit.offset || commit.finished.has(record.offset);
}

/**
 * The record an answer at `atMs` was for: the last one written at or before it. A
 * destination sends each record to all its URLs at once, and a retry record is written
 * only once the attempt before it is over, so the next answer is the retry record's.
 */
export function recordAnswered(records: readonly EventRecord[], atMs: number): EventRecord | undefined {
  let found: EventRecord | undefined;
  for (const record of records) {
    if (record.writtenAtMs <= atMs && (found === undefined || record.writtenAtMs > found.writtenAtMs || (record.writtenAtMs === found.writtenAtMs && record.offset > found.offset))) found = record;
  }
  return found;
}

/** An event at one URL: when that URL answered it 2xx, and the event's records in its destination's topics. One per event of a batch. */
export interface AnsweredEvent {
  url: string;
  key: string;
  answeredAt: readonly number[];
  records: readonly EventRecord[];
}

/** An event answered 2xx again after a kill for the record answered before it. */
export interface Redelivery {
  key: string;
  url: string;
  topic: string;
  partition: number;
  offset: string;
  /** The last 2xx before the kill and the first after it. */
  answeredAtMs: [number, number];
}

export interface KillExposure {
  /** Events (per URL) answered 2xx before the kill whose record the group had not committed then: the successor sends them again. */
  answeredNotCommitted: number;
  /** Events answered 2xx before the kill whose records are not in the topics read (left out of the count). */
  unplaced: number;
  /** Events answered 2xx again for the same record after the kill (before the next kill), whose record was not committed at the kill. */
  redeliveredNotCommitted: number;
  /**
   * Events answered 2xx before the kill, not committed then, answered again after it (before
   * the next kill) for a later record: the successor's attempt at the record failed and a
   * retry record delivered it (duplicate-causes.ts counts these `answer not taken`, as the
   * answers do not outnumber the records).
   */
  notCommittedAnsweredForLaterRecord: number;
  /** Events answered 2xx before the kill, not committed then, and not answered 2xx at that URL again before the next kill (the rest of `answeredNotCommitted`); the first few listed. */
  notCommittedNotAnsweredAgain: number;
  notAnsweredAgain: Omit<Redelivery, 'answeredAtMs'>[];
  /** The same, for records committed at the kill: nothing should send those again (at most `REDELIVERIES_LISTED` listed). */
  redeliveredCommitted: number;
  committedRedeliveries: Redelivery[];
}

const REDELIVERIES_LISTED = 20;

/**
 * Counts, for one kill, the events answered 2xx at or before `kill.atMs` whose record
 * (the last written before that answer) was not committed at the kill. An answer after
 * the kill, and before `nextKillAtMs`, for that same record is a redelivery: counted by
 * whether its record was committed at the kill.
 */
export function killExposure(kill: { atMs: number; commits: CommitsAtKill }, nextKillAtMs: number | undefined, events: Iterable<AnsweredEvent>): KillExposure {
  const out: KillExposure = { answeredNotCommitted: 0, unplaced: 0, redeliveredNotCommitted: 0, notCommittedAnsweredForLaterRecord: 0, notCommittedNotAnsweredAgain: 0, notAnsweredAgain: [], redeliveredCommitted: 0, committedRedeliveries: [] };
  for (const event of events) {
    let before: number | undefined;
    let after: number | undefined;
    for (const at of event.answeredAt) {
      if (at <= kill.atMs) before = before === undefined ? at : Math.max(before, at);
      else if ((nextKillAtMs === undefined || at <= nextKillAtMs) && (after === undefined || at < after)) after = at;
    }
    if (before === undefined) continue;
    const record = recordAnswered(event.records, before);
    if (record === undefined) {
      out.unplaced += 1;
      continue;
    }
    const committed = committedAt(kill.commits, record);
    if (!committed) out.answeredNotCommitted += 1;
    if (after === undefined) {
      if (!committed) {
        out.notCommittedNotAnsweredAgain += 1;
        if (out.notAnsweredAgain.length < REDELIVERIES_LISTED) out.notAnsweredAgain.push({ key: event.key, url: event.url, topic: record.topic, partition: record.partition, offset: record.offset.toString() });
      }
      continue;
    }
    if (recordAnswered(event.records, after) !== record) {
      if (!committed) out.notCommittedAnsweredForLaterRecord += 1;
      continue;
    }
    if (!committed) out.redeliveredNotCommitted += 1;
    else {
      out.redeliveredCommitted += 1;
      if (out.committedRedeliveries.length < REDELIVERIES_LISTED) {
        out.committedRedeliveries.push({ key: event.key, url: event.url, topic: record.topic, partition: record.partition, offset: record.offset.toString(), answeredAtMs: [before, after] });
      }
    }
  }
  return out;
}
