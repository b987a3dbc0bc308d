// The fault schedule: at random instants of the load, SIGKILL a role and start it
// again, stop the broker and start it on the same data, take a receiver down for a
// few seconds, or change the config file under the running roles (a reload that makes
// the deliverer restart its destination workers). Planning is pure (and seeded); faults run one after another, so each
// one's effect can be told apart and a restarting role never meets a stopped broker.
import type { RoleName } from './cluster.js';
import { ROLES } from './cluster.js';
import type { Random } from './random.js';

export type Fault =
  | { kind: 'kill'; atMs: number; role: RoleName; /** Before the restart: a dead pod's replacement is not instant. */ downMs: number }
  | { kind: 'broker-restart'; atMs: number; downMs: number }
  | { kind: 'receiver-outage'; atMs: number; receiver: string; durationMs: number }
  | { kind: 'reload'; atMs: number };

/** What happened, for the report. */
export interface FaultRecord {
  fault: Fault;
  startedAtMs: number;
  endedAtMs: number;
  /** A fault that could not be carried out (a role that did not come back). */
  error?: string;
}

/**
 * Spreads the faults over [10 %, 85 %] of the load. Kills go round the roles in a
 * shuffled order, so that every role is killed when there are at least three kills.
 */
export function planFaults(
  counts: { kills: number; brokerRestarts: number; receiverOutages: number; reloads: number },
  loadDurationMs: number,
  outageReceiver: string,
  random: Random,
): Fault[] {
  const at = (): number => Math.round(loadDurationMs * (0.1 + 0.75 * random.next()));
  const roles = [...ROLES].sort(() => random.next() - 0.5);
  const faults: Fault[] = [];
  for (let i = 0; i < counts.kills; i++) faults.push({ kind: 'kill', atMs: at(), role: roles[i % roles.length]!, downMs: random.int(0, 2_000) });
  for (let i = 0; i < counts.brokerRestarts; i++) faults.push({ kind: 'broker-restart', atMs: at(), downMs: random.int(1_000, 5_000) });
  for (let i = 0; i < counts.receiverOutages; i++) faults.push({ kind: 'receiver-outage', atMs: at(), receiver: outageReceiver, durationMs: random.int(1_000, 4_000) });
  for (let i = 0; i < counts.reloads; i++) faults.push({ kind: 'reload', atMs: at() });
  return faults.sort((a, b) => a.atMs - b.atMs);
}

export interface FaultActions {
  kill(role: RoleName): Promise<void>;
  restart(role: RoleName): Promise<void>;
  stopBroker(): Promise<void>;
  startBroker(): Promise<void>;
  outage(receiver: string, untilMs: number): void;
  /** Rewrites the roles' config files and resolves once the change is applied. */
  reload(): Promise<string>;
  log(line: string): void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/**
 * Runs the faults in order, each at its instant (or at once when the one before ran
 * late), from `startMs`. Resolves with what happened once the last one is over.
 */
export async function runFaults(faults: readonly Fault[], startMs: number, actions: FaultActions): Promise<FaultRecord[]> {
  const records: FaultRecord[] = [];
  for (const fault of faults) {
    await sleep(startMs + fault.atMs - Date.now());
    const startedAtMs = Date.now();
    let error: string | undefined;
    try {
      switch (fault.kind) {
        case 'kill':
          actions.log(`fault: SIGKILL ${fault.role}; restart in ${fault.downMs} ms`);
          await actions.kill(fault.role);
          await sleep(fault.downMs);
          await actions.restart(fault.role);
          break;
        case 'broker-restart':
          actions.log(`fault: broker stopped for ${fault.downMs} ms`);
          await actions.stopBroker();
          await sleep(fault.downMs);
          await actions.startBroker();
          break;
        case 'receiver-outage':
          actions.log(`fault: receiver ${fault.receiver} answers 503 for ${fault.durationMs} ms`);
          actions.outage(fault.receiver, Date.now() + fault.durationMs);
          break;
        case 'reload':
          actions.log(`fault: config reloaded under load (${await actions.reload()})`);
          break;
      }
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
      actions.log(`fault ${fault.kind} failed: ${error}`);
    }
    const endedAtMs = fault.kind === 'receiver-outage' ? startedAtMs + fault.durationMs : Date.now();
    records.push({ fault, startedAtMs, endedAtMs, ...(error === undefined ? {} : { error }) });
  }
  return records;
}
