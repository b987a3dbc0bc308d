// What the router writes for audiences: for each valid call, one record on
// `<prefix>audience.events`, added to the same send as the call's deliveries (so it
// is acknowledged before the call's offset is committed, like them).
import type { Config } from '../config/schema.js';
import type { RoutedCall } from '../router/plan-call.js';
import { trackFilterAllows } from '../router/routing-rules.js';
import { audienceCallMessage, audienceTopicNames } from './records.js';

export interface AudienceEventOut {
  topic: string;
  message: { key: Buffer; value: Buffer };
}

/**
 * A valid call is forwarded when its source feeds at least one audience (DESIGN §5:
 * membership is computed from the calls of the audience's sources); with no audience
 * on a source its calls cost the router nothing extra. NOTE: an audience added later
 * for a source sees only that source's calls from then on. A track
 * that its source's track filter blocks "goes nowhere" (DESIGN §5), so it counts
 * for no audience; only the fact that the source saw the user is kept. The call's
 * `calls` partition and offset go along: a router that routes a call again after a
 * crash writes its record again, and the processor drops it by them.
 */
export function audienceEventFor(prefix: string, config: () => Config): (routed: RoutedCall) => AudienceEventOut | undefined {
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
