// Keeps the router's seen-pair cache (seen-cache.ts) true to `user.sources`: every
// router process reads each change of that topic as it is written (a group of its
// own, from the end), and drops the pairs a change removed. A deleted user's pairs
// are thus forgotten once the erasure is written, whichever process routes the
// user's next call, so that call writes a `seen` record again and starts a fresh set.
//
// Until the first fetch, and after a crash of its consumer, the cache holds nothing
// and every call's pair is written (more records, never a pair missed).
import { randomBytes } from 'node:crypto';
import type { Consumer } from '../kafka/index.js';
import type { RoleDeps } from '../runtime/deps.js';
import { onceStop } from '../runtime/service.js';
import type { Service, ServiceHealth } from '../runtime/service.js';
import { audienceTopicNames } from './records.js';
import type { SeenPairCache } from './seen-cache.js';

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

export function createSeenFollower(deps: RoleDeps, cache: SeenPairCache): Service {
  const initial = deps.config.current();
  const topic = audienceTopicNames(initial.kafka.topicPrefix).userSources;
  const logger = deps.logger.child({ component: 'seen-follower' });
  let consumer: Consumer | undefined;
  let failed: string | undefined;

  return {
    name: 'seen-follower',
    async start() {
      const c = deps.kafka.consumer({
        // NOTE: a group per process: every router must see every change.
        groupId: `${initial.kafka.clientId}-seen-${randomBytes(6).toString('hex')}`,
        allowAutoTopicCreation: false,
        maxWaitTimeInMs: 250,
      });
      consumer = c;
      c.on(c.events.FETCH, () => {
        if (!cache.following) logger.debug({ topic }, 'following user.sources; the seen-pair cache is on');
        failed = undefined;
        cache.setFollowing(true);
      });
      c.on(c.events.CRASH, (event) => {
        // Changes may be missed until it is back: cache nothing meanwhile.
        cache.setFollowing(false);
        failed = String(event.payload.error);
        logger.warn({ err: event.payload.error, restart: event.payload.restart }, `reading ${topic} failed; every call's source is written until it is back`);
      });
      await c.connect();
      await c.subscribe({ topic, fromBeginning: false });
      await c.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          if (message.key === null) return;
          // A tombstone (or an unreadable value) drops all of the user's pairs.
          cache.forget(message.key.toString('utf8'), sourcesLeft(message.value));
        },
      });
    },
    stop: onceStop(async () => {
      cache.setFollowing(false);
      await consumer?.disconnect();
    }),
    health(): ServiceHealth {
      // Not following costs writes, not correctness: never a reason to take the router out.
      return failed === undefined ? { live: true, ready: true } : { live: true, ready: true, detail: `not following ${topic}: ${failed}` };
    },
  };
}
