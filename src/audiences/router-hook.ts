// What the router writes for audiences and seen sources: for a valid call, at most
// one record on `<prefix>audience.events`, added to the same send as the call's
// deliveries (so it is acknowledged before the call's offset is committed, like
// them); for a deletion request without `sourceIds`, the record that hands it to the
// audience processor.
import type { Config } from '../config/schema.js';
import type { AudienceEventOut, AudienceHook } from '../router/audience-hook.js';
import type { RoutedCall } from '../router/plan-call.js';
import { trackFilterAllows } from '../router/routing-rules.js';
import { audienceCallMessage, audienceDeletionMessage, audienceSeenMessage, audienceTopicNames } from './records.js';
import type { PendingPair, SeenPairCache } from './seen-cache.js';

/**
 * The hook the router role runs with. A call from a source that feeds an audience
 * writes its call record (which also tells the processor the source saw the user);
 * a call with a userId from another source writes a `seen` record when the cache
 * does not know the pair yet. NOTE: calls with only an anonymousId are not recorded:
 * deletion requests name users by userId.
 */
export function createAudienceHook(prefix: string, config: () => Config, cache: SeenPairCache): AudienceHook<PendingPair> {
  const topic = audienceTopicNames(prefix).events;
  const callEvent = audienceEventFor(prefix, config);
  return {
    event(routed) {
      const call = callEvent(routed);
      if (call !== undefined) return call;
      const userId = routed.call.userId;
      if (userId === undefined) return undefined;
      const pair = cache.claim(userId, routed.source.id);
      return pair === undefined ? undefined : { topic, message: audienceSeenMessage(userId, routed.source.id), pair };
    },
    acknowledged: (pairs) => cache.acknowledged(pairs),
    abandoned: (pairs) => cache.abandoned(pairs),
    deletion: (userId, requestedAtMs) => ({ topic, message: audienceDeletionMessage({ userId, requestedAtMs }) }),
  };
}

/**
 * A valid call is forwarded when its source feeds at least one audience (docs/configuration.md#routing:
 * membership is computed from the calls of the audience's sources); with no audience
 * on a source its calls cost the router nothing extra. NOTE: an audience added later
 * for a source sees only that source's calls from then on. A track
 * that its source's track filter blocks "goes nowhere" (docs/configuration.md#routing), so it counts
 * for no audience; only the fact that the source saw the user is kept. The call's
 * `calls` partition and offset go along: a router that routes a call again after a
 * crash writes its record again, and the processor drops it by them.
 */
export function audienceEventFor(prefix: string, config: () => Config): (routed: RoutedCall) => AudienceEventOut<PendingPair> | undefined {
  const topic = audienceTopicNames(prefix).events;
  let seenConfig: Config | undefined;
  let feeding = new Set<string>();
  return (routed) => {
    const current = config();
    if (current !== seenConfig) {
      seenConfig = current;
      feeding = new Set(current.audiences.flatMap((audience) => audience.sources));
    }
    if (!feeding.has(routed.source.id)) return undefined;
    return {
      topic,
      message: audienceCallMessage(routed.call, routed.source.id, routed.receivedAtMs, {
        countEvent: trackFilterAllows(routed.source.trackFilter, routed.call),
        origin: { partition: routed.origin.partition, offset: Number(routed.origin.offset) },
      }),
    };
  };
}
