// `switchyard destinations list|enable|disable` (docs/cli.md): read and change the state
// kept in `destinations.state`, as every deliverer pod, the console and the admin API see it.
import { createProducer } from '../kafka/index.js';
import { requestManualTransition } from '../lifecycle/destination-commands.js';
import type { DestinationLifecycle } from '../lifecycle/lifecycle-state.js';
import { createStateFollower } from '../lifecycle/state-follower.js';
import type { RoleDeps } from '../runtime/deps.js';
import type { Invocation } from './args.js';
import type { CommandIo } from './operator-commands.js';

type DestinationsInvocation = Extract<Invocation, { kind: 'destinations' }>;

/** A destination's state as `list` prints it in JSON (and GET /v1/destinations in each row's `lifecycle`). */
export function lifecycleJson(id: string, configEnabled: boolean, lifecycle: DestinationLifecycle): Record<string, unknown> {
  const json: Record<string, unknown> = { id, state: configEnabled ? lifecycle.state : 'disabled', configEnabled };
  if (lifecycle.since > 0) json.since = new Date(lifecycle.since).toISOString();
  if (lifecycle.by !== undefined) json.by = lifecycle.by;
  if (lifecycle.reason !== undefined) json.reason = lifecycle.reason;
  json.history = lifecycle.history.map((h) => ({ type: h.type, at: new Date(h.at).toISOString(), ...(h.by === undefined ? {} : { by: h.by }), ...(h.reason === undefined ? {} : { reason: h.reason }) }));
  return json;
}

function line(id: string, configEnabled: boolean, lifecycle: DestinationLifecycle): string {
  if (!configEnabled) return `${id}  disabled  (enabled: false in the config)`;
  const since = lifecycle.since > 0 ? `  since ${new Date(lifecycle.since).toISOString()}` : '';
  const who = lifecycle.by === undefined ? '' : `  by ${lifecycle.by}`;
  const why = lifecycle.reason === undefined ? '' : `: ${lifecycle.reason}`;
  return `${id}  ${lifecycle.state}${since}${who}${why}`;
}

export async function runDestinationsCommand(deps: RoleDeps, invocation: DestinationsInvocation, by: string, io: CommandIo): Promise<number> {
  const config = deps.config.current();
  const states = createStateFollower(deps);
  const producer = invocation.action === 'list' ? undefined : createProducer(deps.kafka);
  try {
    await states.start();
    if (invocation.action === 'list') {
      for (const d of config.destinations) {
        const lifecycle = states.view.lifecycle(d.id);
        io.stdout.write(`${invocation.json ? JSON.stringify(lifecycleJson(d.id, d.enabled, lifecycle)) : line(d.id, d.enabled, lifecycle)}\n`);
      }
      return 0;
    }
    await producer!.connect();
    const outcome = await requestManualTransition({
      config,
      states,
      producer: producer!,
      action: invocation.action,
      destination: invocation.destination!,
      by,
      ...(invocation.reason === undefined ? {} : { reason: invocation.reason }),
      nowMs: Date.now(),
    });
    switch (outcome.result) {
      case 'changed':
        io.stdout.write(`${line(invocation.destination!, true, outcome.lifecycle)}\n`);
        if (outcome.note !== undefined) io.stderr.write(`note: ${outcome.note}\n`);
        return 0;
      case 'unchanged':
        io.stdout.write(`${outcome.message}\n`);
        return 0;
      case 'unknown_destination':
        io.stderr.write(`switchyard destinations ${invocation.action}: ${outcome.message}; give one of those\n`);
        return 1;
      default:
        io.stderr.write(`switchyard destinations ${invocation.action}: ${outcome.message}\n`);
        return 2;
    }
  } finally {
    await producer?.disconnect();
    await states.stop();
  }
}
