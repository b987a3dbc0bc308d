// The query of `GET /v1/dead-letters` and the body of `POST /v1/replay`
// (docs/admin-api.md#get-v1dead-letters): a destination, a time range, a limit and, for
// the list, the cursor of the next page. The same meanings as `switchyard dlq list` and
// `replay` (docs/cli.md#operator-commands). Pure.
import { formatTimestamp } from '../calls/index.js';
import { parseTimeBounds } from '../config/time-argument.js';
import type { LetterPosition, TimeRange } from '../delivery/dlq/dead-letters.js';
import type { RangeFields } from './answers.js';

/** A page of the list holds this many letters unless `limit` says otherwise. */
export const DEFAULT_PAGE_LETTERS = 50;
/** At most this many letters a page: a page is held whole in memory and sent as one answer. */
export const MAX_PAGE_LETTERS = 500;

export interface LetterQuery {
  destination: string;
  range: TimeRange;
  limit: number | undefined;
}

export interface ListQuery extends LetterQuery {
  limit: number;
  after: LetterPosition | undefined;
}

export interface ReplayRequest extends LetterQuery {
  dryRun: boolean;
  /** Only the one letter of this messageId (`replay --message`). */
  messageId?: string;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** The cursor of the page after `letter`: its time, partition and offset, in the order of the listing. */
export function encodeCursor(letter: LetterPosition): string {
  return `${letter.deadLetteredAtMs ?? ''}.${letter.partition}.${letter.offset}`;
}

export function decodeCursor(text: string): LetterPosition | undefined {
  const match = /^(\d*)\.(\d+)\.(\d+)$/.exec(text);
  if (match === null) return undefined;
  const [, at, partition, offset] = match as unknown as [string, string, string, string];
  const position: LetterPosition = { deadLetteredAtMs: at === '' ? undefined : Number(at), partition: Number(partition), offset: BigInt(offset) };
  return Number.isSafeInteger(position.partition) && (position.deadLetteredAtMs === undefined || Number.isSafeInteger(position.deadLetteredAtMs)) ? position : undefined;
}

const LIST_PARAMETERS = ['destination', 'since', 'until', 'limit', 'cursor'] as const;
const REPLAY_FIELDS = ['destination', 'messageId', 'since', 'until', 'limit', 'dryRun'] as const;

/** `GET /v1/dead-letters`'s query string (without the `?`). */
export function parseListQuery(search: string, destinations: readonly string[], nowMs: number): Parsed<ListQuery> {
  const params = new URLSearchParams(search);
  const values: Record<string, string> = {};
  for (const name of new Set(params.keys())) {
    if (!(LIST_PARAMETERS as readonly string[]).includes(name)) return fail(`unknown parameter ${JSON.stringify(name)}: the parameters are ${LIST_PARAMETERS.join(', ')}`);
    const all = params.getAll(name);
    if (all.length > 1) return fail(`parameter ${name} is given ${all.length} times: give it once`);
    values[name] = all[0]!;
  }
  const common = letterQuery(values, destinations, nowMs);
  if (!common.ok) return common;
  const limit = common.value.limit ?? DEFAULT_PAGE_LETTERS;
  if (limit > MAX_PAGE_LETTERS) return fail(`limit ${limit} is over ${MAX_PAGE_LETTERS} letters a page: page with cursor instead`);
  let after: LetterPosition | undefined;
  if (values.cursor !== undefined) {
    after = decodeCursor(values.cursor);
    if (after === undefined) return fail(`cursor ${JSON.stringify(values.cursor)} is not one this API gave: pass the nextCursor of the page before, unchanged`);
  }
  return { ok: true, value: { ...common.value, limit, after } };
}

/** `POST /v1/replay`'s JSON body. */
export function parseReplayRequest(body: unknown, destinations: readonly string[], nowMs: number): Parsed<ReplayRequest> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return fail('the body must be a JSON object: {"destination": "…", "messageId"?, "since"?, "until"?, "limit"?, "dryRun": true|false}');
  const fields = body as Record<string, unknown>;
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (!(REPLAY_FIELDS as readonly string[]).includes(name)) return fail(`unknown field ${JSON.stringify(name)}: the fields are ${REPLAY_FIELDS.join(', ')}`);
    if (name === 'dryRun') continue;
    if (name === 'limit' && typeof value === 'number') values.limit = String(value);
    else if (typeof value === 'string') values[name] = value;
    else return fail(`field ${name} must be a string${name === 'limit' ? ' or a number' : ''}`);
  }
  if (typeof fields.dryRun !== 'boolean') return fail('field dryRun must be true (count the letters, move none) or false (move them): run a dry run first');
  const { messageId, ...rest } = values;
  if (messageId !== undefined && messageId === '') return fail('field messageId is empty: give the messageId of one dead letter, or leave the field out');
  if (messageId !== undefined && rest.limit !== undefined) return fail('field limit does not go with messageId: a messageId names one letter');
  const common = letterQuery(rest, destinations, nowMs);
  if (!common.ok) return common;
  return { ok: true, value: { ...common.value, dryRun: fields.dryRun, ...(messageId === undefined ? {} : { messageId }) } };
}

/** The time range as the answers give it back: absolute times, so that a confirm after a dry run names the same letters. */
export function rangeFields(range: TimeRange): RangeFields {
  return {
    since: range.sinceMs === undefined ? null : formatTimestamp(range.sinceMs),
    until: range.untilMs === undefined ? null : formatTimestamp(range.untilMs),
  };
}

function letterQuery(values: Record<string, string>, destinations: readonly string[], nowMs: number): Parsed<LetterQuery> {
  const destination = values.destination;
  if (destination === undefined || destination === '') return fail(`destination is required: one of ${destinations.join(', ') || '(the config has none)'}`);
  if (!destinations.includes(destination)) return fail(`no destination has id ${JSON.stringify(destination)} (the config has: ${destinations.join(', ') || 'none'})`);
  // The API has taken an empty since or until for an open side from the start.
  const range = parseTimeBounds({ since: values.since || undefined, until: values.until || undefined }, nowMs, (bound) => bound);
  if (!range.ok) return range;
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = /^\d+$/.test(values.limit) ? Number(values.limit) : Number.NaN;
    if (!Number.isSafeInteger(limit) || limit <= 0) return fail(`limit ${JSON.stringify(values.limit)} is not a positive whole number`);
  }
  return { ok: true, value: { destination, range: range.value, limit } };
}

function fail(message: string): { ok: false; message: string } {
  return { ok: false, message };
}
