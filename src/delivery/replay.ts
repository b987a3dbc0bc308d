// `switchyard replay --destination ID [--since TIME] [--until TIME] [--limit N] [--dry-run]`:
// moves dead letters back to `deliveries.<id>` with fresh attempt headers.
import { randomBytes } from 'node:crypto';
import { ReplayLedgerFullError } from '../errors.js';
import type { Admin, IHeaders, Producer } from '../kafka/index.js';
import { createKafkajsProducer as createProducer, ensureTopics, kafkajsOf, scanTopic, topicNames } from '../kafka/index.js';
import type { ScannedBatch } from '../kafka/index.js';
import type { RoleDeps } from '../runtime/deps.js';
import { runAll } from '../runtime/service.js';
import { inTimeRange, readDeadLetter } from './dead-letters.js';
import type { DeadLetter, TimeRange } from './dead-letters.js';
import { replayHeaders } from './envelope.js';
import { MAX_LEDGER_METADATA_CHARS, isDone, ledgerMetadata, markDone, readLedger } from './replay-ledger.js';
import type { OffsetRange, ReplayLedger } from './replay-ledger.js';

export interface ReplayOptions {
  destinationId: string;
  /** Move at most this many (oldest first, per partition). */
  limit?: number | undefined;
  /** Only letters dead-lettered in this range (`last-attempt-at`, else the record time). */
  range?: TimeRange | undefined;
  /** Find and report the letters, move none, record nothing. */
  dryRun?: boolean | undefined;
  /** Told of each letter once it is moved (once the broker acknowledged it), or found in a dry run. */
  onLetter?: ((letter: DeadLetter) => void) | undefined;
  /** Checked between batches: true ends the replay early (the output went away). */
  shouldStop?: (() => boolean) | undefined;
  /** Give up when nothing moved for this long (the group never joined, the broker went away). */
  stallTimeoutMs?: number | undefined;
}

/** The replay's consumer group: `<clientId>-replay-<destinationId>`. */
export function replayGroupId(clientId: string, destinationId: string): string {
  return `${clientId}-replay-${destinationId}`;
}

/** Where each DLQ partition's replay stands, from the replay group's commits. */
export async function readReplayLedgers(admin: Admin, groupId: string, dlq: string): Promise<{ ledgers: Map<number, ReplayLedger>; lows: Map<number, bigint>; highs: Map<number, bigint> }> {
  const ends = await admin.fetchTopicOffsets(dlq);
  const [committed] = await admin.fetchOffsets({ groupId, topics: [dlq] });
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
  const config = deps.config.current();
  const names = topicNames(config.kafka.topicPrefix);
  const dlq = names.dlq(options.destinationId);
  const target = names.deliveries(options.destinationId);
  const groupId = replayGroupId(config.kafka.clientId, options.destinationId);
  const logger = deps.logger.child({ component: 'replay', destination: options.destinationId });
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const range = options.range ?? {};
  const dryRun = options.dryRun === true;

  const admin = kafkajsOf(deps.kafka).admin();
  let producer: Producer | undefined;
  // A dry run reads with a group of its own that never commits, from the beginning.
  const scanGroup = dryRun ? `${groupId}-dry-run-${randomBytes(4).toString('hex')}` : groupId;
  try {
    await admin.connect();
    if (dryRun) {
      if (!(await admin.listTopics()).includes(dlq)) return 0;
    } else {
      await ensureTopics(admin, [{ topic: target }, { topic: dlq }], {
        partitions: config.kafka.partitions,
        replicationFactor: config.kafka.replicationFactor,
      });
    }
    const { ledgers, highs } = await readReplayLedgers(admin, groupId, dlq);
    const ends = new Map([...highs].filter(([partition, high]) => high > ledgers.get(partition)!.position));
    if (ends.size === 0 || limit <= 0) {
      logger.info({ dlq }, 'no dead letters to replay');
      return 0;
    }
    if (!dryRun) {
      producer = createProducer(deps.kafka);
      await producer.connect();
    }
    const out = producer;
    let moved = 0;

    const onBatch = async (batch: ScannedBatch): Promise<'more' | 'stop'> => {
      let ledger = ledgers.get(batch.partition)!;
      const { take, done } = selectLetters(batch, ledger, range, limit - moved);
      if (out !== undefined && (take.length > 0 || done.length > 0)) {
        const next = markDone(ledger, [...take.map((t): OffsetRange => [t.letter.offset, t.letter.offset]), ...done]);
        const metadata = ledgerMetadata(next);
        if (metadata.length > MAX_LEDGER_METADATA_CHARS) throw new ReplayLedgerFullError(dlq, batch.partition, options.destinationId);
        if (take.length > 0) {
          await out.send({ topic: target, acks: -1, messages: take.map((t) => t.message) });
        }
        // NOTE: committed only after the broker acknowledged the writes above.
        await batch.commit(next.position, metadata);
        ledger = next;
        ledgers.set(batch.partition, ledger);
        await batch.heartbeat();
      }
      for (const t of take) options.onLetter?.(t.letter);
      moved += take.length;
      return moved >= limit || options.shouldStop?.() === true ? 'stop' : 'more';
    };

    await scanTopic(deps.kafka, { topic: dlq, groupId: scanGroup, ends, onBatch, stallTimeoutMs: options.stallTimeoutMs });
    logger.info({ moved, from: dlq, to: target, dryRun }, dryRun ? 'dead letters found for a replay (dry run: none moved)' : 'dead letters replayed');
    return moved;
  } finally {
    await runAll([async () => producer?.disconnect(), async () => (dryRun ? forgetGroup(admin, scanGroup) : undefined), () => admin.disconnect()]);
  }
}

interface Selected {
  letter: DeadLetter;
  message: { key: Buffer | null; value: Buffer | null; headers: IHeaders };
}

/**
 * The letters of a batch to move (in the range, not moved before, up to `room`), and the
 * offsets between its records that hold no letter (dealt with too).
 */
function selectLetters(batch: ScannedBatch, ledger: ReplayLedger, range: TimeRange, room: number): { take: Selected[]; done: OffsetRange[] } {
  const take: Selected[] = [];
  const done: OffsetRange[] = [];
  let previous: bigint | undefined;
  for (const record of batch.records) {
    if (previous !== undefined && record.offset > previous + 1n) done.push([previous + 1n, record.offset - 1n]);
    previous = record.offset;
    if (isDone(ledger, record.offset) || take.length >= room) continue;
    const letter = readDeadLetter(record);
    if (!inTimeRange(range, letter.deadLetteredAtMs)) continue;
    take.push({ letter, message: { key: record.key, value: record.value, headers: replayHeaders(record.headers) } });
  }
  return { take, done };
}

export { ReplayLedgerFullError };

/** A throwaway group has no commits, but the broker keeps its entry for a while: remove it. */
export async function forgetGroup(admin: Admin, groupId: string): Promise<void> {
  try {
    await admin.deleteGroups([groupId]);
  } catch {
    // Best effort: an empty group without offsets expires by itself.
  }
}
