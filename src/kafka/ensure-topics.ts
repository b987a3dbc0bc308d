import { TopicsNotCreatedError, TopicsNotReadyError } from '../errors.js';
import type { TopicFailure } from '../errors.js';
import type { Admin } from 'kafkajs';

export interface TopicSpec {
  topic: string;
  compacted?: boolean;
}

// NOTE: right after a create, a busy broker can answer metadata requests for the new
// topics with UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, and kafkajs's own
// wait (createTopics' waitForLeaders) gives up on the first. A produce that races
// the leader election fails with errors kafkajs's bounded retries may not outlast
// (with the idempotent producer we once used it tripped OUT_OF_ORDER_SEQUENCE_NUMBER).
// So the wait for leaders is done here, patiently, until each new partition's leader answers.
const LEADER_WAIT_MS = 30_000;
const LEADER_POLL_MS = 100;

/**
 * Partitions per CreateTopics request, at most (a topic with more goes alone).
 * NOTE: a KRaft controller refuses a request that makes more than 10,000 partitions
 * (PolicyViolationException "Excessively large number of partitions per request",
 * apache/kafka KAFKA-17870): 1,000 destinations of 4 topics at `partitions: 3` made
 * the deliverer exit at start. Half the limit keeps each request's leader wait short.
 */
export const MAX_PARTITIONS_PER_CREATE = 5_000;
/** Tries of a request the broker refused as transient (NOT_CONTROLLER, a timeout, the connection lost). */
const CREATE_TRIES = 5;
const CREATE_TIMEOUT_MS = 30_000;

function isRetriable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === true;
}

/** The broker's error type and kafkajs's text for it: `POLICY_VIOLATION: Request parameters do not satisfy the configured policy`. */
function reasonOf(error: unknown): string {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return typeof type === 'string' ? `${type}: ${messageOf(error)}` : messageOf(error);
}

function messageOf(error: unknown): string {
  const message = typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : undefined;
  return typeof message === 'string' ? message : String(error);
}

/** The specs in requests of at most `maxPartitions` partitions each (in order; a larger topic alone). */
export function createChunks<T>(specs: readonly T[], partitionsEach: number, maxPartitions = MAX_PARTITIONS_PER_CREATE): T[][] {
  const perRequest = Math.max(1, Math.floor(maxPartitions / Math.max(1, partitionsEach)));
  const chunks: T[][] = [];
  for (let i = 0; i < specs.length; i += perRequest) chunks.push(specs.slice(i, i + perRequest));
  return chunks;
}

/** What became of one CreateTopics request's topics: the broker's answer per topic. */
export interface CreateOutcome {
  /** Created, or created by someone else meanwhile (TOPIC_ALREADY_EXISTS). */
  exist: string[];
  /** Refused as transient: worth another request. */
  again: string[];
  failed: TopicFailure[];
}

/** Reads a CreateTopics refusal: per topic when the broker answered per topic, else the whole request. Pure. */
export function createOutcome(topics: readonly string[], error: unknown): CreateOutcome {
  if (error === undefined) return { exist: [...topics], again: [], failed: [] };
  const perTopic = (error as { errors?: unknown }).errors;
  if (Array.isArray(perTopic) && perTopic.every((e) => typeof (e as { topic?: unknown }).topic === 'string')) {
    const refused = new Map(perTopic.map((e) => [(e as { topic: string }).topic, e as unknown]));
    const outcome: CreateOutcome = { exist: [], again: [], failed: [] };
    for (const topic of topics) {
      const refusal = refused.get(topic);
      if (refusal === undefined || (refusal as { type?: unknown }).type === 'TOPIC_ALREADY_EXISTS') outcome.exist.push(topic);
      else if (isRetriable(refusal)) outcome.again.push(topic);
      else outcome.failed.push({ topic, reason: reasonOf(refusal), retriable: false });
    }
    return outcome;
  }
  if (isRetriable(error)) return { exist: [], again: [...topics], failed: [] };
  return { exist: [], again: [], failed: topics.map((topic) => ({ topic, reason: messageOf(error), retriable: false })) };
}

/**
 * Creates the topics that do not exist yet, in requests of at most
 * MAX_PARTITIONS_PER_CREATE partitions, trying again what the broker refuses as
 * transient, and waits until every partition of each request's topics has a leader.
 * Existing topics are left alone (their partition count is the operator's business once
 * created). Returns the topics it created; when some could not be, throws
 * TopicsNotCreatedError naming them, once the others are made.
 */
export async function ensureTopics(
  admin: Admin,
  specs: TopicSpec[],
  options: { partitions: number; replicationFactor: number; partitionEnds?: (topics: string[]) => Promise<unknown> },
  sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  const created: string[] = [];
  const failed: TopicFailure[] = [];
  for (const chunk of createChunks(missing, options.partitions)) {
    const bySpec = new Map(chunk.map((spec) => [spec.topic, spec]));
    let pending = chunk.map((spec) => spec.topic);
    const made: string[] = [];
    for (let attempt = 1; pending.length > 0; attempt++) {
      let refusal: unknown;
      try {
        // Resolves false when another process created them first: fine either way.
        await admin.createTopics({
          waitForLeaders: false,
          timeout: CREATE_TIMEOUT_MS,
          topics: pending.map((topic) => ({
            topic,
            numPartitions: options.partitions,
            replicationFactor: options.replicationFactor,
            configEntries: bySpec.get(topic)!.compacted ? [{ name: 'cleanup.policy', value: 'compact' }] : [],
          })),
        });
      } catch (error) {
        refusal = error;
      }
      const outcome = createOutcome(pending, refusal);
      made.push(...outcome.exist);
      failed.push(...outcome.failed);
      pending = outcome.again;
      if (pending.length > 0 && attempt >= CREATE_TRIES) {
        failed.push(...pending.map((topic) => ({ topic, reason: `refused ${attempt} times as transient: ${messageOf(refusal)}`, retriable: true })));
        break;
      }
      if (pending.length > 0) await sleep(Math.min(5_000, 500 * 2 ** (attempt - 1)));
    }
    if (made.length === 0) continue;
    try {
      await waitForLeaders(admin, made, options.partitionEnds);
      created.push(...made);
    } catch (error) {
      failed.push(...made.map((topic) => ({ topic, reason: messageOf(error), retriable: true })));
    }
  }
  if (failed.length > 0) throw new TopicsNotCreatedError(failed, created);
  return created;
}

async function waitForLeaders(admin: Admin, topics: string[], partitionEnds: ((topics: string[]) => Promise<unknown>) | undefined): Promise<void> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  let lastError: unknown;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics });
      const led = found.length === topics.length && found.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0));
      if (led) {
        // A leader in the metadata can still refuse requests for a moment (KRaft
        // publishes it before the partition is loaded); asking it for the offsets
        // is the same check a produce would meet. NOTE: one request per leader where
        // the port can (topic-ends.ts), not two per topic: thousands of topics at scale.
        if (partitionEnds !== undefined) await partitionEnds(topics);
        else for (const topic of topics) await admin.fetchTopicOffsets(topic);
        return;
      }
    } catch (error) {
      if (!isRetriable(error) && !isNoLeaderYet(error)) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new TopicsNotReadyError(`created topics ${topics.slice(0, 5).join(', ')}${topics.length > 5 ? ` and ${topics.length - 5} more` : ''} but they have no leader after ${LEADER_WAIT_MS} ms${why}; check the brokers' health`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, LEADER_POLL_MS));
  }
}

/** topic-ends.ts says a partition has no leader yet in a plain Error: that is worth waiting for too. */
function isNoLeaderYet(error: unknown): boolean {
  return error instanceof Error && error.message.includes('has no leader right now');
}
