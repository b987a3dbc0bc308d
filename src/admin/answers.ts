// The answers of the admin API that the operator console reads (docs/admin-api.md), as
// the JSON they are sent as: types only. The routes type what they send with them
// (destinations-status.ts, dead-letters-route.ts, letter-query.ts, src/trace/), and the
// console (console/app.ts) imports them with `import type`: a change to an answer fails
// the console's type check (`npx tsc -p console/tsconfig.json --noEmit`).
//
// NOTE: this file imports only files that import nothing (the figures of a window, the
// shapes of violations), and eslint.config.js holds it to them. The console is browser
// code, checked with the DOM's types and none of Node's; any other import would bring its
// file, and all that file imports, into the console's program. The few other parts made
// in the rooms below admin/ (circuit and lifecycle states, attempts, a dead letter's
// fields) are written out here, and answers-agree.ts holds each equal to the type of the
// code that makes it.
import type { WindowFigures } from '../observability/window-figures.js';
import type { Violation, ViolationGroup, ViolationRecordValue, ViolationType, ViolationsSummary } from '../tracking-plans/violation-types.js';

export type { Violation, ViolationGroup, ViolationType };

// ---- GET /v1/destinations ------------------------------------------------------

/** Which process answered: with several pods, each answers with its own view. */
export interface AnsweredBy {
  /** The host name: the pod's name in Kubernetes. */
  pod: string;
  role: string;
  version: string;
  pid: number;
  startedAt: string;
}

/** A URL's circuit (src/delivery/circuit-breaker.ts). */
export type CircuitState = 'closed' | 'open' | 'half-open';

export interface UrlRow {
  index: number;
  /** `webhooks[0] https://hooks.example.com`: the origin only (a URL may carry a token). */
  url: string;
  /** Null where this process runs no lane for the destination. */
  circuit: CircuitState | null;
  failures?: number;
  nextProbeAt?: string;
  lastFailure?: { at: string; outcome: string; reason: string };
  lastSuccessAt?: string;
  failingSince?: string;
}

/** A destination's lifecycle state (src/lifecycle/lifecycle-state.ts). */
export type LifecycleState = 'active' | 'failing' | 'disabled';

/** A destination's lifecycle (docs/webhooks.md#automatic-disabling), as every process reads it from `destinations.state`. */
export interface LifecycleRow {
  state: LifecycleState;
  /** When it entered that state; absent when it never changed. */
  since?: string;
  by?: string;
  reason?: string;
  /** The last transitions, oldest first. */
  history: { type: string; at: string; by?: string; reason?: string }[];
}

/**
 * The verdict of src/admin/destination-health.ts. failing: deliveries fail now. attention:
 * something waits for a person (dead letters, a backlog, one bad URL).
 */
export type DestinationHealth = 'failing' | 'attention' | 'ok' | 'disabled';

/** What one destination did over this process's last minute (src/observability/recent-deliveries.ts). */
export interface LastMinute extends WindowFigures {
  /** How many seconds the figures cover: a minute, or less in the first minute after start. */
  seconds: number;
}

/** Minute by minute, oldest first (the last entry the current minute, so far). */
export interface LastHour {
  from: string;
  /** Events delivered. */
  delivered: number[];
  /** Delivery attempts that did not deliver. */
  failed: number[];
}

/** Events waiting in each retry tier (the deliverer group's lag on the tier's topic). */
export type RetryBacklog = { tier: string; waiting: number }[];

/** Letters kept in the dead-letter topic, and of those the ones no replay has moved yet. */
export interface DeadLetterCounts {
  kept: number;
  notReplayed: number;
}

export interface DestinationRow {
  id: string;
  /** As the config says (`enabled`); the lifecycle may still have it disabled. */
  enabled: boolean;
  /** Null where this process does not follow `destinations.state`. */
  lifecycle: LifecycleRow | null;
  health: DestinationHealth;
  reasons: string[];
  /** This process's last minute; null where it runs no deliverer. */
  lastMinute: LastMinute | null;
  /** This process's last hour; null where it runs no deliverer. */
  lastHour: LastHour | null;
  urls: UrlRow[];
  /** From Kafka; null when Kafka did not answer. */
  consumerLag: number | null;
  retryBacklog: RetryBacklog | null;
  deadLetters: DeadLetterCounts | null;
}

export interface DestinationsDocument {
  answeredBy: AnsweredBy;
  at: string;
  /** What this answer holds and lacks, for a person (e.g. a gateway pod has no deliverer lanes). */
  notes: string[];
  kafka: { ok: true; readAt: string } | { ok: false; error: string };
  destinations: DestinationRow[];
}

// ---- GET /v1/dead-letters and POST /v1/replay -------------------------------------

/** One dead letter, keys in the order of docs/cli.md (`dlq list --json`; src/delivery/dlq/dead-letters.ts). */
export interface DeadLetterFields {
  messageId: string | null;
  deadLetteredAt: string | null;
  attempts: number | null;
  error: string | null;
  offset: number;
  partition: number;
}

/** The time range of a list or a replay; null where it is open. */
export interface RangeFields {
  since: string | null;
  until: string | null;
}

export interface DeadLettersPage extends RangeFields {
  destination: string;
  topic: string;
  topicExists: boolean;
  /** Letters in the range, listed or not. */
  inRange: number;
  /** Oldest first; `replayed`: a replay already moved it. */
  letters: (DeadLetterFields & { replayed: boolean })[];
  /** The `cursor` of the next page; null on the last. */
  nextCursor: string | null;
}

/** The answer to a replay of a range (or its dry run). */
export interface ReplayAnswer extends RangeFields {
  destination: string;
  dryRun: boolean;
  limit: number | null;
  /** Letters moved (in a dry run, that would be). */
  count: number;
}

/** The answer to a replay of one letter, by its messageId. */
export interface ReplayOneAnswer {
  destination: string;
  messageId: string;
  dryRun: boolean;
  /** 1 when moved (in a dry run, found), 0 when an earlier replay moved it. */
  count: 0 | 1;
  alreadyReplayed: boolean;
  letter: DeadLetterFields;
}

// ---- GET /v1/trace (and `switchyard trace --json`) ---------------------------------

export type TraceState = 'delivered' | 'retrying' | 'dead_lettered' | 'pending' | 'filtered';

/** One failed answer (docs/follow-a-message.md#the-document; src/delivery/attempt-history.ts): a status, or why no answer came. */
export interface TracedAnswer {
  /** When the attempt started (ISO 8601, ms). */
  at: string;
  urlIndex: number;
  /** The HTTP status, when an answer came; else `error`. */
  status?: number;
  error?: string;
  latencyMs: number;
  /** The first bytes of the answer body, control characters escaped; absent when empty. */
  response?: string;
}

/** One destination's line of a traced call, keys in the documented order (docs/follow-a-message.md#the-document). */
export interface TraceDestination {
  id: string;
  state: TraceState;
  /** `filtered`: the routing rule that kept the call from the destination. */
  reason?: string;
  attempts?: number;
  lastError?: string;
  nextAttemptAt?: string;
  deadLetteredAt?: string;
  /** The failed answers, oldest first, as the newest record keeps them (docs/webhooks.md#attempt-history). */
  history?: TracedAnswer[];
}

export interface TraceMessage {
  messageId: string | null;
  type: string | null;
  event?: string;
  source: string | null;
  receivedAt: string;
  invalid?: string;
  /** What the call breaks of its source's tracking plan, as the plan is now. */
  violations?: Violation[];
  destinations: TraceDestination[];
}

/** `userId` or `anonymousId` (as asked) first, then the window, then the calls, oldest first. */
export type TraceDocument = ({ userId: string } | { anonymousId: string }) & {
  since: string;
  until: string;
  /** Filter reasons are those of the config the trace ran with, not of the config a call met. */
  reasonsFrom: 'current config';
  messages: TraceMessage[];
};

// ---- GET /v1/violations -------------------------------------------------------

/** A `violations` record's value (src/tracking-plans/violation-types.ts). */
export type ViolationRecord = ViolationRecordValue;

export interface ViolationsDocument extends ViolationsSummary {
  since: string;
  until: string;
  /** False when a partition held more records in the window than are read of it: the counts are of its latest ones. */
  complete: boolean;
}
