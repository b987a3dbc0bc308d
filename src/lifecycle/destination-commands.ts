// `switchyard destinations enable|disable ID` and `POST /v1/destinations/ID/enable|disable`
// (docs/cli.md, docs/admin-api.md): a person's transition, written to `destinations.state`
// and read back, so the answer says what the state is now (a request that does not fit it,
// such as enabling an active destination, changes nothing and says so).
import type { Config } from '../config/schema.js';
import { createProducer } from '../kafka/index.js';
import type { KafkaClient, RecordProducer } from '../kafka/index.js';
import type { DestinationLifecycle } from './lifecycle-state.js';
import type { DestinationStates } from './state-follower.js';
import { stateTopic, transitionRecord } from './state-records.js';
import type { OperationEvent } from './state-view.js';

export type ManualAction = 'enable' | 'disable';

export type ManualOutcome =
  | { result: 'changed'; event: OperationEvent; lifecycle: DestinationLifecycle; note?: string }
  | { result: 'unchanged'; lifecycle: DestinationLifecycle; message: string }
  | { result: 'unknown_destination'; message: string }
  | { result: 'not_confirmed'; message: string };

/** How long a writer waits to read its transition back. */
export const CONFIRM_TIMEOUT_MS = 15_000;

/** What a person asked, applied through the topic. `by` says who (the CLI's user, the admin API's caller). */
export async function requestManualTransition(input: {
  config: Config;
  states: DestinationStates;
  producer: RecordProducer;
  action: ManualAction;
  destination: string;
  by: string;
  reason?: string;
  nowMs: number;
  confirmTimeoutMs?: number;
}): Promise<ManualOutcome> {
  const { config, states, action, destination, by } = input;
  const configured = config.destinations.find((d) => d.id === destination);
  if (configured === undefined) {
    const known = config.destinations.map((d) => d.id).join(', ') || 'none';
    return { result: 'unknown_destination', message: `no destination has id "${destination}" (the config has: ${known})` };
  }
  await states.caughtUp();
  const before = states.view.lifecycle(destination);
  if (action === 'enable' && before.state !== 'disabled') return { result: 'unchanged', lifecycle: before, message: `destination ${destination} is not disabled (it is ${before.state}); nothing to enable` };
  if (action === 'disable' && before.state === 'disabled') return { result: 'unchanged', lifecycle: before, message: `destination ${destination} is already disabled (by ${before.by ?? 'unknown'} at ${new Date(before.since).toISOString()}: ${before.reason ?? 'no reason given'})` };
  const reason = input.reason ?? '';
  const request =
    action === 'enable'
      ? { kind: 'enable' as const, destination, at: input.nowMs, by, ...(reason === '' ? {} : { reason }) }
      : { kind: 'disable' as const, destination, at: input.nowMs, by, reason: reason === '' ? 'disabled by hand' : reason, automatic: false };
  const { key, record } = transitionRecord(request);
  await input.producer.send([{ topic: stateTopic(config), messages: [record] }]);
  const outcome = await states.outcomeOf(key, input.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS);
  if (outcome === undefined) return { result: 'not_confirmed', message: `the ${action} of ${destination} was written to ${stateTopic(config)} but not read back within ${(input.confirmTimeoutMs ?? CONFIRM_TIMEOUT_MS) / 1000} s; check the state again with switchyard destinations list` };
  const lifecycle = states.view.lifecycle(destination);
  if (outcome === null) return { result: 'unchanged', lifecycle, message: `destination ${destination} changed meanwhile (it is ${lifecycle.state} now); nothing was done` };
  const note = configured.enabled ? undefined : `the config has enabled: false for ${destination}, which wins: it delivers nothing until the config enables it`;
  return { result: 'changed', event: outcome, lifecycle, ...(note === undefined ? {} : { note }) };
}

export interface DestinationActions {
  handle(action: ManualAction, destination: string, by: string, reason: string | undefined): Promise<ManualOutcome>;
  stop(): Promise<void>;
}

/** The admin API's enable and disable: one producer, connected at the first request. */
export function createDestinationActions(deps: { config: { current(): Config }; kafka: KafkaClient; states: DestinationStates }): DestinationActions {
  let producer: Promise<RecordProducer> | undefined;
  const connected = (): Promise<RecordProducer> => {
    producer ??= (async () => {
      const made = createProducer(deps.kafka);
      await made.connect();
      return made;
    })();
    // A failed connect is tried again at the next request.
    producer.catch(() => {
      producer = undefined;
    });
    return producer;
  };
  return {
    async handle(action, destination, by, reason) {
      return requestManualTransition({ config: deps.config.current(), states: deps.states, producer: await connected(), action, destination, by, ...(reason === undefined ? {} : { reason }), nowMs: Date.now() });
    },
    async stop() {
      const made = await producer?.catch(() => undefined);
      await made?.disconnect();
    },
  };
}
