// What a trace is asked (docs/follow-a-message.md): whose calls, which message, which
// window; read from `switchyard trace`'s options or `GET /v1/trace`'s query, with errors
// that name the option or parameter as the asker wrote it. Pure.
import { formatTimestamp } from '../calls/index.js';
import { parseTimeArgument, TIME_ARGUMENT_HELP } from '../config/time-argument.js';

/** The window a trace reads when no `since` is given: the last 24 hours. */
export const DEFAULT_TRACE_WINDOW_MS = 24 * 3_600_000;

/** Whose calls: the Kafka key of the user's records (userId, else anonymousId). */
export interface TraceSubject {
  kind: 'userId' | 'anonymousId';
  id: string;
}

export interface TraceQuery {
  who: TraceSubject;
  /** Only this call. */
  messageId?: string | undefined;
  /** Calls received at or after this time (epoch ms). */
  sinceMs: number;
  /** Calls received before this time; open (up to the end of the topics) when absent. */
  untilMs?: number | undefined;
}

/** The query's fields as given, each a string when present. */
export interface TraceQueryFields {
  userId?: string | undefined;
  anonymousId?: string | undefined;
  messageId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** How the asker names each field: `--user` on the command line, `userId` in the admin API. */
export type FieldNames = Record<keyof TraceQueryFields, string>;

export const CLI_FIELD_NAMES: FieldNames = { userId: '--user', anonymousId: '--anonymous-id', messageId: '--message', since: '--since', until: '--until' };
export const API_FIELD_NAMES: FieldNames = { userId: 'userId', anonymousId: 'anonymousId', messageId: 'messageId', since: 'since', until: 'until' };

export type ParsedQuery = { ok: true; query: TraceQuery } | { ok: false; message: string };

export function parseTraceQuery(fields: TraceQueryFields, names: FieldNames, nowMs: number): ParsedQuery {
  const fail = (message: string): ParsedQuery => ({ ok: false, message });
  const { userId, anonymousId } = fields;
  if ((userId === undefined) === (anonymousId === undefined)) {
    return fail(`give either ${names.userId} ID or ${names.anonymousId} ID (one of them): the user whose calls to follow, as the Kafka key of their calls (userId, else anonymousId)`);
  }
  const who: TraceSubject = userId !== undefined ? { kind: 'userId', id: userId } : { kind: 'anonymousId', id: anonymousId! };
  if (who.id === '') return fail(`${names[who.kind]} is empty: give the id of the user`);
  if (fields.messageId === '') return fail(`${names.messageId} is empty: give a messageId, or leave it out to follow every call of the user`);
  const time = (field: 'since' | 'until'): number | string | undefined => {
    const text = fields[field];
    if (text === undefined) return undefined;
    return parseTimeArgument(text, nowMs) ?? `${names[field]} ${JSON.stringify(text)} is not a time: ${TIME_ARGUMENT_HELP}`;
  };
  const since = time('since') ?? nowMs - DEFAULT_TRACE_WINDOW_MS;
  if (typeof since === 'string') return fail(since);
  const until = time('until');
  if (typeof until === 'string') return fail(until);
  if (until !== undefined && since >= until) {
    return fail(`${names.since} (${formatTimestamp(since)}) is not before ${names.until} (${formatTimestamp(until)}): swap them or widen the window`);
  }
  return { ok: true, query: { who, messageId: fields.messageId, sinceMs: since, untilMs: until } };
}
