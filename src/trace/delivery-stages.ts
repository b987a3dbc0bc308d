// The records a trace read of one destination (its topic, retry tiers, dead letters), as
// the stages of each message: which attempt each record stands for, why the last one
// failed, when the next is due, and whether the deliverer's group finished it. Pure:
// the headers are read as the deliverer and `dlq list` read them (src/delivery/envelope.ts,
// src/delivery/dlq/dead-letters.ts), the commit as the deliverer writes it (src/kafka/offset-progress.ts).
import { readAnswers, tracedAnswers } from '../delivery/attempt-history.js';
import { readDeadLetter } from '../delivery/dlq/dead-letters.js';
import { readEnvelope } from '../delivery/envelope.js';
import { decodeFinished } from '../kafka/index.js';
import type { ScannedRecord } from '../kafka/index.js';
import type { DeliveryStage } from './destination-state.js';

/** The deliverer group's commit of one partition: the next offset to read, and the finished ones above it. */
export interface PartitionCommit {
  offset: string;
  metadata: string | null;
}

/** One partition read of one of the destination's topics. */
export interface ReadTopic {
  where: DeliveryStage['where'];
  records: readonly ScannedRecord[];
  /** Undefined for the dead letters (no one consumes them) and for a partition the group never committed. */
  commit?: PartitionCommit | undefined;
}

/** Whether the group's commit says `offset` is done: below the committed offset, or listed above it. */
export function finishedBy(commit: PartitionCommit | undefined): (offset: bigint) => boolean {
  if (commit === undefined) return () => false;
  const base = BigInt(commit.offset);
  if (base < 0n) return () => false;
  const above = new Set(decodeFinished(base, commit.metadata));
  return (offset) => offset < base || above.has(offset);
}

/** The stages of each message id found (records without a message id, in the header or the body, are left out). */
export function stagesByMessage(topics: readonly ReadTopic[]): Map<string, DeliveryStage[]> {
  const stages = new Map<string, DeliveryStage[]>();
  for (const topic of topics) {
    const finished = finishedBy(topic.commit);
    for (const record of topic.records) {
      const seen = readDeadLetter(record);
      if (seen.messageId === null) continue;
      const stage: DeliveryStage = {
        where: topic.where,
        timestampMs: Number(record.timestamp),
        offset: record.offset,
        attemptsMade: seen.attempts ?? 0,
        finished: topic.where !== 'dead_letter' && finished(record.offset),
      };
      if (seen.error !== null) stage.error = seen.error;
      if (topic.where !== 'delivery') {
        const answers = readAnswers(record.headers);
        if (answers.length > 0) stage.history = tracedAnswers(answers);
      }
      if (topic.where === 'retry') stage.dueAtMs = readEnvelope(record.headers).dueAtMs;
      if (topic.where === 'dead_letter') stage.deadLetteredAtMs = seen.deadLetteredAtMs;
      const list = stages.get(seen.messageId);
      if (list === undefined) stages.set(seen.messageId, [stage]);
      else list.push(stage);
    }
  }
  return stages;
}
