// Which level a kafkajs log line gets in Switchyard's logs. Pure: the time comes in.
// NOTE: only the kafkajs consumers still write such lines (kafkajs-legacy.ts); it goes
// with them. @platformatic/kafka writes no log lines (it reports on diagnostics
// channels): its failures reach Switchyard's code as errors, logged there, and a
// consumer's crashes get their level from crash-levels.ts.
import { TRANSIENT_LASTING_MS } from './crash-levels.js';

export type LogTarget = 'error' | 'warn' | 'info' | 'debug';

export interface KafkaLogLine {
  /** kafkajs's namespace ("Connection", "BrokerPool", "Consumer", ...). */
  namespace: string;
  /** The level kafkajs gave it. */
  level: LogTarget;
  message: string;
  /** The broker's error text, on a "Response ..." line. */
  error?: string | undefined;
}

export interface LevelDecision {
  level: LogTarget;
  /** Set when a transient condition lasted long enough to be shown: since when, how often. */
  lasting?: { ms: number; occurrences: number };
}

/**
 * A run of transient lines is shown at kafkajs's own level once it lasted
 * TRANSIENT_LASTING_MS (crash-levels.ts says why a minute); a pause longer than
 * kafkajs's longest retry interval (10 s) ends a run.
 */
export { TRANSIENT_LASTING_MS };
export const TRANSIENT_QUIET_MS = 15_000;

/**
 * The kind of condition a line reports when kafkajs retries it by itself, else
 * undefined. Every broker error response is one: kafkajs logs each at ERROR before its
 * retry logic runs, and a failure that outlives the retries reaches Switchyard's code
 * as an exception, logged there with what it means. So is a refused or timed-out
 * connection, which kafkajs retries while the broker starts.
 */
export function transientKind(line: KafkaLogLine): string | undefined {
  if (line.namespace === 'Connection' && line.message.startsWith('Response ')) return `response: ${line.error ?? 'unknown'}`;
  if (line.message.startsWith('Connection error:') || line.message.startsWith('Connection timeout')) return 'connection';
  if (line.message.startsWith('Failed to connect to seed broker') || line.message.startsWith('Failed to connect to broker')) return 'connection';
  return undefined;
}

/**
 * A level mapper with memory: transient conditions go to debug until one of them has
 * lasted TRANSIENT_LASTING_MS (then its lines keep kafkajs's level, with how long it
 * lasted); INFO chatter (joins, rebalances) goes to debug; the rest keeps its level.
 */
export function createKafkaLogLevels(options: { lastingMs?: number; quietMs?: number } = {}) {
  const lastingMs = options.lastingMs ?? TRANSIENT_LASTING_MS;
  const quietMs = options.quietMs ?? TRANSIENT_QUIET_MS;
  const streaks = new Map<string, { firstMs: number; lastMs: number; occurrences: number }>();

  return (line: KafkaLogLine, nowMs: number): LevelDecision => {
    // We bound producer retries on purpose (a send must fail, not hang forever);
    // callers resend, so the "may invalidate EoS" warning says nothing actionable.
    if (line.message.startsWith('Limiting retries for the idempotent producer')) return { level: 'debug' };
    if (line.level === 'info' || line.level === 'debug') return { level: 'debug' };
    // Every consumer listens for its CRASH event and logs the crash itself, at warn when
    // it joins again (crash-restart.ts) and at error when not: kafkajs's own two lines say it again.
    if (line.namespace === 'Consumer' && (line.message.startsWith('Crash: ') || line.message.startsWith('Restarting the consumer in '))) return { level: 'debug' };
    const kind = transientKind(line);
    if (kind === undefined) return { level: line.level };
    let streak = streaks.get(kind);
    if (streak === undefined || nowMs - streak.lastMs > quietMs) {
      streak = { firstMs: nowMs, lastMs: nowMs, occurrences: 0 };
      streaks.set(kind, streak);
    }
    streak.lastMs = nowMs;
    streak.occurrences += 1;
    const ms = nowMs - streak.firstMs;
    if (ms < lastingMs) return { level: 'debug' };
    return { level: line.level, lasting: { ms, occurrences: streak.occurrences } };
  };
}
