// Which services each `switchyard <role>` command runs.
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';
import { createGatewayService } from '../gateway/gateway-service.js';
import { createRouterService } from '../router/router-service.js';
import { createDelivererService } from '../delivery/deliverer-service.js';
import { replayDeadLetters } from '../delivery/replay.js';

export const ROLE_NAMES = ['gateway', 'router', 'deliverer', 'all'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

export const ROLE_FACTORIES: Record<RoleName, (deps: RoleDeps) => Service[]> = {
  gateway: (deps) => [createGatewayService(deps)],
  router: (deps) => [createRouterService(deps)],
  deliverer: (deps) => [createDelivererService(deps)],
  // Intake last so that, stopped in reverse, it stops first.
  all: (deps) => [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps), ...ROLE_FACTORIES.gateway(deps)],
};

export function replayCommand(deps: RoleDeps, options: { destinationId: string; limit?: number }): Promise<number> {
  return replayDeadLetters(deps, options);
}
