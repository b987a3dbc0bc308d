// `switchyard dlq list --destination ID [--since TIME] [--until TIME] [--limit N]`: reads
// the dead letters without consuming them.
import { createAdmin } from '../../kafka/index.js';
import type { RoleDeps } from '../../runtime/deps.js';
import { runAll } from '../../runtime/service.js';
import { OldestLetters, compareByTime, inTimeRange, readDeadLetter } from './dead-letters.js';
import type { DeadLetter, LetterPosition, TimeRange } from './dead-letters.js';
import { isDone } from './replay-ledger.js';
import { forgetGroup, readReplayLedgers, replayGroups } from './replay.js';
import { dlqListGroupId } from '../../runtime/group-ids.js';
import { scanTopic } from './scan-topic.js';
import { createTopology } from '../../runtime/topology.js';

export interface ListOptions {
  destinationId: string;
  range?: TimeRange | undefined;
  limit?: number | undefined;
  /** Only letters of this messageId (`replay --message` looks one up). */
  messageId?: string | undefined;
  /** Only letters after this one in the listing's order (the next page, `GET /v1/dead-letters?cursor=`). */
  after?: LetterPosition | undefined;
  /** Told of each letter listed, oldest first (once the whole range was read); `replayed`: a replay already moved it. */
  onLetter(letter: DeadLetter, replayed: boolean): void;
  /** Checked between batches: true ends the listing early (the output went away). */
  shouldStop?: (() => boolean) | undefined;
  stallTimeoutMs?: number | undefined;
}

export interface ListResult {
  topic: string;
  listed: number;
  /** Letters in the range, listed or left out by the limit. */
  inRange: number;
  /** Of those, the letters after `after` (all of them without it): more than `listed` when another page follows. */
  remaining: number;
  /** False when the DLQ topic does not exist yet: nothing was ever dead-lettered. */
  topicExists: boolean;
}

/**
 * Reads `deliveries.<id>.dlq` up to its high watermarks with a consumer group of its own
 * that never commits (and is deleted afterwards), so the replay group's position and
 * every other reader stay as they were; then lists the letters in the range by time,
 * the `limit` oldest.
 * NOTE: letters are held until the whole range is read, to print them by time (with a
 * limit, at most twice the limit at once): a few hundred bytes each (mostly the error).
 */
export async function listDeadLetters(deps: RoleDeps, options: ListOptions): Promise<ListResult> {
  const config = deps.config.current();
  const topic = createTopology(config.kafka.topicPrefix).names.dlq(options.destinationId);
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const range = options.range ?? {};
  const groupId = dlqListGroupId(config);
  const admin = createAdmin(deps.kafka);
  const letters = new OldestLetters<{ letter: DeadLetter; replayed: boolean }>(limit);
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(topic)) return { topic, listed: 0, inRange: 0, remaining: 0, topicExists: false };
    const { ledgers, lows, highs } = await readReplayLedgers(admin, replayGroups(config, options.destinationId), topic);
    const ends = new Map([...highs].filter(([partition, high]) => high > (lows.get(partition) ?? 0n)));
    if (ends.size === 0 || limit <= 0) return { topic, listed: 0, inRange: 0, remaining: 0, topicExists: true };
    let inRange = 0;
    await scanTopic(deps.kafka, {
      topic,
      groupId,
      ends,
      stallTimeoutMs: options.stallTimeoutMs,
      onBatch: async (batch) => {
        const ledger = ledgers.get(batch.partition);
        for (const record of batch.records) {
          const letter = readDeadLetter(record);
          if (!inTimeRange(range, letter.deadLetteredAtMs)) continue;
          if (options.messageId !== undefined && letter.messageId !== options.messageId) continue;
          inRange += 1;
          if (options.after === undefined || compareByTime(letter, options.after) > 0) letters.add({ letter, replayed: ledger !== undefined && isDone(ledger, record.offset) });
        }
        return options.shouldStop?.() === true ? 'stop' : 'more';
      },
    });
    const oldest = letters.oldest();
    for (const { letter, replayed } of oldest) {
      if (options.shouldStop?.() === true) break;
      options.onLetter(letter, replayed);
    }
    return { topic, listed: oldest.length, inRange, remaining: letters.seen, topicExists: true };
  } finally {
    await runAll([async () => forgetGroup(admin, groupId), () => admin.disconnect()]);
  }
}
