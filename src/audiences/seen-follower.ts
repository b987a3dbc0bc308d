// Keeps the router's seen-pair cache (seen-cache.ts) true to `user.sources`: every
// router process reads each change of that topic as it is written (a group of its
// own, from the end), and drops the pairs a change removed. A deleted user's pairs
// are thus forgotten once the erasure is written, whichever process routes the
// user's next call, so that call writes a `seen` record again and starts a fresh set.
//
// A call this process routed after the deletion but before it read the erasure found
// its pair in the cache and wrote nothing; the pairs found since the deletion's time
// (less FOUND_MARGIN_MS) are written again then, after the erasure, so they count.
//
// Until the first fetch, and after a crash of its consumer, the cache holds nothing
// and every call's pair is written (more records, never a pair missed).
import { createProducer } from '../kafka/index.js';
import { createCrashLevels } from '../runtime/crash-levels.js';
import type { RecordProducer } from '../kafka/index.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop, runAll } from '../runtime/service.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { audienceSeenMessage, audienceTopicNames } from './records.js';
import type { SeenPairCache } from './seen-cache.js';
import { seenFollowerGroupId } from '../runtime/group-ids.js';
import { startConsumer } from '../runtime/consumer.js';
import type { ConsumerEvents, ConsumerSettings, RecordBatch, RunningConsumer } from '../runtime/consumer.js';

/**
 * NOTE: the deletion's time is the timestamp of the `user.sources` record that
 * erases: the time the deletion was written to audience.events (the point from which
 * sightings count again), by the clock of the router that wrote it. The margin covers
 * clock skew between pods and the cache's 100 ms ticks; a pair found within it before
 * the deletion is written again too (the source did see the user that recently).
 */
export const FOUND_MARGIN_MS = 250;
const SEND_ATTEMPTS = 5;

/** The sources a `user.sources` value still lists; undefined for a tombstone or a value that cannot be read. */
export function sourcesLeft(value: Buffer | null): string[] | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString('utf8'));
    return Array.isArray(parsed) && parsed.every((id) => typeof id === 'string') ? (parsed as string[]) : undefined;
  } catch {
    return undefined;
  }
}

/** A consumer that follows `topic` from its end, committing nothing. */
function followerConsumer(groupId: string, topic: string): ConsumerSettings {
  return {
    // NOTE: a group per process: every router must see every change.
    groupId,
    topics: [topic],
    fromBeginning: false,
    commit: { kind: 'none' },
    maxWaitTimeInMs: 250,
  };
}

export function createSeenFollower(deps: RoleDeps, cache: SeenPairCache): Service {
  const initial = deps.config.current();
  const topic = audienceTopicNames(initial.kafka.topicPrefix).userSources;
  const events = audienceTopicNames(initial.kafka.topicPrefix).events;
  const logger = deps.logger.child({ component: 'seen-follower' });
  let consumer: RunningConsumer | undefined;
  let producer: RecordProducer | undefined;
  let failed = false;

  const writeAgain = async (pairs: { userId: string; sourceId: string }[]): Promise<void> => {
    const messages = pairs.map((p) => audienceSeenMessage(p.userId, p.sourceId));
    for (let attempt = 1; ; attempt++) {
      try {
        await producer!.send([{ topic: events, messages }]);
        return;
      } catch (error) {
        if (attempt >= SEND_ATTEMPTS) {
          // NOTE: no user id at error level either; the sources say what was lost.
          logger.error({ err: error, sources: pairs.map((p) => p.sourceId) }, `could not write a seen record again after ${attempt} attempts; a later deletion of that user may miss those sources`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
      }
    }
  };

  /** Each change of `user.sources`, in order: the pairs it removed are forgotten (and written again when found since). */
  const followChanges = async (batch: RecordBatch): Promise<void> => {
    for (const record of batch.records) {
      if (record.key !== null) {
        const deletedAt = Number(record.timestamp);
        const foundSince = Number.isFinite(deletedAt) ? cache.tickAt(deletedAt - FOUND_MARGIN_MS) : -Infinity;
        // A tombstone (or an unreadable value) drops all of the user's pairs.
        const again = cache.forget(record.key.toString('utf8'), sourcesLeft(record.value), foundSince);
        if (again.length > 0) await writeAgain(again);
      }
      await batch.markDone(record.offset);
    }
  };

  // A transient crash (the coordinator still loading at a first start) stays at debug for a minute (src/runtime/crash-levels.ts).
  const crashLevels = createCrashLevels();
  const followerEvents: ConsumerEvents = {
    onJoin: () => crashLevels.joined(),
    onFetch: () => {
      if (!cache.following) logger.debug({ topic }, 'following user.sources; the seen-pair cache is on');
      failed = false;
      cache.setFollowing(true);
    },
    onCrash: (error, restart) => {
      // Changes may be missed until it is back: cache nothing meanwhile.
      cache.setFollowing(false);
      failed = true;
      const { level, lastingMs } = crashLevels.crashed(error, restart, Date.now());
      logger[level === 'fatal' ? 'error' : level]({ err: error, restart, lastingMs }, `reading ${topic} failed; every call's source is written until it is back`);
    },
  };

  return {
    name: 'seen-follower',
    async start() {
      producer = createProducer(deps.kafka);
      await producer.connect();
      consumer = await startConsumer(deps.kafka, followerConsumer(seenFollowerGroupId(initial), topic), followChanges, followerEvents, logger);
    },
    stop: onceStop(async () => {
      cache.setFollowing(false);
      await runAll([async () => consumer?.disconnect(), async () => producer?.disconnect()]);
    }),
    health(): ServiceHealth {
      // Not following costs writes, not correctness: never a reason to take the router out.
      // NOTE: the detail names what is down, never the error's text (logged when it happened).
      return !failed ? { live: true, ready: true } : { live: true, ready: true, detail: `not following ${topic} (Kafka; the log has the error)` };
    },
  };
}
