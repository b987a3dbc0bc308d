// `switchyard replay --destination ID [--limit N]`: moves dead letters back to
// `deliveries.<id>` with fresh attempt headers.
import type { Consumer, EachBatchPayload, Producer } from '../kafka/index.js';
import { createProducer, ensureTopics, topicNames } from '../kafka/index.js';
import type { RoleDeps } from '../runtime/deps.js';
import { runAll } from '../runtime/service.js';
import { replayHeaders } from './envelope.js';

export interface ReplayOptions {
  destinationId: string;
  /** Move at most this many (oldest first, per partition). */
  limit?: number;
  /** Give up when nothing moved for this long (the group never joined, the broker went away). */
  stallTimeoutMs?: number;
}

/** The replay's consumer group: `<clientId>-replay-<destinationId>`. */
export function replayGroupId(clientId: string, destinationId: string): string {
  return `${clientId}-replay-${destinationId}`;
}

/**
 * Moves the dead letters that are in the DLQ now (up to its high watermarks, read
 * first, so the command ends even while new dead letters arrive) back for delivery, and
 * returns how many it moved. Its position is committed in its own group after each
 * write is acknowledged, so a second replay does not move the same letters again, and a
 * replay that dies half-way moves some at most twice, never loses one.
 */
export async function replayDeadLetters(deps: RoleDeps, options: ReplayOptions): Promise<number> {
  const config = deps.config.current();
  const names = topicNames(config.kafka.topicPrefix);
  const dlq = names.dlq(options.destinationId);
  const target = names.deliveries(options.destinationId);
  const groupId = replayGroupId(config.kafka.clientId, options.destinationId);
  const logger = deps.logger.child({ component: 'replay', destination: options.destinationId });
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const stallTimeoutMs = options.stallTimeoutMs ?? 60_000;

  const admin = deps.kafka.admin();
  let producer: Producer | undefined;
  let consumer: Consumer | undefined;
  try {
    await admin.connect();
    await ensureTopics(admin, [{ topic: target }, { topic: dlq }], {
      partitions: config.kafka.partitions,
      replicationFactor: config.kafka.replicationFactor,
    });
    const ends = await admin.fetchTopicOffsets(dlq);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [dlq] });
    const committedBy = new Map((committed?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    // Per partition, the offset the replay must reach: the high watermark now.
    const pending = new Map<number, bigint>();
    for (const end of ends) {
      const low = BigInt(end.low);
      const done = committedBy.get(end.partition) ?? -1n;
      const from = done < low ? low : done;
      if (BigInt(end.high) > from) pending.set(end.partition, BigInt(end.high));
    }
    if (pending.size === 0 || limit <= 0) {
      logger.info({ dlq }, 'no dead letters to replay');
      return 0;
    }

    producer = createProducer(deps.kafka);
    await producer.connect();
    const out = producer;
    let moved = 0;
    let lastProgress = Date.now();
    let finish: (error?: unknown) => void = () => undefined;
    const finished = new Promise<void>((resolve, reject) => {
      finish = (error) => (error === undefined ? resolve() : reject(error));
    });
    const complete = () => pending.size === 0 || moved >= limit;

    const eachBatch = async ({ batch, resolveOffset, commitOffsetsIfNecessary }: EachBatchPayload): Promise<void> => {
      const end = pending.get(batch.partition);
      if (end === undefined || complete()) return;
      const eligible = batch.messages.filter((m) => BigInt(m.offset) < end);
      const take = eligible.slice(0, limit - moved);
      if (take.length > 0) {
        await out.send({
          topic: target,
          acks: -1,
          messages: take.map((m) => ({ key: m.key, value: m.value, headers: replayHeaders(m.headers) })),
        });
        const next = String(BigInt(take[take.length - 1]!.offset) + 1n);
        // NOTE: committed only after the broker acknowledged the writes above.
        await commitOffsetsIfNecessary({ topics: [{ topic: dlq, partitions: [{ partition: batch.partition, offset: next }] }] });
        resolveOffset(take[take.length - 1]!.offset);
        moved += take.length;
        lastProgress = Date.now();
      }
      // Done with the partition once everything below its end was moved.
      if (take.length === eligible.length && BigInt(batch.lastOffset()) + 1n >= end) pending.delete(batch.partition);
      if (complete()) finish();
    };

    const c = deps.kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 500 });
    consumer = c;
    c.on(c.events.CRASH, (event) => {
      if (!event.payload.restart) finish(event.payload.error);
    });
    await c.connect();
    await c.subscribe({ topics: [dlq], fromBeginning: true });
    await c.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch });

    const watchdog = setInterval(() => {
      if (Date.now() - lastProgress > stallTimeoutMs) {
        finish(new Error(`replay of ${dlq} made no progress for ${stallTimeoutMs} ms (moved ${moved} so far); check that the broker is reachable and run it again`));
      }
    }, 1_000);
    try {
      await finished;
    } finally {
      clearInterval(watchdog);
    }
    logger.info({ moved, from: dlq, to: target }, 'dead letters replayed');
    return moved;
  } finally {
    await runAll([async () => consumer?.disconnect(), async () => producer?.disconnect(), () => admin.disconnect()]);
  }
}
