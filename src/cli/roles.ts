// Which services each `switchyard <role>` command runs.
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { createGatewayService } from '../gateway/gateway-service.js';
import { createRouterService } from '../router/router-service.js';
import { createAudienceService } from '../audiences/audience-service.js';
import { audienceEventFor } from '../audiences/router-hook.js';
import { createDelivererService } from '../delivery/deliverer-service.js';
import { ROLE_COMMANDS } from './args.js';
import type { RoleCommand } from './args.js';

export const ROLE_NAMES = ROLE_COMMANDS;
export type RoleName = RoleCommand;

export const ROLE_FACTORIES: Record<RoleName, (deps: RoleDeps) => Service[]> = {
  gateway: (deps) => [createGatewayService(deps)],
  // The audience processor is part of the router role; listed first, it creates its
  // topics before the router writes to them and stops after the router.
  router: (deps) => {
    const audiences = createAudienceService(deps);
    const audienceEvent = audienceEventFor(deps.config.current().kafka.topicPrefix, () => deps.config.current());
    return [audiences, createRouterService({ ...deps, audienceEvent, onDeletion: (userId) => audiences.eraseUser(userId) })];
  },
  deliverer: (deps) => [createDelivererService(deps)],
  // Intake last so that, stopped in reverse, it stops first.
  all: (deps) => [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps), ...ROLE_FACTORIES.gateway(deps)],
};
