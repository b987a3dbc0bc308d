// `switchyard replay --destination ID [--since TIME] [--until TIME] [--limit N] [--dry-run]`
// and `replay --destination ID --message MID`: moves dead letters back to
// `deliveries.<id>` with fresh attempt headers.
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import { ReplayLedgerFullError } from '../../errors.js';
import { createAdmin, createProducer } from '../../kafka/index.js';
import type { KafkaAdmin, OutboundRecord, RecordProducer } from '../../kafka/index.js';
import type { RoleDeps } from '../../runtime/deps.js';
import { runAll } from '../../runtime/service.js';
import { inTimeRange, readDeadLetter } from './dead-letters.js';
import type { DeadLetter, TimeRange } from './dead-letters.js';
import { replayHeaders } from '../envelope.js';
import { MAX_LEDGER_METADATA_CHARS, isDone, ledgerMetadata, markDone, readLedger } from './replay-ledger.js';
import type { OffsetRange, ReplayLedger } from './replay-ledger.js';
import { legacyGroupIds, replayDryRunGroupId, replayGroupId } from '../../runtime/group-ids.js';
import { carryGroupCommits, readCommitsAcross } from '../../runtime/group-upgrade.js';
import { scanTopic } from './scan-topic.js';
import type { ScannedBatch } from './scan-topic.js';
import { createTopology } from '../../runtime/topology.js';

export interface ReplayOptions {
  destinationId: string;
  /** Move at most this many (oldest first, per partition). */
  limit?: number | undefined;
  /** Only letters dead-lettered in this range (`last-attempt-at`, else the record time). */
  range?: TimeRange | undefined;
  /** Only letters of this messageId (`replay --message`; with `limit` 1, one letter). */
  messageId?: string | undefined;
  /** Find and report the letters, move none, record nothing. */
  dryRun?: boolean | undefined;
  /** Told of each letter once it is moved (once the broker acknowledged it), or found in a dry run. */
  onLetter?: ((letter: DeadLetter) => void) | undefined;
  /** Checked between batches: true ends the replay early (the output went away). */
  shouldStop?: (() => boolean) | undefined;
  /** Give up when nothing moved for this long (the group never joined, the broker went away). */
  stallTimeoutMs?: number | undefined;
}

/** The replay's consumer group (`<groupPrefix>replay.<destination id>`): named in src/runtime/group-ids.ts. */
export { replayGroupId } from '../../runtime/group-ids.js';

/**
 * The replay group of a destination, then the name older versions gave it: a partition
 * the first never committed is read from the second (an upgrade not carried over yet).
 */
export function replayGroups(config: Config, destinationId: string): [string, string] {
  return [replayGroupId(config, destinationId), legacyGroupIds.replay(config, destinationId)];
}

/** Where each DLQ partition's replay stands, from the commits of the replay group (`groups`: its name, then older ones). */
export async function readReplayLedgers(
  admin: KafkaAdmin,
  groups: readonly string[],
  dlq: string,
): Promise<{ ledgers: Map<number, ReplayLedger>; lows: Map<number, bigint>; highs: Map<number, bigint> }> {
  const ends = await admin.partitionEnds(dlq);
  const [committed] = await readCommitsAcross(admin, groups, [dlq]);
  const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, p]));
  const ledgers = new Map<number, ReplayLedger>();
  const lows = new Map<number, bigint>();
  const highs = new Map<number, bigint>();
  for (const end of ends) {
    const commit = byPartition.get(end.partition);
    ledgers.set(end.partition, readLedger(commit?.offset, commit?.metadata, BigInt(end.low)));
    lows.set(end.partition, BigInt(end.low));
    highs.set(end.partition, BigInt(end.high));
  }
  return { ledgers, lows, highs };
}

/**
 * Moves the dead letters that are in the DLQ now (up to its high watermarks, read
 * first, so the command ends even while new dead letters arrive) back for delivery, and
 * returns how many it moved (or, in a dry run, would move).
 *
 * What was moved is committed in the replay group after each write is acknowledged, as
 * a ledger (replay-ledger.ts): a second replay does not move the same letters again, a
 * ranged replay never makes a later one skip the letters it left out, and a replay that
 * dies half-way moves some at most twice, never loses one.
 */
export async function replayDeadLetters(deps: RoleDeps, options: ReplayOptions): Promise<number> {
  const replay = new DeadLetterReplay(deps, options);
  try {
    return await replay.run();
  } finally {
    await replay.close();
  }
}

/** One run of `switchyard replay`: from the DLQ of one destination to its `deliveries` topic. */
class DeadLetterReplay {
  private readonly config: Config;
  private readonly dlq: string;
  private readonly target: string;
  private readonly groupId: string;
  /** A dry run reads with a group of its own that never commits, from the beginning. */
  private readonly scanGroup: string;
  private readonly logger: Logger;
  private readonly limit: number;
  private readonly range: TimeRange;
  private readonly dryRun: boolean;
  private readonly admin: KafkaAdmin;
  /** Undefined in a dry run: nothing is written. */
  private producer: RecordProducer | undefined;
  private ledgers = new Map<number, ReplayLedger>();
  private moved = 0;

  constructor(
    private readonly deps: RoleDeps,
    private readonly options: ReplayOptions,
  ) {
    this.config = deps.config.current();
    const { names } = createTopology(this.config.kafka.topicPrefix);
    this.dlq = names.dlq(options.destinationId);
    this.target = names.deliveries(options.destinationId);
    this.groupId = replayGroupId(this.config, options.destinationId);
    this.logger = deps.logger.child({ component: 'replay', destination: options.destinationId });
    this.limit = options.limit ?? Number.POSITIVE_INFINITY;
    this.range = options.range ?? {};
    this.dryRun = options.dryRun === true;
    this.admin = createAdmin(deps.kafka);
    this.scanGroup = this.dryRun ? replayDryRunGroupId(this.config, options.destinationId) : this.groupId;
  }

  async run(): Promise<number> {
    const ends = await this.findEnds();
    if (ends === undefined) return 0;
    if (ends.size === 0 || this.limit <= 0) {
      this.logger.info({ dlq: this.dlq }, 'no dead letters to replay');
      return 0;
    }
    if (!this.dryRun) {
      this.producer = createProducer(this.deps.kafka);
      await this.producer.connect();
    }
    await scanTopic(this.deps.kafka, { topic: this.dlq, groupId: this.scanGroup, ends, onBatch: (batch) => this.moveBatch(batch), stallTimeoutMs: this.options.stallTimeoutMs });
    const { moved, dryRun } = this;
    this.logger.info({ moved, from: this.dlq, to: this.target, dryRun }, dryRun ? 'dead letters found for a replay (dry run: none moved)' : 'dead letters replayed');
    return moved;
  }

  async close(): Promise<void> {
    const { admin, scanGroup } = this;
    await runAll([async () => this.producer?.disconnect(), async () => (this.dryRun ? forgetGroup(admin, scanGroup) : undefined), () => admin.disconnect()]);
  }

  /** The partitions with letters not yet replayed, and where they end now; undefined when a dry run finds no DLQ. */
  private async findEnds(): Promise<Map<number, bigint> | undefined> {
    await this.admin.connect();
    if (this.dryRun) {
      if (!(await this.admin.listTopics()).includes(this.dlq)) return undefined;
    } else {
      await this.admin.ensureTopics([{ topic: this.target }, { topic: this.dlq }], this.config.kafka);
    }
    const groups = replayGroups(this.config, this.options.destinationId);
    // NOTE: before the scan joins the group: an upgrade's first replay carries the ledger
    // of the old group name over, so nothing replayed before is moved again.
    if (!this.dryRun) await carryGroupCommits(this.admin, { to: this.groupId, from: groups.slice(1), topics: [this.dlq], logger: this.logger });
    const { ledgers, highs } = await readReplayLedgers(this.admin, groups, this.dlq);
    this.ledgers = ledgers;
    return new Map([...highs].filter(([partition, high]) => high > ledgers.get(partition)!.position));
  }

  private async moveBatch(batch: ScannedBatch): Promise<'more' | 'stop'> {
    const ledger = this.ledgers.get(batch.partition)!;
    const { take, done } = selectLetters(batch, ledger, { range: this.range, messageId: this.options.messageId }, this.limit - this.moved);
    const out = this.producer;
    if (out !== undefined && (take.length > 0 || done.length > 0)) {
      const next = markDone(ledger, [...take.map((t): OffsetRange => [t.letter.offset, t.letter.offset]), ...done]);
      const metadata = ledgerMetadata(next);
      if (metadata.length > MAX_LEDGER_METADATA_CHARS) throw new ReplayLedgerFullError(this.dlq, batch.partition, this.options.destinationId);
      if (take.length > 0) {
        await out.send([{ topic: this.target, messages: take.map((t) => t.message) }]);
      }
      // NOTE: committed only after the broker acknowledged the writes above.
      await batch.commit(next.position, metadata);
      this.ledgers.set(batch.partition, next);
    }
    for (const t of take) this.options.onLetter?.(t.letter);
    this.moved += take.length;
    return this.moved >= this.limit || this.options.shouldStop?.() === true ? 'stop' : 'more';
  }
}

export interface Selected {
  letter: DeadLetter;
  message: OutboundRecord;
}

/**
 * The letters of a batch to move (in the range, of the messageId when one is given, not
 * moved before, up to `room`), and the offsets of the batch that hold no letter
 * (transaction markers, aborted records: dealt with too). NOTE: a letter left out by the
 * range or the messageId is not marked: a later replay still moves it (replay-ledger.ts).
 * And offsets without a letter are marked only where they join what is dealt with (they
 * follow a letter moved now or before): otherwise each marker between letters left out
 * would be a range of its own in the ledger, which holds a few hundred at most.
 */
export function selectLetters(
  batch: Pick<ScannedBatch, 'records' | 'from' | 'to'>,
  ledger: ReplayLedger,
  which: { range: TimeRange; messageId: string | undefined },
  room: number,
): { take: Selected[]; done: OffsetRange[] } {
  const { range, messageId } = which;
  const take: Selected[] = [];
  const done: OffsetRange[] = [];
  let expected = batch.from;
  // Whether the offset before `expected` is dealt with (by the ledger, or in this batch).
  let previousDone = expected === 0n || isDone(ledger, expected - 1n);
  const noLetterUpTo = (offset: bigint) => {
    if (offset > expected && previousDone) done.push([expected, offset - 1n]);
  };
  for (const record of batch.records) {
    noLetterUpTo(record.offset);
    expected = record.offset + 1n;
    previousDone = isDone(ledger, record.offset);
    if (previousDone || take.length >= room) continue;
    const letter = readDeadLetter(record);
    if (!inTimeRange(range, letter.deadLetteredAtMs)) continue;
    if (messageId !== undefined && letter.messageId !== messageId) continue;
    take.push({ letter, message: { key: record.key, value: record.value, headers: replayHeaders(record.headers) } });
    previousDone = true;
  }
  noLetterUpTo(batch.to);
  return { take, done };
}

export { ReplayLedgerFullError };

/** A throwaway group has no commits, but the broker keeps its entry for a while: remove it. */
export async function forgetGroup(admin: KafkaAdmin, groupId: string): Promise<void> {
  try {
    await admin.deleteGroups([groupId]);
  } catch {
    // Best effort: an empty group without offsets expires by itself.
  }
}
