// The errors that cross a module: thrown in one room, caught or printed in another.
// Each has a stable `code` (for logs, tests and `instanceof`-free checks across a
// library boundary such as undici's connect), `retriable` (whether the same call may
// succeed later without anyone changing anything) and the `cause` it wraps.
// Outcomes that are part of normal life (a 503 from a webhook, an invalid call) are
// values, not errors; these are for failures the caller cannot handle itself.

export abstract class SwitchyardError extends Error {
  /** Stable: never reworded once released; messages may change, codes do not. */
  abstract readonly code: string;
  /** True when the same operation may succeed later with nothing changed (a broker coming back). */
  abstract readonly retriable: boolean;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A write to Kafka that was not acknowledged in time (the gateway answers 503). */
export class SendTimeoutError extends SwitchyardError {
  readonly code = 'send_timeout';
  readonly retriable = true;
  constructor(
    readonly timeoutMs: number,
    /** False when the write never left the process (it is then certainly not stored). */
    readonly sent: boolean,
  ) {
    super(
      sent
        ? `Kafka did not acknowledge within ${timeoutMs} ms`
        : `the write waited ${timeoutMs} ms behind other sends to Kafka and was not sent`,
    );
  }
}

/** A replay by time range that could not record what it would move: nothing of that partition moved. */
export class ReplayLedgerFullError extends SwitchyardError {
  readonly code = 'REPLAY_LEDGER_FULL';
  readonly retriable = false;
  /** `command`: the replay to run without a range (by default the dead-letter replay of `destinationId`). */
  constructor(dlq: string, partition: number, destinationId: string, command = `switchyard replay --destination ${destinationId}`) {
    super(
      `partition ${partition} of ${dlq}: earlier replays by time range left too many separate stretches of letters behind to record another; ` +
        `run \`${command}\` without --since/--until first (it moves the letters left behind), then this one`,
    );
  }
}

/**
 * Topics whose layout cannot work (a changelog with another partition count than
 * the topic whose state it holds): an operator must change the topics.
 */
export class TopicLayoutError extends SwitchyardError {
  readonly code = 'TOPIC_LAYOUT';
  readonly retriable = false;
}

/** Topics created but not usable in time (no partition leader): the brokers may recover. */
export class TopicsNotReadyError extends SwitchyardError {
  readonly code = 'TOPICS_NOT_READY';
  readonly retriable = true;
}

/** A topic Switchyard could not create, and why. */
export interface TopicFailure {
  topic: string;
  /** The broker's reason (or the request's), as it gave it. */
  reason: string;
  /** Worth trying again with nothing changed (a timeout, a controller moving); false: the broker refused it (a policy, a quota, an ACL). */
  retriable: boolean;
}

/**
 * Some topics could not be created (after retries of what the broker refused as
 * transient); the others were. `failed` names each with the broker's reason.
 */
export class TopicsNotCreatedError extends SwitchyardError {
  readonly code = 'TOPICS_NOT_CREATED';
  readonly retriable: boolean;
  constructor(
    readonly failed: readonly TopicFailure[],
    readonly created: readonly string[],
  ) {
    const shown = failed.slice(0, 5).map((f) => `${f.topic} (${f.reason})`);
    const more = failed.length > shown.length ? ` and ${failed.length - shown.length} more` : '';
    super(`could not create ${failed.length} topic(s): ${shown.join(', ')}${more}; check the brokers' topic policy, quotas and this principal's Create ACL, or create them beforehand`);
    this.retriable = failed.every((f) => f.retriable);
  }
}

/** A server that could not listen on its configured address (port taken, no permission). */
export class ListenError extends SwitchyardError {
  readonly code = 'LISTEN_FAILED';
  readonly retriable = false;
  constructor(
    readonly what: string,
    readonly address: string,
    cause: NodeJS.ErrnoException,
    fix: string,
  ) {
    super(`${what} could not listen on ${address} (${cause.code ?? cause.message}): ${fix}`, { cause });
  }
}

/** A service used before its start() finished (or after stop()): a bug in the caller. */
export class NotStartedError extends SwitchyardError {
  readonly code = 'NOT_STARTED';
  readonly retriable = false;
}

/** Kafka did not answer a one-shot read (a trace) in time, or failed it: the brokers may come back. */
export class KafkaUnavailableError extends SwitchyardError {
  readonly code = 'KAFKA_UNAVAILABLE';
  readonly retriable = true;
}
