// Which services each `switchyard <role>` command runs.
import type { RoleDeps } from '../runtime/deps.js';
import type { Service } from '../runtime/service.js';

export const ROLE_NAMES = ['gateway', 'router', 'deliverer', 'all'] as const;
export type RoleName = (typeof ROLE_NAMES)[number];

function notBuilt(role: string): Service[] {
  throw new Error(`the ${role} role is not built yet`);
}

export const ROLE_FACTORIES: Record<RoleName, (deps: RoleDeps) => Service[]> = {
  gateway: () => notBuilt('gateway'),
  router: () => notBuilt('router'),
  deliverer: () => notBuilt('deliverer'),
  // Intake last so that, stopped in reverse, it stops first.
  all: (deps) => [...ROLE_FACTORIES.deliverer(deps), ...ROLE_FACTORIES.router(deps), ...ROLE_FACTORIES.gateway(deps)],
};

export async function replayCommand(_deps: RoleDeps, options: { destinationId: string; limit?: number }): Promise<number> {
  throw new Error(`replay of ${options.destinationId} is not built yet`);
}
