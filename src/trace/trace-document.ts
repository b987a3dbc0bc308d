// The answer of a trace, as `switchyard trace --json` prints it and `GET /v1/trace`
// returns it (docs/follow-a-message.md#the-document), and the same for a person. Pure.
import { formatTimestamp } from '../calls/index.js';
import type { TraceDestination, TraceDocument, TraceMessage } from '../admin/answers.js';
import type { TracedCall } from './traced-calls.js';
import type { TraceSubject } from './trace-query.js';

/** The document (and its entries): an answer of the admin API (`GET /v1/trace`), declared with the others. */
export type { TraceDocument, TraceMessage };

/** Filter reasons are those of the config the trace ran with, not of the config a call met. */
export const REASONS_FROM: TraceDocument['reasonsFrom'] = 'current config';

/** One call's entry, keys in the documented order. */
export function traceMessage(call: TracedCall, destinations: TraceDestination[]): TraceMessage {
  return {
    messageId: call.messageId,
    type: call.type,
    ...(call.event === undefined ? {} : { event: call.event }),
    source: call.source,
    receivedAt: formatTimestamp(call.receivedAtMs),
    ...(call.invalid === undefined ? {} : { invalid: call.invalid }),
    ...(call.violations === undefined ? {} : { violations: call.violations }),
    destinations,
  };
}

export function traceDocument(who: TraceSubject, window: { sinceMs: number; untilMs: number }, messages: TraceMessage[]): TraceDocument {
  const head = who.kind === 'userId' ? { userId: who.id } : { anonymousId: who.id };
  return { ...head, since: formatTimestamp(window.sinceMs), until: formatTimestamp(window.untilMs), reasonsFrom: REASONS_FROM, messages };
}

/**
 * For a person: a heading, then per call a line (time, type, event, source, message id)
 * and a line per destination (state, attempts, next attempt, last error); the destinations
 * the call's source does not feed share one line.
 */
export function traceText(document: TraceDocument): string {
  const who = 'userId' in document ? `user ${JSON.stringify(document.userId)}` : `anonymous id ${JSON.stringify(document.anonymousId)}`;
  const lines = [`calls of ${who} received from ${document.since} until ${document.until} (filter reasons from the ${document.reasonsFrom})`];
  for (const message of document.messages) {
    lines.push('');
    const what = [message.type ?? '(no type)', ...(message.event === undefined ? [] : [JSON.stringify(message.event)])].join(' ');
    lines.push(`${message.receivedAt}  ${what}  source ${message.source ?? '(unknown)'}  message ${message.messageId ?? '(none)'}`);
    if (message.invalid !== undefined) lines.push(`  invalid: ${message.invalid}`);
    for (const v of message.violations ?? []) lines.push(`  tracking plan: ${v.type} at ${v.pointer}: expected ${v.expected}, got ${v.actual}`);
    const unconnected = message.destinations.filter((d) => d.reason === 'not_connected').map((d) => d.id);
    const shown = message.destinations.filter((d) => d.reason !== 'not_connected');
    const width = Math.max(0, ...shown.map((d) => d.id.length));
    for (const d of shown) {
      lines.push(`  ${d.id.padEnd(width)}  ${destinationText(d)}`);
      lines.push(...historyLines(d));
    }
    if (unconnected.length > 0) lines.push(`  not connected to source ${message.source ?? '(unknown)'}: ${listed(unconnected)}`);
  }
  lines.push('', `${document.messages.length} call(s)`);
  return `${lines.join('\n')}\n`;
}

/** NOTE: a config of many destinations would bury the others: at most 10 ids, then how many in all. */
function listed(ids: readonly string[]): string {
  return ids.length <= 10 ? ids.join(', ') : `${ids.slice(0, 10).join(', ')}, … (${ids.length} in all)`;
}

/**
 * The failed answers under their destination, oldest first, one line each: when, which
 * URL, the status (or why no answer came), how long, and the start of the body.
 */
function historyLines(d: TraceDestination): string[] {
  if (d.history === undefined) return [];
  return d.history.map((a) => {
    const outcome = a.status !== undefined ? String(a.status) : (a.error ?? '');
    const body = a.response === undefined ? '' : `  ${a.response}`;
    return `      ${a.at}  webhooks[${a.urlIndex}]  ${outcome}  ${a.latencyMs} ms${body}`;
  });
}

function destinationText(d: TraceDestination): string {
  const parts: string[] = [d.state.padEnd(13)];
  if (d.reason !== undefined) parts.push(`by ${d.reason}`);
  if (d.attempts !== undefined) parts.push(`attempts ${d.attempts}`);
  if (d.nextAttemptAt !== undefined) parts.push(`next attempt ${d.nextAttemptAt}`);
  if (d.deadLetteredAt !== undefined) parts.push(`at ${d.deadLetteredAt}`);
  if (d.lastError !== undefined) parts.push(`last error: ${d.lastError}`);
  return parts.join('  ').trimEnd();
}
