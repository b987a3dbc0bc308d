import { describe, expect, it } from 'vitest';
import { API_FIELD_NAMES, CLI_FIELD_NAMES, DEFAULT_TRACE_WINDOW_MS, parseTraceQuery } from '../../../src/trace/trace-query.js';
import type { TraceQueryFields } from '../../../src/trace/trace-query.js';

const NOW = Date.UTC(2026, 4, 1, 12);

describe('parseTraceQuery', () => {
  it.each<[TraceQueryFields, unknown]>([
    [{ userId: 'u-1' }, { who: { kind: 'userId', id: 'u-1' }, messageId: undefined, sinceMs: NOW - DEFAULT_TRACE_WINDOW_MS, untilMs: undefined }],
    [{ anonymousId: 'a-7', messageId: 'm-1', since: '2h' }, { who: { kind: 'anonymousId', id: 'a-7' }, messageId: 'm-1', sinceMs: NOW - 7_200_000, untilMs: undefined }],
    [
      { userId: 'u-1', since: '2026-05-01T07:00:00Z', until: '2026-05-01T09:00:00+01:00' },
      { who: { kind: 'userId', id: 'u-1' }, messageId: undefined, sinceMs: Date.UTC(2026, 4, 1, 7), untilMs: Date.UTC(2026, 4, 1, 8) },
    ],
  ])('%j', (fields, expected) => {
    expect(parseTraceQuery(fields, CLI_FIELD_NAMES, NOW)).toEqual({ ok: true, query: expected });
  });

  it.each<[TraceQueryFields, string, string]>([
    [{}, 'give either --user ID or --anonymous-id ID (one of them)', 'give either userId ID or anonymousId ID (one of them)'],
    [{ userId: 'u', anonymousId: 'a' }, 'give either --user ID or --anonymous-id ID', 'give either userId ID or anonymousId ID'],
    [{ userId: '' }, '--user is empty', 'userId is empty'],
    [{ anonymousId: '' }, '--anonymous-id is empty', 'anonymousId is empty'],
    [{ userId: 'u', messageId: '' }, '--message is empty', 'messageId is empty'],
    [{ userId: 'u', since: 'yesterday' }, '--since "yesterday" is not a time: give an ISO 8601 time', 'since "yesterday" is not a time'],
    [{ userId: 'u', until: '2026-02-30' }, '--until "2026-02-30" is not a time', 'until "2026-02-30" is not a time'],
    // Before 1970: Kafka would read a negative time as "the end" of a partition.
    [{ userId: 'u', since: '1969-12-31T23:59:59.999Z' }, '--since "1969-12-31T23:59:59.999Z" is not a time', 'since "1969-12-31T23:59:59.999Z" is not a time: give an ISO 8601 time'],
    [{ userId: 'u', since: '30000d' }, '--since "30000d" is not a time', 'not before 1970-01-01'],
    [{ userId: 'u', since: '1h', until: '2h' }, '--since (2026-05-01T11:00:00.000Z) is not before --until (2026-05-01T10:00:00.000Z)', 'since (2026-05-01T11:00:00.000Z) is not before until'],
  ])('%j is refused, naming the option or the parameter', (fields, cliMessage, apiMessage) => {
    const cli = parseTraceQuery(fields, CLI_FIELD_NAMES, NOW);
    const api = parseTraceQuery(fields, API_FIELD_NAMES, NOW);
    expect(cli.ok ? 'ok' : cli.message).toContain(cliMessage);
    expect(api.ok ? 'ok' : api.message).toContain(apiMessage);
  });
});
