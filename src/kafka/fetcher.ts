// The consumer engine's fetcher (docs/kafka.md#the-consumer-engine): owns each assigned
// partition's fetch position, asks each leader for the partitions that have room
// (fetch-plan.ts), one request per leader at a time, and hands the records over. An
// answer that comes back after its partition was assigned anew, sought or revoked moves
// nothing (fetch-positions.ts's epochs). Control batches are skipped, and aborted
// transactions' records when reading committed data.
import { isUtf8 } from 'node:buffer';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { PlanSettings } from './fetch-plan.js';
import { FetchPositions } from './fetch-positions.js';
import { FetchSession } from './fetch-session.js';
import { earliestOrLatest } from './offset-lookup.js';
import { byTopic, partitionKey as keyOf } from './partition-key.js';
import type { AskedPartition, FetchPartition as Partition } from './fetch-positions.js';
import type { InboundRecord, RecordHeaders } from './records.js';
import { ERROR, KafkaAnswerError, errorName } from './wire.js';
import type { FetchAnswer, FetchAnswerPartition, Wire } from './wire.js';

/** A record's share of the budget: its bytes plus what holding it costs besides (objects, strings). */
export function heldBytes({ key, value, headers = {} }: InboundRecord): number {
  let size = 600 + (key?.length ?? 0) + (value?.length ?? 0);
  for (const name in headers) size += 64 + name.length + (Array.isArray(headers[name]) ? 0 : (headers[name]?.length ?? 0));
  return size;
}

export interface FetcherSettings extends Omit<PlanSettings, 'minPartitionBytes'> {
  /** 0: every record; 1: committed transactions' records only. */
  isolation: 0 | 1;
  /** How long a request that polls partitions at their end may wait on the broker (asked at each request). */
  pollWaitMs(): number;
  /** How often partitions at their end ride along while others bring records. */
  emptyPollMs: number;
  /** A request that polls is answered once this many bytes wait for it, or after pollWaitMs (default 1). */
  minBytes?: number;
}

export interface FetcherEvents {
  /** Records of one partition, in offset order, new in this epoch; `next`: the position now (past skipped control records). Synchronous. */
  records(topic: string, partition: number, records: InboundRecord[], from: bigint, next: bigint): void;
  /** The position was out of the log's range (retention removed it): it moved to `to`. */
  reset(topic: string, partition: number, from: bigint, to: bigint): void;
  /** An answer came back (the consumer is reading). */
  fetched?(): void;
  /** A fetch failed; the fetcher tries again (leaders asked anew). */
  trouble?(error: Error): void;
}

const MIN_PARTITION_BYTES = 1_024;

/** How long the hand-over of one answer keeps the event loop before it lets I/O run. */
const HAND_OVER_TURN_MS = 10;

export class Fetcher {
  private readonly partitions: FetchPositions;
  private readonly loops = new Map<number, Promise<void>>();
  private readonly wakers = new Map<number, () => void>();
  /** Each leader's fetch session, which the requests that poll go through (fetch-session.ts). */
  private readonly sessions = new Map<number, FetchSession>();
  private running = true;
  private lastEmptyPoll = new Map<number, number>();
  private metadataWanted = false;
  /** A plan found partitions that could be asked for but for the budget. */
  private starved = false;
  /** When the hand-over last let I/O run (performance.now()). */
  private turnStartedAt = 0;

  constructor(
    private readonly wire: Wire,
    private readonly settings: FetcherSettings,
    private readonly events: FetcherEvents,
    private readonly logger: Logger,
  ) {
    this.partitions = new FetchPositions({ ...settings, minPartitionBytes: MIN_PARTITION_BYTES });
  }

  /**
   * Fetches these partitions from these positions (a partition already here is sought);
   * `held`: bytes of its records the owner still holds from before.
   */
  async add(entries: readonly { topic: string; partition: number; position: bigint; held?: number }[]): Promise<void> {
    for (const { topic, partition, position, held = 0 } of entries) {
      const key = keyOf(topic, partition);
      const known = this.partitions.get(key);
      if (known !== undefined) this.seekPartition(known, position);
      else this.partitions.add(key, topic, partition, position, held);
    }
    await this.refreshLeaders();
  }

  /** Stops fetching every partition (a generation ends); answers still out are dropped. */
  clear(): void {
    this.partitions.clear();
    this.wakeAll();
  }

  /** Stops fetching the partition; an answer still out for it is dropped. Its held bytes go with it. */
  remove(topic: string, partition: number): void {
    this.partitions.remove(keyOf(topic, partition));
  }

  /** The partition's position (the next offset it will fetch). */
  position(topic: string, partition: number): bigint | undefined {
    return this.partitions.get(keyOf(topic, partition))?.position;
  }

  seek(topic: string, partition: number, position: bigint): void {
    const p = this.partitions.get(keyOf(topic, partition));
    if (p !== undefined) this.seekPartition(p, position);
  }

  private seekPartition(p: Partition, position: bigint): void {
    this.partitions.seek(p, position);
    this.wakeLeader(p.leader);
  }

  pause(topic: string, partition: number): void {
    const p = this.partitions.get(keyOf(topic, partition));
    if (p !== undefined) p.paused = true;
  }

  resume(topic: string, partition: number): void {
    const p = this.partitions.get(keyOf(topic, partition));
    if (p === undefined || !p.paused) return;
    p.paused = false;
    this.wakeLeader(p.leader);
  }

  /** The owner let go of `bytes` of the partition's records (finished, or dropped). */
  release(topic: string, partition: number, bytes: number): void {
    const p = this.partitions.get(keyOf(topic, partition));
    if (p === undefined) return;
    this.partitions.release(p, bytes);
    // NOTE: only a fetcher that ran out of budget is woken: a wake per finished record
    // would plan a fetch per record (idle loops look again every emptyPollMs anyway).
    if (this.starved) {
      this.starved = false;
      this.wakeAll();
    }
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeAll();
    await Promise.allSettled([...this.loops.values()]);
  }

  private wakeLeader(leader: number): void {
    this.wakers.get(leader)?.();
  }

  private wakeAll(): void {
    for (const wake of [...this.wakers.values()]) wake();
  }

  private async refreshLeaders(): Promise<void> {
    const topics = [...new Set([...this.partitions.values()].map((p) => p.topic))];
    if (topics.length === 0) return;
    this.metadataWanted = false;
    const metadata = await this.wire.metadata(topics);
    for (const p of this.partitions.values()) {
      const leader = metadata.topics.get(p.topic)?.partitions.find((x) => x.partition === p.partition)?.leader ?? -1;
      this.partitions.setLeader(p, leader);
    }
    for (const leader of new Set([...this.partitions.values()].map((p) => p.leader))) {
      if (leader < 0 || this.loops.has(leader)) continue;
      this.loops.set(leader, this.runLeader(leader).finally(() => this.loops.delete(leader)));
    }
    this.wakeAll();
  }

  private async runLeader(leader: number): Promise<void> {
    while (this.running) {
      if (this.metadataWanted) {
        await this.refreshLeaders().catch((error: unknown) => this.events.trouble?.(error as Error));
      }
      if (!this.partitions.leads(leader)) return; // the partitions moved to other leaders, or went
      const now = Date.now();
      const pollEmpty = now - (this.lastEmptyPoll.get(leader) ?? 0) >= this.settings.emptyPollMs;
      const sent = this.partitions.send(leader, pollEmpty);
      if (sent === undefined) {
        if (this.partitions.anyAskable(leader)) this.starved = true;
        await this.idle(leader, this.settings.emptyPollMs);
        continue;
      }
      const { plan, asked } = sent;
      if (plan.polls) this.lastEmptyPoll.set(leader, now);
      const wanted = asked.map(({ partition: p, position, maxBytes }) => ({ key: p.key, topic: p.topic, partition: p.partition, offset: position, maxBytes }));
      // NOTE: only a poll goes through the session: it names the partitions at their end,
      // thousands at many destinations, which stay as they are from one poll to the next.
      if (plan.polls && !this.sessions.has(leader)) this.sessions.set(leader, new FetchSession());
      const session = plan.polls ? this.sessions.get(leader) : undefined;
      const step = session?.request(wanted);
      try {
        const answer = await this.wire.fetch(leader, {
          maxWaitMs: plan.polls ? this.settings.pollWaitMs() : 0,
          minBytes: plan.polls ? (this.settings.minBytes ?? 1) : 1,
          maxBytes: plan.maxBytes,
          isolation: this.settings.isolation,
          topics: byTopic(step?.partitions ?? wanted, (p) => ({ partition: p.partition, offset: p.offset, maxBytes: p.maxBytes })),
          ...(step === undefined ? {} : { session: step }),
        });
        if (answer.errorCode !== ERROR.NONE) throw new KafkaAnswerError(answer.errorCode, `fetching from broker ${leader}`);
        session?.answered(answer.sessionId);
        this.events.fetched?.();
        const byKey = new Map<string, FetchAnswerPartition>();
        for (const t of answer.responses) for (const part of t.partitions) byKey.set(keyOf(t.topicId, part.partitionIndex), part);
        // NOTE: a session's answer leaves out the partitions with neither records nor news.
        // NOTE: hadRoom is given the partitions the answer names: a poll asks thousands.
        const roomy = hadRoom(answer, asked.filter((a) => byKey.has(a.partition.key)), plan.maxBytes, this.settings.isolation === 1);
        for (const entry of asked) {
          if (!this.partitions.current(entry)) continue; // fenced: assigned anew, sought or revoked meanwhile
          const { partition: p, position } = entry;
          const part = byKey.get(p.key);
          if (part !== undefined) await this.take(p, position, part, roomy.has(p.key));
          await this.handOverTurn();
        }
        this.partitions.settled(leader);
      } catch (error) {
        session?.reset();
        this.partitions.settled(leader);
        this.partitions.failed(asked);
        // The broker let the session go (evicted, or restarted): the next poll opens another.
        if (error instanceof KafkaAnswerError && SESSION_ERRORS.has(error.code)) continue;
        this.metadataWanted = true;
        this.events.trouble?.(error as Error);
        await this.idle(leader, 500);
      }
    }
  }

  /** One partition's answer; `roomy`: the answer had room for its whole limit (hadRoom). */
  private async take(p: Partition, asked: bigint, part: FetchAnswerPartition, roomy: boolean): Promise<void> {
    if (part.errorCode !== ERROR.NONE) {
      await this.answerError(p, part.errorCode);
      return;
    }
    const { records, next } = decodeRecords(p.topic, p.partition, asked, part, this.settings.isolation === 1);
    const end = this.settings.isolation === 1 ? part.lastStableOffset : part.highWatermark;
    let held = 0;
    for (const record of records) held += heldBytes(record);
    if (this.partitions.answered(p, asked, next, end, held, roomy)) this.logger.debug({ topic: p.topic, partition: p.partition, offset: asked.toString() }, 'record batch larger than its share; fetching the partition alone');
    if (records.length === 0 && next === asked) return;
    this.events.records(p.topic, p.partition, records, asked, next);
  }

  private async answerError(p: Partition, code: number): Promise<void> {
    if (code === ERROR.OFFSET_OUT_OF_RANGE) {
      const { position: from, epoch } = p;
      const earliest = await this.listOffset(p, 'earliest');
      if (earliest === undefined) return;
      const to = from < earliest ? earliest : await this.listOffset(p, 'latest');
      // NOTE: a seek or a new assignment during the lookups wins: it says where to read from.
      if (to === undefined || this.partitions.get(p.key) !== p || p.epoch !== epoch) return;
      this.partitions.reset(p, to);
      this.events.reset(p.topic, p.partition, from, to);
      return;
    }
    if (LEADER_MOVED.has(code)) {
      this.metadataWanted = true;
      return;
    }
    this.logger.warn({ topic: p.topic, partition: p.partition, error: errorName(code) }, 'fetch of a partition refused; trying again');
  }

  private async listOffset(p: Partition, which: 'earliest' | 'latest'): Promise<bigint | undefined> {
    const [found] = await earliestOrLatest(this.wire, [p], which, this.settings.isolation).catch(() => []);
    return found?.offset;
  }

  /**
   * Lets I/O run once a hand-over has kept the event loop HAND_OVER_TURN_MS. NOTE: one
   * answer brings up to 16 MB; until its hand-over ended, no request could connect, no
   * answer was read, nothing committed (docs/benchmarks.md#figures-behind-the-code).
   */
  private async handOverTurn(): Promise<void> {
    if (performance.now() - this.turnStartedAt < HAND_OVER_TURN_MS) return;
    await nextTurn();
    this.turnStartedAt = performance.now();
  }

  private idle(leader: number, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const wakers = this.wakers;
      function done() {
        clearTimeout(timer);
        if (wakers.get(leader) === done) wakers.delete(leader);
        resolve();
      }
      wakers.set(leader, done);
    });
  }
}

const SESSION_ERRORS = new Set<number>([ERROR.FETCH_SESSION_ID_NOT_FOUND, ERROR.INVALID_FETCH_SESSION_EPOCH]);
/** Answers of a partition whose leader moved or is not known yet: the leaders are asked anew. */
const LEADER_MOVED = new Set<number>([ERROR.NOT_LEADER_OR_FOLLOWER, ERROR.UNKNOWN_TOPIC_OR_PARTITION, ERROR.LEADER_NOT_AVAILABLE, ERROR.FENCED_LEADER_EPOCH, ERROR.UNKNOWN_LEADER_EPOCH]);
/**
 * The partitions of an answer that had room for their whole limit (the broker fills an
 * answer in order, each up to its limit of what the request's limit left): only such a
 * partition that brought no whole batch has one larger than its limit, to ask for alone.
 * The others were cut off by the request's limit (docs/benchmarks.md#figures-behind-the-code).
 */
export function hadRoom(answer: FetchAnswer, asked: readonly AskedPartition[], requestBytes: number, readCommitted: boolean): Set<string> {
  const askedByKey = new Map(asked.map((a) => [a.partition.key, a]));
  const roomy = new Set<string>();
  let used = 0;
  for (const t of answer.responses) {
    for (const part of t.partitions) {
      const key = keyOf(t.topicId, part.partitionIndex);
      const entry = askedByKey.get(key);
      if (entry === undefined) continue;
      if (requestBytes - used >= entry.maxBytes) roomy.add(key);
      let [bytes, next] = [0, entry.position];
      // A batch: its offset and length fields, then `length` bytes.
      for (const batch of part.records ?? []) [bytes, next] = [bytes + 12 + batch.length, batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n];
      const more = next < (readCommitted ? part.lastStableOffset : part.highWatermark);
      used += more && part.errorCode === ERROR.NONE ? Math.max(bytes, entry.maxBytes) : bytes;
    }
  }
  return roomy;
}


const CONTROL = 0x20;
const TRANSACTIONAL = 0x10;

/** Copies `bytes` out of the fetch answer, so that a held record does not keep the whole answer alive. */
const own = (bytes: Buffer | null | undefined): Buffer | null => (bytes === null || bytes === undefined ? null : Buffer.from(bytes));

/**
 * A header name's or value's text (undefined: not UTF-8, which alone is not written back
 * as the same bytes); the string read at its position before when the bytes are the same
 * (docs/benchmarks.md#figures-behind-the-code).
 */
const namesAt: string[] = [], valuesAt: string[] = [];
function textAt(seen: string[], raw: Buffer, at: number): string | undefined {
  const known = seen[at];
  let same = known !== undefined && known.length === raw.length;
  for (let i = 0; same && i < raw.length; i++) same = known!.charCodeAt(i) === raw[i];
  if (same) return known;
  let ascii = true;
  for (let i = 0; ascii && i < raw.length; i++) ascii = raw[i]! < 0x80;
  if (!ascii) return isUtf8(raw) ? raw.toString('utf8') : undefined;
  const text = raw.toString('latin1');
  if (at < 16 && raw.length <= 64) seen[at] = text;
  return text;
}

const EXACT = BigInt(Number.MAX_SAFE_INTEGER);
/** `base + delta` in decimal, added as doubles where they are exact (offsets and epoch ms are): no BigInt made per record. */
function sumText(base: bigint, delta: number | bigint): string {
  const sum = Number(base) + Number(delta);
  return base <= EXACT && base >= -EXACT && Number.isSafeInteger(sum) ? String(sum) : (base + BigInt(delta)).toString();
}

type AnswerBatch = NonNullable<FetchAnswerPartition['records']>[number];

/**
 * Walks the batches of one partition's answer that end at or after `from`, handing over
 * those a reader keeps (control batches, and aborted transactions' records when reading
 * committed, left out), and gives back the position after the last batch. Pure.
 */
function walkBatches(from: bigint, part: FetchAnswerPartition, readCommitted: boolean, keep: (batch: AnswerBatch) => void): bigint {
  let next = from;
  const aborted = readCommitted ? [...(part.abortedTransactions ?? [])].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1)) : [];
  const abortedProducers = new Set<bigint>();
  for (const batch of part.records ?? []) {
    const last = batch.firstOffset + BigInt(batch.lastOffsetDelta);
    if (last < next) continue;
    const after = last + 1n;
    if (readCommitted) while (aborted.length > 0 && aborted[0]!.firstOffset <= last) abortedProducers.add(aborted.shift()!.producerId);
    if ((batch.attributes & CONTROL) !== 0) {
      abortedProducers.delete(batch.producerId);
      next = after;
      continue;
    }
    if (readCommitted && (batch.attributes & TRANSACTIONAL) !== 0 && abortedProducers.has(batch.producerId)) {
      next = after;
      continue;
    }
    keep(batch);
    next = after;
  }
  return next;
}

/**
 * The records of one partition's answer at or after `from` (only the first batch may hold
 * some before it), and the position after the last batch (control batches and aborted
 * transactions' records skipped, their offsets passed). Pure.
 */
export function decodeRecords(topic: string, partition: number, from: bigint, part: FetchAnswerPartition, readCommitted: boolean): { records: InboundRecord[]; next: bigint } {
  const records: InboundRecord[] = [];
  const next = walkBatches(from, part, readCommitted, (batch) => {
    const skip = from > batch.firstOffset ? Number(from - batch.firstOffset) : 0;
    for (const r of batch.records) {
      if (r.offsetDelta < skip) continue;
      let headers: RecordHeaders | undefined;
      if (r.headers.length > 0) {
        headers = {};
        for (let at = 0; at < r.headers.length; at++) {
          const [rawName, rawValue] = r.headers[at]!;
          const name = rawName === null ? '' : (textAt(namesAt, rawName, at) ?? rawName.toString());
          const value = rawValue === null ? '' : (textAt(valuesAt, rawValue, at) ?? Buffer.from(rawValue));
          const known = headers[name];
          if (known === undefined) headers[name] = value;
          else if (Array.isArray(known)) known.push(value);
          else headers[name] = [known, value];
        }
      }
      records.push({ topic, partition, offset: sumText(batch.firstOffset, r.offsetDelta), key: own(r.key), value: own(r.value), headers, timestamp: sumText(batch.firstTimestamp, r.timestampDelta) });
    }
  });
  return { records, next };
}

/**
 * The offsets at or after `from` of the records a reader keeps (read committed: neither
 * markers nor aborted transactions' records), and the position after the last batch;
 * nothing of the records copied. Pure.
 */
export function recordOffsets(from: bigint, part: FetchAnswerPartition): { offsets: bigint[]; next: bigint } {
  const offsets: bigint[] = [];
  const next = walkBatches(from, part, true, (batch) => {
    for (const r of batch.records) {
      const offset = batch.firstOffset + BigInt(r.offsetDelta);
      if (offset >= from) offsets.push(offset);
    }
  });
  return { offsets, next };
}
