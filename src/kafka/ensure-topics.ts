import { TopicsNotCreatedError, TopicsNotReadyError } from '../errors.js';
import type { TopicFailure } from '../errors.js';
import { errorChain, isRetriable } from './commit.js';
import { ERROR, errorName, isRetriableCode } from './wire.js';

export interface TopicSpec {
  topic: string;
  compacted?: boolean;
}

// NOTE: right after a create, a busy broker can answer metadata for the new topics with
// UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE, and a produce that races the leader
// election fails with errors a client's bounded retries may not outlast. So the wait for
// leaders is done here, patiently, until each new partition's leader answers.
const LEADER_WAIT_MS = 30_000;
const LEADER_POLL_MS = 100;

/** Partitions per CreateTopics request, at most (a larger topic alone). NOTE: a KRaft controller refuses over 10,000 (KAFKA-17870); half keeps each leader wait short. */
export const MAX_PARTITIONS_PER_CREATE = 5_000;
/** Tries of a request the broker refused as transient (NOT_CONTROLLER, a timeout, the connection lost). */
const CREATE_TRIES = 5;
const CREATE_TIMEOUT_MS = 30_000;

/** What failed, with the errors a client's aggregate wraps (`createTopics failed 9 times.` says nothing alone). */
function messageOf(error: unknown): string {
  const messages: string[] = [];
  for (const e of errorChain(error)) {
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && message !== '' && !messages.includes(message)) messages.push(message);
  }
  return messages.length > 0 ? messages.join(': ') : String(error);
}

/** A CreateTopics answer's topics, as @platformatic/kafka's ResponseError carries them (the last try's). */
interface CreateAnswerTopic {
  name: string;
  errorCode: number;
  errorMessage?: string | null;
}

function answeredTopics(error: unknown): CreateAnswerTopic[] | undefined {
  let found: CreateAnswerTopic[] | undefined;
  for (const e of errorChain(error)) {
    const topics = (e as { response?: { topics?: unknown } }).response?.topics;
    if (Array.isArray(topics) && topics.every((t) => typeof (t as { name?: unknown }).name === 'string' && typeof (t as { errorCode?: unknown }).errorCode === 'number')) {
      found = topics as CreateAnswerTopic[];
    }
  }
  return found;
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
  const answered = answeredTopics(error);
  if (answered !== undefined) {
    const byName = new Map(answered.map((t) => [t.name, t]));
    const outcome: CreateOutcome = { exist: [], again: [], failed: [] };
    for (const topic of topics) {
      const answer = byName.get(topic);
      if (answer === undefined) outcome.again.push(topic); // not in the answer: asked again (made meanwhile, it answers TOPIC_ALREADY_EXISTS)
      else if (answer.errorCode === ERROR.NONE || answer.errorCode === ERROR.TOPIC_ALREADY_EXISTS) outcome.exist.push(topic);
      else if (isRetriableCode(answer.errorCode)) outcome.again.push(topic);
      else outcome.failed.push({ topic, reason: `${errorName(answer.errorCode)}: ${answer.errorMessage ?? 'refused by the broker'}`, retriable: false });
    }
    return outcome;
  }
  if (isRetriable(error)) return { exist: [], again: [...topics], failed: [] };
  return { exist: [], again: [], failed: topics.map((topic) => ({ topic, reason: messageOf(error), retriable: false })) };
}

/** What ensureTopics needs of the cluster (admin.ts gives it @platformatic/kafka's Admin and wire.ts). */
export interface TopicMaker {
  /** The names of the topics that exist. */
  listTopics(): Promise<string[]>;
  /** One CreateTopics request for topics of one layout and cleanup policy; throws as the client does when the broker refuses any. */
  createTopics(topics: readonly string[], layout: { partitions: number; replicationFactor: number; compacted: boolean; timeoutMs: number }): Promise<void>;
  /** Each topic's metadata error code and its partitions' leaders (-1: none yet). */
  leaders(topics: readonly string[]): Promise<Map<string, { errorCode: number; partitions: readonly { leader: number }[] }>>;
  /** Asks every partition's leader for its log ends (one request per leader). */
  partitionEnds(topics: readonly string[]): Promise<unknown>;
}

/**
 * Creates the topics that do not exist yet, in requests of at most MAX_PARTITIONS_PER_CREATE
 * partitions, again where the broker refuses as transient, and waits for their leaders.
 * Returns those created; throws TopicsNotCreatedError naming those it could not make.
 */
export async function ensureTopics(
  maker: TopicMaker,
  specs: TopicSpec[],
  options: { partitions: number; replicationFactor: number },
  sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
): Promise<string[]> {
  const existing = new Set(await maker.listTopics());
  const missing = specs.filter((spec) => !existing.has(spec.topic));
  if (missing.length === 0) return [];
  const created: string[] = [];
  const failed: TopicFailure[] = [];
  for (const chunk of createChunks(missing, options.partitions)) {
    const bySpec = new Map(chunk.map((spec) => [spec.topic, spec]));
    let pending = chunk.map((spec) => spec.topic);
    const made: string[] = [];
    for (let attempt = 1; pending.length > 0; attempt++) {
      // NOTE: one request per cleanup policy: the client sets one configuration for every topic of a request.
      const outcomes = await Promise.all(
        [true, false].map(async (compacted) => {
          const topics = pending.filter((topic) => (bySpec.get(topic)!.compacted ?? false) === compacted);
          if (topics.length === 0) return { outcome: createOutcome([], undefined), refusal: undefined };
          let refusal: unknown;
          try {
            await maker.createTopics(topics, { partitions: options.partitions, replicationFactor: options.replicationFactor, compacted, timeoutMs: CREATE_TIMEOUT_MS });
          } catch (error) {
            refusal = error;
          }
          return { outcome: createOutcome(topics, refusal), refusal };
        }),
      );
      const refusal = outcomes.find((o) => o.refusal !== undefined)?.refusal;
      const outcome: CreateOutcome = { exist: outcomes.flatMap((o) => o.outcome.exist), again: outcomes.flatMap((o) => o.outcome.again), failed: outcomes.flatMap((o) => o.outcome.failed) };
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
      await waitForLeaders(maker, made);
      created.push(...made);
    } catch (error) {
      failed.push(...made.map((topic) => ({ topic, reason: messageOf(error), retriable: true })));
    }
  }
  if (failed.length > 0) throw new TopicsNotCreatedError(failed, created);
  return created;
}

async function waitForLeaders(maker: TopicMaker, topics: string[]): Promise<void> {
  const deadline = Date.now() + LEADER_WAIT_MS;
  let lastError: unknown;
  for (;;) {
    try {
      const found = await maker.leaders(topics);
      const led = topics.every((topic) => {
        const t = found.get(topic);
        return t !== undefined && t.errorCode === ERROR.NONE && t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0);
      });
      if (led) {
        // NOTE: a leader in the metadata can still refuse requests for a moment (KRaft
        // publishes it before the partition is loaded): asked for the offsets, one
        // request per leader (topic-ends.ts), it meets the check a produce would.
        await maker.partitionEnds(topics);
        return;
      }
    } catch (error) {
      if (!isRetriable(error)) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const why = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new TopicsNotReadyError(`created topics ${topics.slice(0, 5).join(', ')}${topics.length > 5 ? ` and ${topics.length - 5} more` : ''} but they have no leader after ${LEADER_WAIT_MS} ms${why}; check the brokers' health`, { cause: lastError });
    }
    await new Promise((resolve) => setTimeout(resolve, LEADER_POLL_MS));
  }
}

