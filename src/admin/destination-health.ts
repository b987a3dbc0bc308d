// Whether a destination needs a person, and why, from what this process and Kafka know
// of it (docs/admin-api.md#get-v1destinations): the console lists failing destinations
// first, each with its reasons in words. Pure.
import { formatTimestamp } from '../calls/index.js';
import type { UrlStatus } from '../delivery/url-circuits.js';
import type { WindowFigures } from '../observability/recent-deliveries.js';
import type { DestinationLifecycle } from '../lifecycle/lifecycle-state.js';
import type { DeadLetterCounts, DestinationHealth, RetryBacklog } from './answers.js';

/** The order rows are listed in: failing first. */
export const HEALTH_ORDER: readonly DestinationHealth[] = ['failing', 'attention', 'ok', 'disabled'];

/**
 * A share of failed delivery rounds at or above which a destination is failing: the
 * success-rate alert's 90 % (deploy/prometheus/alerts.yaml), over the last minute.
 */
export const FAILING_ERROR_RATE = 0.1;

/** Consumer lag from which a destination is behind enough to say so (the lag alert's 1,000). */
export const LAG_ATTENTION = 1_000;

/** What the Kafka topics say of a destination (every pod sees the same). */
export interface KafkaFigures {
  /** Events in `deliveries.<id>` the deliverer group has not finished. */
  consumerLag: number;
  /** Events waiting in each retry tier (the deliverer group's lag on the tier's topic). */
  retryBacklog: RetryBacklog;
  /** Letters kept in the dead-letter topic, and of those the ones no replay has moved yet. */
  deadLetters: DeadLetterCounts;
}

export interface HealthInput {
  enabled: boolean;
  /** This process's last minute; undefined when it runs no deliverer. */
  recent?: { seconds: number; figures: WindowFigures } | undefined;
  /** Each URL's circuit and last answers with its printable name; undefined when this process runs no lane for it. */
  urls?: readonly (UrlStatus & { label: string })[] | undefined;
  /** Undefined when Kafka did not answer. */
  kafka?: KafkaFigures | undefined;
  /** Its lifecycle from `destinations.state`; undefined when this process does not follow it. */
  lifecycle?: DestinationLifecycle;
  nowMs: number;
}

export interface HealthVerdict {
  health: DestinationHealth;
  /** Why, in words, the most pressing first; empty when ok. */
  reasons: string[];
}

export function judgeDestination(input: HealthInput): HealthVerdict {
  const failing = [...roundFailures(input), ...urlProblems(input, 'all')];
  const attention = [...urlProblems(input, 'some'), ...waiting(input)];
  if (!input.enabled) return { health: 'disabled', reasons: ['disabled in the config: its events wait in its topics until it is enabled', ...failing, ...attention] };
  const { lifecycle } = input;
  if (lifecycle?.state === 'disabled') {
    const who = `disabled by ${lifecycle.by ?? 'unknown'} at ${formatTimestamp(lifecycle.since)}: ${lifecycle.reason ?? 'no reason given'}`;
    return { health: 'disabled', reasons: [`${who}; its events wait in its topics until it is enabled (switchyard destinations enable, or the console's Enable button)`, ...failing, ...attention] };
  }
  if (lifecycle?.state === 'failing') failing.unshift(`no successful attempt since ${formatTimestamp(lifecycle.failingSince ?? lifecycle.since)}: it is disabled when settings.autoDisable.after has passed`);
  if (failing.length > 0) return { health: 'failing', reasons: [...failing, ...attention] };
  return attention.length > 0 ? { health: 'attention', reasons: attention } : { health: 'ok', reasons: [] };
}

/** Rows by health (failing first), then by id. */
export function compareRows(a: { id: string; health: DestinationHealth }, b: { id: string; health: DestinationHealth }): number {
  const byHealth = HEALTH_ORDER.indexOf(a.health) - HEALTH_ORDER.indexOf(b.health);
  return byHealth !== 0 ? byHealth : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function roundFailures({ recent }: HealthInput): string[] {
  if (recent === undefined) return [];
  const { delivered, retryScheduled, deadLettered, errorRate } = recent.figures;
  const failed = retryScheduled + deadLettered;
  if (failed === 0 || errorRate === null || errorRate < FAILING_ERROR_RATE) return [];
  const how = [retryScheduled > 0 ? `${retryScheduled} sent to retry` : '', deadLettered > 0 ? `${deadLettered} dead-lettered` : ''].filter((s) => s !== '').join(', ');
  return [`${failed} of ${failed + delivered} delivery attempts failed in the last ${Math.round(recent.seconds)} s (${how})`];
}

/**
 * The URLs in trouble (circuit not closed, or the last answer not a 2xx). `all`: when
 * every URL is (nothing reaches the receivers); `some`: when only some are (the others
 * still deliver every event).
 */
function urlProblems({ urls, nowMs }: HealthInput, which: 'all' | 'some'): string[] {
  if (urls === undefined || urls.length === 0) return [];
  const troubled = urls.filter((url) => url.state !== 'closed' || url.failingSinceMs !== undefined);
  const everyOne = troubled.length === urls.length;
  if (troubled.length === 0 || (which === 'all') !== everyOne) return [];
  return troubled.map((url) => urlProblem(url, nowMs));
}

function urlProblem(url: UrlStatus & { label: string }, nowMs: number): string {
  const last = url.lastFailure === undefined ? '' : `; last answer ${url.lastFailure.reason} at ${formatTimestamp(url.lastFailure.atMs)}`;
  if (url.state === 'open') {
    const probe = url.nextProbeAtMs === undefined ? '' : `, next probe in ${Math.max(0, Math.ceil((url.nextProbeAtMs - nowMs) / 1000))} s`;
    const why = url.window !== undefined && url.window.attempts > 0 ? `${url.window.failed} of its last ${url.window.attempts} attempts failed` : `${url.failures} failures in a row`;
    return `${url.label}: circuit open after ${why} (no requests${probe})${last}`;
  }
  if (url.state === 'half-open') return `${url.label}: circuit half-open, probes are out${last}`;
  const since = url.failingSinceMs === undefined ? '' : ` since ${formatTimestamp(url.failingSinceMs)}`;
  return `${url.label}: no 2xx${since}${last}`;
}

function waiting({ kafka }: HealthInput): string[] {
  if (kafka === undefined) return [];
  const reasons: string[] = [];
  const { notReplayed } = kafka.deadLetters;
  if (notReplayed > 0) reasons.push(`${notReplayed} dead letter${notReplayed === 1 ? '' : 's'} not replayed`);
  const retrying = kafka.retryBacklog.reduce((sum, tier) => sum + tier.waiting, 0);
  if (retrying > 0) reasons.push(`${retrying} event${retrying === 1 ? '' : 's'} waiting to be retried`);
  if (kafka.consumerLag >= LAG_ATTENTION) reasons.push(`${kafka.consumerLag} events not yet attempted (consumer lag)`);
  return reasons;
}
