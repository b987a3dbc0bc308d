// What the audience processor writes for an engine step, in the crash-safe order of
// audience-service.ts (deliveries acknowledged first, then the changelogs), and what
// it reports of it: metrics and log lines.
import type { Logger } from 'pino';
import type { OutboundRecord, RecordProducer, TopicRecords } from '../kafka/index.js';
import { userHashForLog } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { DeletionDone, EngineOutput, PartitionState } from './engine.js';
import type { AudienceTopicNames, TopicNames } from '../runtime/topics.js';

export interface AudienceOutputContext {
  names: TopicNames;
  topics: AudienceTopicNames;
  producer: () => RecordProducer;
  metrics: Metrics;
  logger: Logger;
}

/** Deliveries first, acknowledged; then the changelog. See the NOTE in audience-service.ts. */
export async function publish(context: AudienceOutputContext, state: PartitionState, out: EngineOutput): Promise<void> {
  const { names, topics } = context;
  // NOTE: the producer sends records above the port's size cap in several requests,
  // one after the other, so the order per key is kept.
  if (out.deliveries.length > 0) {
    const byTopic = new Map<string, OutboundRecord[]>();
    for (const d of out.deliveries) {
      const topic = names.deliveries(d.destinationId);
      let list = byTopic.get(topic);
      if (!list) byTopic.set(topic, (list = []));
      list.push({ key: d.key, value: d.value, headers: d.headers });
    }
    await context.producer().send(asTopicRecords(byTopic));
  }
  if (out.writes.size > 0 || out.sourceWrites.size > 0) {
    const changelogs = new Map<string, OutboundRecord[]>();
    for (const [topic, entries] of [
      [topics.profiles, out.writes],
      [topics.userSources, out.sourceWrites],
    ] as const) {
      const writes: OutboundRecord[] = [];
      for (const [key, value] of entries) {
        const deletedAt = topic === topics.userSources ? out.deletedAt.get(key) : undefined;
        writes.push({ key, value, partition: state.partition, ...(deletedAt !== undefined ? { timestamp: String(deletedAt) } : {}) });
      }
      if (writes.length > 0) changelogs.set(topic, writes);
    }
    await context.producer().send(asTopicRecords(changelogs));
  }
  report(context, state, out);
}

function asTopicRecords(byTopic: Map<string, OutboundRecord[]>): TopicRecords[] {
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

/** Metrics and log lines of a published step. */
function report(context: AudienceOutputContext, state: PartitionState, out: EngineOutput): void {
  const { metrics, logger, topics } = context;
  for (const { audience, change } of out.changes) metrics.audienceChanges.inc({ audience, change });
  if (out.repeats > 0) {
    logger.debug({ partition: state.partition, repeats: out.repeats }, 'dropped audience records the router wrote again after a restart');
  }
  for (const problem of out.problems) {
    if (problem.offset !== undefined) {
      logger.error(
        { topic: topics.events, partition: state.partition, offset: problem.offset, error: problem.error },
        `audience record skipped: ${problem.error}; it stays in ${topics.events} for inspection (only the router should write there)`,
      );
    } else {
      logger.error(
        { topic: topics.profiles, partition: state.partition, key: problem.key, error: problem.error },
        `audience profile unreadable in ${topics.profiles}, so left out (the user counts as new): ${problem.error}`,
      );
    }
  }
  for (const deletion of out.deletions) reportDeletion(context, state, deletion);
}

function reportDeletion(context: AudienceOutputContext, state: PartitionState, deletion: DeletionDone): void {
  const { metrics, logger, topics } = context;
  const erased = deletion.hadProfile ? 'audience state erased' : 'no audience state to erase';
  if (deletion.result !== undefined) metrics.deletions.inc({ result: deletion.result });
  if (deletion.kind === 'erase') {
    logger.info({ userHash: userHashForLog(deletion.userId) }, `deleted user: ${erased}`);
  } else if (deletion.result === 'no_affected_source') {
    // NOTE: no user id at info (personal data); the request's place in the topic finds it.
    logger.info(
      { topic: topics.events, partition: state.partition, offset: deletion.offset, affectedSources: deletion.affectedSources },
      `deletion request: no delete sent, no source with an enabled destination has seen the user; ${erased}`,
    );
  } else {
    logger.info(
      { userHash: userHashForLog(deletion.userId), affectedSources: deletion.affectedSources, destinations: deletion.destinations },
      `deletion request done: ${deletion.destinations.length} delete bod${deletion.destinations.length === 1 ? 'y' : 'ies'} queued, ${erased}`,
    );
  }
  if (deletion.unknownSources.length > 0) {
    logger.warn({ userHash: userHashForLog(deletion.userId), unknownSources: deletion.unknownSources }, 'deletion request names sources that are not configured; they were skipped');
  }
}
