// The port's consumer: runs a group member and hands the role batches of records. The
// role marks what it finished (`markDone`, after its writes were acknowledged); the
// runtime heartbeats and commits, until the commit is done (commit.ts). Roles never
// call kafkajs's heartbeat, resolveOffset or commit themselves.
//
// Two runtimes, one contract: on @platformatic/kafka (consumer-platformatic.ts) when the
// client says so, else on kafkajs (below).
import type { Consumer, EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { Logger } from 'pino';
import { kafkajsOf } from './client.js';
import type { KafkaClient } from './client.js';
import { commitUntilDone } from './commit.js';
import type { BatchHandler, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from './consumer-contract.js';
import { startPlatformaticConsumer } from './consumer-platformatic.js';
import { Rejoiner } from './crash-restart.js';
import { ForeignAssignment, foreignTopics } from './foreign-assignment.js';
import { offsetAfter } from './records.js';
import type { InboundRecord, RecordHeaders } from './records.js';

export type { BatchHandler, CommitPolicy, ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from './consumer-contract.js';

/**
 * How often a batch that runs long heartbeats.
 * NOTE: kafkajs only sends a heartbeat when its interval passed, so calling often is cheap.
 */
const BATCH_TICK_MS = 1_000;

/** Starts a group member on `settings.topics`; resolves once it runs (the join follows). */
export async function startConsumer(
  client: KafkaClient,
  settings: ConsumerSettings,
  handler: BatchHandler,
  events: ConsumerEvents,
  logger: Logger,
): Promise<RunningConsumer> {
  if (client.kind === 'platformatic') return startPlatformaticConsumer(client, settings, handler, events, logger);
  const rejoiner = new Rejoiner(
    async () => {
      await consumer.connect();
      await consumer.run(runArgs);
    },
    logger,
    `consumer group ${settings.groupId}`,
  );
  const consumer = kafkajsOf(client).consumer({
    groupId: settings.groupId,
    allowAutoTopicCreation: false,
    retry: rejoiner.retry(),
    ...(settings.maxBytesPerPartition !== undefined ? { maxBytesPerPartition: settings.maxBytesPerPartition } : {}),
    ...(settings.maxBytes !== undefined ? { maxBytes: settings.maxBytes } : {}),
    ...(settings.maxWaitTimeInMs !== undefined ? { maxWaitTimeInMs: settings.maxWaitTimeInMs } : {}),
    ...(settings.minBytes !== undefined ? { minBytes: settings.minBytes } : {}),
  });
  const state: RunState = { stopping: false };
  const runArgs = {
    eachBatchAutoResolve: false,
    autoCommit: false,
    partitionsConsumedConcurrently: settings.partitionsConsumedConcurrently ?? 1,
    eachBatch: (payload: EachBatchPayload) => runBatch(payload, settings, handler, state, logger),
  };
  const foreign = new ForeignAssignment(settings.groupId, logger);
  listen(consumer, events, rejoiner, foreign);
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...settings.topics], fromBeginning: settings.fromBeginning });
    await consumer.run(runArgs);
  } catch (error) {
    // The caller gets no handle to stop it with: leave nothing connected behind.
    await rejoiner.stop();
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }
  return {
    assignmentProblem: () => foreign.notReady(),
    async stop() {
      state.stopping = true;
      await rejoiner.stop();
      await consumer.stop();
    },
    async disconnect() {
      state.stopping = true;
      await rejoiner.stop();
      await consumer.disconnect();
    },
  };
}

/** The role's events; a crash that `rejoiner` takes care of is reported as one with a restart. */
function listen(consumer: Consumer, events: ConsumerEvents, rejoiner: Rejoiner, foreign: ForeignAssignment): void {
  const { onJoin, onCrash, onStop, onFetch } = events;
  // NOTE: kafkajs drops the topics it was assigned but does not subscribe to (with a
  // warning) before it tells of the join; this event, sent just before, names them.
  let unsubscribed: string[] = [];
  consumer.on(consumer.events.RECEIVED_UNSUBSCRIBED_TOPICS, (event) => {
    unsubscribed = foreignTopics(event.payload.assignedTopics, event.payload.topicsSubscribed);
  });
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    rejoiner.joined();
    foreign.joined(unsubscribed);
    unsubscribed = [];
    onJoin?.(event.payload.memberAssignment, event.payload.memberId);
  });
  consumer.on(consumer.events.CRASH, (event) => {
    onCrash?.(event.payload.error, rejoiner.crashed(event.payload.error));
  });
  if (onStop) consumer.on(consumer.events.STOP, () => onStop());
  if (onFetch) consumer.on(consumer.events.FETCH, () => onFetch());
}

interface RunState {
  stopping: boolean;
}

function toRecord(topic: string, partition: number, message: KafkaMessage): InboundRecord {
  return {
    topic,
    partition,
    offset: message.offset,
    key: message.key,
    value: message.value,
    headers: message.headers as RecordHeaders | undefined,
    timestamp: message.timestamp,
  };
}

/** One batch: the handler, the in-batch heartbeat, then the commit of what is done. */
async function runBatch(payload: EachBatchPayload, settings: ConsumerSettings, handler: BatchHandler, state: RunState, logger: Logger): Promise<void> {
  const { batch } = payload;
  const last = batch.messages[batch.messages.length - 1];
  if (last === undefined || payload.isStale()) return;
  const owned = () => !state.stopping && payload.isRunning() && !payload.isStale();
  let refused = false;
  let doneThrough: string | undefined;
  const records = batch.messages.map((m) => toRecord(batch.topic, batch.partition, m));
  const view: RecordBatch = {
    topic: batch.topic,
    partition: batch.partition,
    records,
    async markDone(offset) {
      payload.resolveOffset(offset);
      doneThrough = offset;
      // kafkajs has no background heartbeat: a long batch must send its own.
      await payload.heartbeat();
    },
    stillOwned: () => !refused && owned(),
  };
  const tick = setInterval(() => {
    payload.heartbeat().catch((error: unknown) => {
      // A rebalance: the role finishes what runs, starts nothing new, kafkajs rejoins.
      refused = true;
      logger.debug({ err: error }, 'heartbeat refused; finishing the batch early');
    });
  }, BATCH_TICK_MS);
  let failure: unknown;
  try {
    await handler(view);
  } catch (error) {
    failure = error;
  } finally {
    clearInterval(tick);
  }
  if (failure !== undefined) throw failure;
  await commitDone(payload, settings, doneThrough, last.offset, owned, logger);
}

async function commitDone(
  payload: EachBatchPayload,
  settings: ConsumerSettings,
  doneThrough: string | undefined,
  lastMessage: string,
  owned: () => boolean,
  logger: Logger,
): Promise<void> {
  const { batch } = payload;
  if (settings.commit.kind === 'none' || doneThrough === undefined) return;
  const offsets = { topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: commitOffset(doneThrough, lastMessage, batch.lastOffset()) }] }] };
  // NOTE: retried while the partition is ours: the records are resolved, so a commit
  // lost here would not come back while the partition is quiet (commit.ts).
  await commitUntilDone(() => payload.commitOffsetsIfNecessary(offsets), {
    stillOwned: owned,
    logger,
    what: `${batch.topic} partition ${batch.partition}`,
  });
}

/**
 * The offset to commit once every record of a batch up to and including
 * `lastDone` is acknowledged downstream.
 *
 * NOTE: when `lastDone` is the batch's last message, commit past the batch's last
 * offset instead, which can be higher: kafkajs filters the control records that
 * transactional producers write (and aborted records) out of `batch.messages`, and
 * a commit that stopped before them would leave the group's lag stuck above zero.
 */
export function commitOffset(lastDone: string, lastMessage: string, batchLastOffset: string): string {
  if (lastDone === lastMessage && BigInt(batchLastOffset) > BigInt(lastDone)) return offsetAfter(batchLastOffset);
  return offsetAfter(lastDone);
}
