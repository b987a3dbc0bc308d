// Which services each `switchyard <role>` command runs.
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { createGatewayService } from '../gateway/gateway-service.js';
import { createRouterService } from '../router/router-service.js';
import { createAudienceService } from '../audiences/audience-service.js';
import { createAudienceHook } from '../audiences/router-hook.js';
import { SeenPairCache } from '../audiences/seen-cache.js';
import { createSeenFollower } from '../audiences/seen-follower.js';
import { createDelivererService } from '../delivery/deliverer-service.js';
import { createLifecycleService } from '../lifecycle/lifecycle-service.js';
import { createStateFollower } from '../lifecycle/state-follower.js';
import { ROLE_COMMANDS } from './args.js';
import type { RoleCommand } from './args.js';

export const ROLE_NAMES = ROLE_COMMANDS;
export type RoleName = RoleCommand;

/**
 * The (user, source) pairs a router remembers having written (src/audiences/seen-cache.ts).
 * NOTE: a small share of the pod's 768 MiB at this bound (the memory per pair:
 * docs/webhooks.md, docs/benchmarks.md#figures-behind-the-code); a pair beyond it costs one
 * small `seen` record again when next seen, nothing more. The user ids held are bounded too (64
 * characters a pair, 32 M in all): ids of kilobytes (a call may be 32 KB) age out sooner.
 */
const SEEN_PAIRS_CACHED = 500_000;

export const ROLE_FACTORIES: Record<RoleName, (deps: RoleDeps) => Service[]> = {
  gateway: (deps) => [createGatewayService(deps)],
  // The audience processor is part of the router role; listed first, it creates its
  // topics before the router writes to them and stops after the router.
  router: (deps) => {
    const audiences = createAudienceService(deps);
    const cache = new SeenPairCache(SEEN_PAIRS_CACHED);
    const hook = createAudienceHook(deps.config.current().kafka.topicPrefix, () => deps.config.current(), cache);
    return [
      audiences,
      createSeenFollower(deps, cache),
      createRouterService({ ...deps, audiences: hook, onDeletion: (userId, sourceIds) => audiences.eraseUser(userId, sourceIds) }),
    ];
  },
  // The deliverer runs on the config with the destination states applied (src/lifecycle/effective-config.ts).
  // Listed after it, the lifecycle service starts once the deliverer listens, and releases its lanes.
  deliverer: (deps) => {
    const states = deps.destinationStates ?? createStateFollower(deps);
    const lifecycle = createLifecycleService(deps, states);
    return [...(deps.destinationStates === undefined ? [states] : []), createDelivererService({ ...deps, config: lifecycle.deliveryConfig }), lifecycle];
  },
  // Intake last so that, stopped in reverse, it stops first.
  all: (deps) => [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps), ...ROLE_FACTORIES.gateway(deps)],
};
